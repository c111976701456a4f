//! A made-up process image laid out by each version's table (runtime, interpreter, thread
//! states, frames, code objects, strings, line tables), read back by the reader; then the
//! lies a process can tell (cycles, absurd lengths, wrong types, a bad debug cookie), each
//! of which must give a clean error. The same images are the fuzz target's seeds
//! (testdata/fuzz/python_frames; `STACKSYM_UPDATE_SEEDS=1 cargo test --lib python::`
//! writes them again).

use super::offsets::{self, Layout};
use super::*;

/// Where the made-up image is mapped.
pub(crate) const IMAGE_BASE: u64 = 0x10000;

/// A process's memory made up here: `bytes` at [`IMAGE_BASE`].
pub(crate) struct Image {
    pub(crate) bytes: Vec<u8>,
}

impl Memory for Image {
    fn read_u64(&self, addr: AbsAddr) -> Option<u64> {
        let mut word = [0u8; 8];
        self.read_bytes(addr, &mut word)
            .then(|| u64::from_le_bytes(word))
    }

    fn read_bytes(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        let Some(start) = addr
            .0
            .checked_sub(IMAGE_BASE)
            .and_then(|s| usize::try_from(s).ok())
        else {
            return false;
        };
        match start
            .checked_add(buf.len())
            .and_then(|end| self.bytes.get(start..end))
        {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }
}

impl Image {
    fn alloc(&mut self, size: u64) -> u64 {
        let at = self.bytes.len().next_multiple_of(16);
        self.bytes.resize(at + size as usize, 0);
        IMAGE_BASE + at as u64
    }

    fn put(&mut self, addr: u64, bytes: &[u8]) {
        let at = (addr - IMAGE_BASE) as usize;
        self.bytes[at..at + bytes.len()].copy_from_slice(bytes);
    }

    fn put_u64(&mut self, addr: u64, value: u64) {
        self.put(addr, &value.to_le_bytes());
    }

    fn string(&mut self, l: &Layout, text: &str) -> u64 {
        let at = self.alloc(l.unicode_ascii_size + text.len() as u64 + 1);
        self.put_u64(at + l.unicode_length, text.len() as u64);
        // kind 1, compact, ascii.
        self.put(
            at + l.unicode_state,
            &((1u32 << 2) | (1 << 5) | (1 << 6)).to_le_bytes(),
        );
        self.put(at + l.unicode_ascii_size, text.as_bytes());
        at
    }

