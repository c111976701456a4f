//! Synthetic jitdump files of every record kind, in both byte orders, and hostile ones.

use super::*;

/// Writes a jitdump in either byte order.
struct Writer {
    big: bool,
    bytes: Vec<u8>,
}

impl Writer {
    fn new(big: bool) -> Writer {
        let mut w = Writer {
            big,
            bytes: Vec::new(),
        };
        for word in [MAGIC, 1, 40, 62, 0, 4242] {
            w.u32(word);
        }
        w.u64(1000); // timestamp
        w.u64(0); // flags
        w
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
    }
    fn u64(&mut self, v: u64) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
    }
    /// A record of `id` at `time` whose payload `body` writes; its size filled in after.
    fn record(&mut self, id: u32, time: u64, body: impl FnOnce(&mut Writer)) -> usize {
        let at = self.bytes.len();
        self.u32(id);
        self.u32(0);
        self.u64(time);
        body(self);
        while !self.bytes.len().is_multiple_of(8) {
            self.bytes.push(0); // V8 pads records to 8 bytes
        }
        let size = (self.bytes.len() - at) as u32;
        let size = if self.big {
            size.to_be_bytes()
        } else {
            size.to_le_bytes()
        };
        self.bytes[at + 4..at + 8].copy_from_slice(&size);
        at
    }
    fn load(&mut self, time: u64, addr: u64, size: u64, index: u64, name: &str) -> usize {
        self.record(JIT_CODE_LOAD, time, |w| {
            w.u32(4242);
            w.u32(4243);
            w.u64(addr);
            w.u64(addr);
            w.u64(size);
            w.u64(index);
            w.bytes.extend(name.as_bytes());
            w.bytes.push(0);
            w.bytes.extend(std::iter::repeat_n(0xcc, size as usize));
        })
    }
    fn moved(&mut self, time: u64, old: u64, new: u64, size: u64, index: u64) -> usize {
        self.record(JIT_CODE_MOVE, time, |w| {
            w.u32(4242);
            w.u32(4243);
            w.u64(new);
            w.u64(old);
            w.u64(new);
            w.u64(size);
            w.u64(index);
        })
    }
    fn debug(&mut self, time: u64, addr: u64, entries: &[(u64, u32, u32, &str)]) -> usize {
        self.record(JIT_CODE_DEBUG_INFO, time, |w| {
            w.u64(addr);
            w.u64(entries.len() as u64);
            for &(a, line, discriminator, file) in entries {
                w.u64(a);
                w.u32(line);
                w.u32(discriminator);
                w.bytes.extend(file.as_bytes());
                w.bytes.push(0);
            }
        })
    }
    fn unwinding(&mut self, time: u64, data: &[u8], hdr: u64) -> usize {
        self.record(JIT_CODE_UNWINDING_INFO, time, |w| {
            w.u64(data.len() as u64);
            w.u64(hdr);
            w.u64(data.len() as u64);
            w.bytes.extend(data);
        })
    }
}

fn sample(big: bool) -> Vec<u8> {
    let mut w = Writer::new(big);
    w.debug(
        10,
        0x1000,
        &[(0x1010, 3, 5, "/app/a.js"), (0x1000, 1, 13, "/app/a.js")],
    );
    w.unwinding(10, &[1, 2, 3, 4, 5, 6, 7, 8], 4);
    w.load(10, 0x1000, 0x40, 1, "JS:*fib /app/a.js:1:13");
    w.load(20, 0x2000, 0x20, 2, "Builtin:Call");
    // The code at 0x1000 is collected; 0x1000..0x1010 reused from time 30.
    w.load(30, 0x1000, 0x10, 3, "JS:~g /app/a.js:9:1");
    // Code 2 moves to 0x3000 at time 40.
    w.moved(40, 0x2000, 0x3000, 0x20, 2);
    w.record(JIT_CODE_CLOSE, 50, |_| {});
    // After the close: ignored.
    w.load(60, 0x9000, 0x10, 9, "after close");
    w.bytes
}

fn name_at(dump: &JitDump, addr: u64, time: Option<u64>) -> Option<&str> {
    match time {
        Some(t) => dump.find_at(AbsAddr(addr), t).map(|c| c.name),
        None => dump.find(AbsAddr(addr)).map(|c| c.name),
    }
}