    fn bytes_object(&mut self, l: &Layout, data: &[u8]) -> u64 {
        let at = self.alloc(l.bytes_sval + data.len() as u64 + 1);
        self.put_u64(at + l.var_size, data.len() as u64);
        self.put(at + l.bytes_sval, data);
        at
    }
}

/// One made-up function: its name, and the line its frame is at (`first_line` + 1: each
/// table below says "line + 1 from the first instruction").
struct Function {
    name: &'static str,
    first_line: i32,
}

const FUNCTIONS: [Function; 3] = [
    Function {
        name: "inner",
        first_line: 10,
    },
    Function {
        name: "Outer.method",
        first_line: 20,
    },
    Function {
        name: "<module>",
        first_line: 1,
    },
];

/// An image of CPython 3.`minor` with one interpreter, two threads (tids 100 and 101),
/// the first running `FUNCTIONS` (innermost first), the second none; and its runtime.
pub(crate) fn made_up_image(minor: u32) -> (Image, PythonRuntime) {
    let l = *offsets::layout(minor).expect("a supported version");
    let mut image = Image { bytes: Vec::new() };
    let runtime = image.alloc(l.runtime_interpreters_head.max(1024) + 8);
    if let Some(debug) = l.debug_offsets {
        image.put(runtime, b"xdebugpy");
        image.put_u64(
            runtime + debug.version,
            0x030d_00f0 | u64::from(minor) << 16,
        );
        for (at, value) in [
            (debug.runtime_interpreters_head, l.runtime_interpreters_head),
            (debug.interp_next, l.interp_next),
            (debug.interp_threads_head, l.interp_threads_head),
            (debug.tstate_next, l.tstate_next),
            (
                debug.tstate_current_frame,
                l.tstate_current_frame.unwrap_or(0),
            ),
            (debug.tstate_thread_id, l.tstate_thread_id),
            (
                debug.tstate_native_thread_id,
                l.tstate_native_thread_id.unwrap_or(0),
            ),
            (debug.iframe_previous, l.iframe_previous.unwrap_or(0)),
            (debug.iframe_code, l.iframe_code.unwrap_or(0)),
            (debug.iframe_instr, l.iframe_instr.unwrap_or(0)),
            (debug.iframe_owner, l.iframe_owner.unwrap_or(0)),
            (debug.code_filename, l.code_filename),
            (debug.code_name, l.code_name),
            (debug.code_qualname, l.code_qualname.unwrap_or(0)),
            (debug.code_linetable, l.code_linetable),
            (debug.code_firstlineno, l.code_firstlineno),
            (debug.code_code_adaptive, l.code_code_adaptive.unwrap_or(0)),
        ] {
            image.put_u64(runtime + at, value);
        }
    }
    let interp = image.alloc(l.interp_threads_head.max(l.interp_next) + 8);
    image.put_u64(runtime + l.runtime_interpreters_head, interp);
    let tstate_size = 512;
    let threads = [image.alloc(tstate_size), image.alloc(tstate_size)];
    image.put_u64(interp + l.interp_threads_head, threads[0]);
    image.put_u64(threads[0] + l.tstate_next, threads[1]);
    for (i, &tstate) in threads.iter().enumerate() {
        // thread_id: a made-up pthread_t whose tid (glibc's struct pthread) is 100 + i.
        let pthread = image.alloc(0x400);
        image.put(
            pthread + super::reader::PTHREAD_TID_OFFSET,
            &(100 + i as u32).to_le_bytes(),
        );
        image.put_u64(tstate + l.tstate_thread_id, pthread);
        if let Some(native) = l.tstate_native_thread_id {
            image.put_u64(tstate + native, 100 + i as u64);
        }
    }
    let file = image.string(&l, "/app/made_up.py");
    // Each code object's table: its first instructions on `first_line + 1`.
    let table: Vec<u8> = match minor {
        6..=9 => vec![0, 1],
        10 => vec![8, 1],
        // One entry, code 13 (no columns), 4 code units, line delta +1.
        _ => vec![0x80 | (13 << 3) | 3, 2],
    };
    let mut previous = 0u64;
    for function in FUNCTIONS.iter().rev() {
        let code = image.alloc(l.code_code_adaptive.unwrap_or(256) + 64);
        let name = image.string(&l, function.name);
        image.put_u64(code + l.code_name, name);
        if let Some(qualname) = l.code_qualname {
            image.put_u64(code + qualname, name);
        }
        image.put_u64(code + l.code_filename, file);
        image.put(
            code + l.code_firstlineno,
            &function.first_line.to_le_bytes(),
        );
        let table = image.bytes_object(&l, &table);
        image.put_u64(code + l.code_linetable, table);
        let frame = image.alloc(128);
        if let (Some(back), Some(code_at), Some(lasti)) =
            (l.frame_back, l.frame_code, l.frame_lasti)
        {
            image.put_u64(frame + back, previous);
            image.put_u64(frame + code_at, code);
            image.put(frame + lasti, &2i32.to_le_bytes());
        } else {
            let instr = code + l.code_code_adaptive.unwrap_or(0) + 2;
            image.put_u64(frame + l.iframe_previous.unwrap_or(0), previous);
            image.put_u64(frame + l.iframe_code.unwrap_or(0), code);
            image.put_u64(frame + l.iframe_instr.unwrap_or(0), instr);
        }
        previous = frame;
    }
    let top = previous;
    if let Some(frame) = l.tstate_frame {
        image.put_u64(threads[0] + frame, top);
    } else if let (Some(cframe_at), Some(current)) = (l.tstate_cframe, l.cframe_current_frame) {
        let cframe = image.alloc(32);
        image.put_u64(threads[0] + cframe_at, cframe);
        image.put_u64(cframe + current, top);
        let empty = image.alloc(32);
        image.put_u64(threads[1] + cframe_at, empty);
    } else if let Some(current) = l.tstate_current_frame {
        image.put_u64(threads[0] + current, top);
    }
    let runtime = PythonRuntime {
        version: PythonVersion {
            major: 3,
            minor: minor as u8,
            micro: None,
        },
        runtime: AbsAddr(runtime),
        file: PathBuf::from("made-up"),
        types: PythonTypes::default(),
    };
    (image, runtime)
}

fn frames_of(stacks: &PythonStacks) -> Vec<(String, String, Option<u32>)> {
    stacks.threads[0]
        .frames
        .as_ref()
        .expect("frames")
        .iter()
        .map(|f| (f.function.clone(), f.file.clone(), f.line))
        .collect()
}

#[test]
fn made_up_images_read_back_in_every_version() {
    for minor in offsets::SUPPORTED.0..=offsets::SUPPORTED.1 {
        let (image, runtime) = made_up_image(minor);
        let stacks = runtime
            .read_stacks(&image, &[100, 101])
            .unwrap_or_else(|e| panic!("3.{minor}: {e}"));
        assert_eq!(stacks.debug_offsets, minor >= 13);
        let expected: Vec<_> = FUNCTIONS
            .iter()
            .map(|f| {
                let line = Some(f.first_line as u32 + 1);
                (f.name.to_string(), "/app/made_up.py".to_string(), line)
            })
            .collect();
        assert_eq!(frames_of(&stacks), expected, "3.{minor}");
        let tids: Vec<_> = stacks.threads.iter().map(|t| t.os_tid).collect();
        assert_eq!(tids, [Some(100), Some(101)], "3.{minor}");
        assert!(stacks.threads[1].frames.as_ref().is_ok_and(Vec::is_empty));
        // The tid read before 3.11 is believed only when it is one of the process's.
        let stacks = runtime.read_stacks(&image, &[7]).expect("read");
        assert_eq!(stacks.threads[0].os_tid, None, "3.{minor}");
    }
}

/// The address of the first thread state of a made-up image.
fn first_thread_state(image: &Image, runtime: &PythonRuntime, l: &Layout) -> u64 {
    let interp = image
        .read_u64(AbsAddr(runtime.runtime.0 + l.runtime_interpreters_head))
        .expect("head");
    image
        .read_u64(AbsAddr(interp + l.interp_threads_head))
        .expect("tstate")
}

/// The address of the innermost frame of thread 0 of a made-up image.
fn top_frame(image: &Image, runtime: &PythonRuntime, l: &Layout) -> u64 {
    let tstate = first_thread_state(image, runtime, l);
    match (l.tstate_frame, l.tstate_cframe, l.tstate_current_frame) {
        (Some(frame), _, _) => image.read_u64(AbsAddr(tstate + frame)).expect("frame"),
        (_, Some(cframe), _) => {
            let cframe = image.read_u64(AbsAddr(tstate + cframe)).expect("cframe");
            image
                .read_u64(AbsAddr(cframe + l.cframe_current_frame.expect("3.11/3.12")))
                .expect("frame")
        }
        (_, _, Some(current)) => image.read_u64(AbsAddr(tstate + current)).expect("frame"),
        _ => unreachable!(),
    }
}

#[test]
fn a_frame_cycle_is_that_threads_error() {
    for minor in [9, 12, 13] {
        let (mut image, runtime) = made_up_image(minor);
        let l = *offsets::layout(minor).expect("table");
        let top = top_frame(&image, &runtime, &l);
        let back = l.frame_back.or(l.iframe_previous).expect("a link");
        image.put_u64(top + back, top);
        let stacks = runtime.read_stacks(&image, &[]).expect("the runtime reads");
        let error = stacks.threads[0].frames.as_ref().expect_err("a cycle");
        assert!(error.to_string().contains("loops"), "3.{minor}: {error}");
        assert!(
            stacks.threads[1].frames.is_ok(),
            "the other thread is answered"
        );
    }
}

#[test]
fn absurd_strings_and_wrong_types_are_errors() {
    let minor = 12;
    let (mut image, runtime) = made_up_image(minor);
    let l = *offsets::layout(minor).expect("table");
    let top = top_frame(&image, &runtime, &l);
    let code = image
        .read_u64(AbsAddr(top + l.iframe_code.expect("3.12")))
        .expect("code");
    let name = image.read_u64(AbsAddr(code + l.code_name)).expect("name");
    image.put_u64(name + l.unicode_length, u64::MAX / 2);
    let stacks = runtime.read_stacks(&image, &[]).expect("the runtime reads");
    let error = stacks.threads[0].frames.as_ref().expect_err("a long name");
    assert!(error.to_string().contains("length"), "{error}");

    let (image, mut runtime) = made_up_image(minor);
    runtime.types.code = Some(AbsAddr(0xdead_0000));
    let stacks = runtime.read_stacks(&image, &[]).expect("the runtime reads");
    let error = stacks.threads[0]
        .frames
        .as_ref()
        .expect_err("not a code object");
    assert!(error.to_string().contains("not 0xdead0000"), "{error}");
    assert!(matches!(error, Error::Python { .. }));
}

#[test]
fn a_thread_list_cycle_and_a_bad_cookie_fail_the_read() {
    let minor = 10;
    let (mut image, runtime) = made_up_image(minor);
    let l = *offsets::layout(minor).expect("table");
    let first = first_thread_state(&image, &runtime, &l);
    let second = image
        .read_u64(AbsAddr(first + l.tstate_next))
        .expect("next");
    image.put_u64(second + l.tstate_next, first);
    let error = runtime.read_stacks(&image, &[]).expect_err("a cycle");
    assert!(error.to_string().contains("loops"), "{error}");

    let (mut image, runtime) = made_up_image(13);
    image.put(runtime.runtime.0, b"ydebugpy");
    let error = runtime.read_stacks(&image, &[]).expect_err("a bad cookie");
    assert!(error.to_string().contains("xdebugpy"), "{error}");
}

/// The fuzz target's seeds: each made-up image as the target reads its input (a byte
/// choosing the version, the runtime's offset in the image, then the image).
#[test]
fn fuzz_seeds_are_the_made_up_images() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz/python_frames");
    for minor in offsets::SUPPORTED.0..=offsets::SUPPORTED.1 {
        let (image, runtime) = made_up_image(minor);
        let mut seed = vec![(minor - offsets::SUPPORTED.0) as u8];
        seed.extend_from_slice(&((runtime.runtime.0 - IMAGE_BASE) as u32).to_le_bytes());
        seed.extend_from_slice(&image.bytes);
        let path = dir.join(format!("made-up-3.{minor}.bin"));
        if std::env::var_os("STACKSYM_UPDATE_SEEDS").is_some() {
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(&path, &seed).expect("write seed");
        }
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == seed,
            "{}: not the made-up image of 3.{minor}; STACKSYM_UPDATE_SEEDS=1 writes it",
            path.display()
        );
    }
}