#[test]
fn loads_moves_lines_and_unwinding_in_both_byte_orders() {
    for big in [false, true] {
        let dump = parse_jitdump(Path::new("jit-4242.dump"), &sample(big)).unwrap();
        let header = dump.header();
        assert_eq!(
            (
                header.version,
                header.elf_machine,
                header.pid,
                header.big_endian
            ),
            (1, 62, 4242, big)
        );
        assert_eq!((header.timestamp, header.flags), (1000, 0));
        assert_eq!(
            dump.len(),
            4,
            "three loads and a move; nothing after the close"
        );
        // Now: the latest load wins where they overlap.
        assert_eq!(name_at(&dump, 0x1008, None), Some("JS:~g /app/a.js:9:1"));
        assert_eq!(name_at(&dump, 0x1020, None), Some("JS:*fib /app/a.js:1:13"));
        assert_eq!(name_at(&dump, 0x3004, None), Some("Builtin:Call"));
        assert_eq!(name_at(&dump, 0x9000, None), None);
        // At a time: the load of then.
        assert_eq!(name_at(&dump, 0x1008, Some(9)), None);
        assert_eq!(
            name_at(&dump, 0x1008, Some(10)),
            Some("JS:*fib /app/a.js:1:13")
        );
        assert_eq!(
            name_at(&dump, 0x1008, Some(29)),
            Some("JS:*fib /app/a.js:1:13")
        );
        assert_eq!(
            name_at(&dump, 0x1008, Some(30)),
            Some("JS:~g /app/a.js:9:1")
        );
        assert_eq!(name_at(&dump, 0x3004, Some(39)), None);
        assert_eq!(name_at(&dump, 0x3004, Some(40)), Some("Builtin:Call"));
        // Lines: the last entry at or before the address (sorted though written unsorted).
        let fib = dump.find_at(AbsAddr(0x1014), 20).unwrap();
        assert_eq!(
            (fib.start, fib.size, fib.offset),
            (AbsAddr(0x1000), 0x40, 0x14)
        );
        assert_eq!((fib.code_index, fib.timestamp), (1, 10));
        let line = fib.line().unwrap();
        assert_eq!(
            (line.addr, line.file, line.line, line.discriminator),
            (AbsAddr(0x1010), "/app/a.js", 3, 5)
        );
        assert_eq!(fib.lines().count(), 2);
        let unwinding = fib.unwinding_info().unwrap();
        assert_eq!(unwinding.bytes, &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!((unwinding.eh_frame_hdr_size, unwinding.mapped_size), (4, 8));
        // The debug and unwinding records belong to the next load only.
        let builtin = dump.find(AbsAddr(0x2000)).unwrap();
        assert!(builtin.line().is_none() && builtin.unwinding_info().is_none());
        assert_eq!(dump.iter().count(), 4);
    }
}

#[test]
fn hostile_files_are_errors_naming_the_file_and_offset() {
    let path = Path::new("/tmp/jit-1.dump");
    let err = |bytes: &[u8]| parse_jitdump(path, bytes).unwrap_err();
    let offset = |e: Error| match e {
        Error::JitDump { offset, path, .. } => {
            assert_eq!(path, Path::new("/tmp/jit-1.dump"));
            offset
        }
        other => panic!("not a JitDump error: {other}"),
    };
    // Wrong magic, short header, bad version, a header size beyond the file.
    assert!(
        err(b"ELF\x7f and more bytes than a header holds, certainly")
            .to_string()
            .contains("wrong magic")
    );
    assert_eq!(offset(err(&sample(false)[..20])), 0);
    let mut bad = sample(false);
    bad[4] = 7;
    assert!(err(&bad).to_string().contains("version 7"));
    let mut bad = sample(false);
    bad[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(offset(err(&bad)), 0);
    // A record cut short: an error, except for a file still being written.
    let whole = sample(false);
    let mut w = Writer::new(false);
    let second = {
        w.load(10, 0x1000, 0x10, 1, "a");
        w.load(20, 0x2000, 0x10, 2, "b")
    };
    let cut = &w.bytes[..w.bytes.len() - 3];
    assert_eq!(offset(err(cut)), second as u64);
    let growing = parse_growing_jitdump(path, cut).unwrap();
    assert_eq!(
        (growing.len(), growing.cut_short_at()),
        (1, Some(second as u64))
    );
    // A record smaller than its header; code larger than its record.
    let mut bad = w.bytes.clone();
    bad[second + 4..second + 8].copy_from_slice(&8u32.to_le_bytes());
    assert_eq!(offset(err(&bad)), second as u64);
    let mut bad = w.bytes.clone();
    bad[second + 16 + 24..second + 16 + 32].copy_from_slice(&u64::MAX.to_le_bytes());
    let e = err(&bad);
    assert!(e.to_string().contains("code bytes"), "{e}");
    assert_eq!(offset(e), second as u64);
    // Records out of time order.
    let mut w = Writer::new(false);
    w.load(20, 0x1000, 0x10, 1, "a");
    let late = w.load(10, 0x2000, 0x10, 2, "b");
    let e = err(&w.bytes);
    assert!(e.to_string().contains("before the previous"), "{e}");
    assert_eq!(offset(e), late as u64);
    // Debug info claiming 2^60 entries (nothing is reserved for them), an unwinding size
    // beyond its record.
    let mut w = Writer::new(false);
    let debug = w.record(JIT_CODE_DEBUG_INFO, 1, |w| {
        w.u64(0x1000);
        w.u64(1 << 60);
    });
    assert_eq!(offset(err(&w.bytes)), debug as u64);
    let mut w = Writer::new(false);
    let unwinding = w.record(JIT_CODE_UNWINDING_INFO, 1, |w| {
        w.u64(1 << 40);
        w.u64(0);
        w.u64(0);
    });
    assert_eq!(offset(err(&w.bytes)), unwinding as u64);
    // Every prefix and a few corruptions of a valid file: errors or dumps, no panic.
    for len in 0..whole.len() {
        let _ = parse_jitdump(path, &whole[..len]);
        let _ = parse_growing_jitdump(path, &whole[..len]);
    }
    for at in (0..whole.len()).step_by(3) {
        let mut bad = whole.clone();
        bad[at] ^= 0xa5;
        if let Ok(dump) = parse_jitdump(path, &bad) {
            for addr in [0, 0x1000, 0x1008, 0x3000, u64::MAX] {
                let _ = dump
                    .find(AbsAddr(addr))
                    .map(|c| (c.line(), c.unwinding_info()));
                let _ = dump.find_at(AbsAddr(addr), 25);
            }
        }
    }
}

#[test]
fn jitdump_names() {
    for (name, is) in [
        ("/tmp/jit-123.dump", true),
        ("/work/app/jit-1.dump", true),
        ("/tmp/jit-.dump", false),
        ("/tmp/jit-12a.dump", false),
        ("/tmp/perf-123.map", false),
        ("/tmp/jit-123.dump.old", false),
    ] {
        assert_eq!(is_jitdump_name(Path::new(name)), is, "{name}");
    }
}

/// Records node 20 wrote (testdata/fuzz/jitdump/node-fib.dump: the header and the seven
/// records up to V8's optimized `fib`, cut from a `--perf-prof` run of testdata/jit/app.js),
/// against what a reading of them by hand (python's struct) gives. V8 writes the debug
/// entries of `fib` with a file name of garbage bytes (its buffer was not the script's name),
/// some of them NUL: perf reads them as this reader does, up to the first NUL.
#[test]
fn node_records() {
    let path = format!(
        "{}/testdata/fuzz/jitdump/node-fib.dump",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap();
    let dump = parse_jitdump(Path::new(&path), &bytes).unwrap();
    let loads: Vec<_> = dump
        .iter()
        .map(|c| (c.start.0, c.size, c.code_index, c.name))
        .collect();
    assert_eq!(
        loads,
        [
            (
                0x7f2bbc0241c0,
                560,
                2325,
                "JS:^wrappedFn node:internal/errors:536:21"
            ),
            (
                0x7f2bbc024400,
                268,
                2326,
                "JS:^ node:internal/validators:161:40"
            ),
            (
                0x7f2bbc024540,
                384,
                2327,
                "JS:*fib /tmp/jitwork/app.js:1:13"
            ),
        ]
    );
    let validators = dump.find(AbsAddr(0x7f2bbc024450)).unwrap();
    let line = validators.line().unwrap();
    assert_eq!(
        (line.addr.0, line.file, line.line, line.discriminator),
        (0x7f2bbc024446, "node:internal/validators", 163, 5)
    );
    assert_eq!(validators.lines().count(), 5);
    let fib = dump.find(AbsAddr(0x7f2bbc024590)).unwrap();
    let line = fib.line().unwrap();
    assert_eq!(
        (line.addr.0, line.line, line.discriminator),
        (0x7f2bbc024580, 1, 13)
    );
    // Every load has V8's unwinding record; fib's holds its CFI (a "zLR" CIE).
    let unwinding = fib.unwinding_info().unwrap();
    // As perf inject copied it into jitted-fib.so: .eh_frame (0x4c bytes), then the 20-byte
    // .eh_frame_hdr.
    assert_eq!(
        (unwinding.bytes.len(), unwinding.eh_frame_hdr_size),
        (0x4c + 20, 20)
    );
    assert_eq!(&unwinding.bytes[9..12], b"zLR");
}

/// A file longer than the limit is read up to it (a last record cut short there ends it)
/// and says how many bytes were left unread.
#[test]
fn a_file_past_the_limit_says_what_it_left_unread() {
    let bytes = sample(false);
    let dir = std::env::temp_dir().join(format!("stacksym-jitdump-cap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("jit-42.dump");
    std::fs::write(&path, &bytes).expect("write");
    let open = || File::open(&path).expect("open");
    let whole = read_jit_dump(open(), &path).expect("read whole");
    assert_eq!(whole.unread_bytes(), 0);
    // Cut inside the third load: the first two are read, the rest is counted.
    let cap = 300.min(bytes.len() as u64 - 1);
    let capped = read_capped(open(), &path, cap).expect("read capped");
    assert_eq!(capped.unread_bytes(), bytes.len() as u64 - cap);
    assert!(
        capped.len() < whole.len(),
        "{} < {}",
        capped.len(),
        whole.len()
    );
    std::fs::remove_dir_all(&dir).ok();
}
