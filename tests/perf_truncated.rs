//! `stacksym perf` on recordings cut short: a copy stopped half way or a disk that filled
//! (the header's data section runs past the file's end, or the feature sections after it
//! do), and a `perf record` that never ended (the header's data size still 0). What the
//! file holds is printed, then stderr says where and why it ends; the tool exits 0, as perf
//! does after its warning for a data size of 0.
//!
//! The committed recording `testdata/recordings/perf-nofp.data.zst` (which `stacksym perf`
//! prints as `perf script` does, byte for byte: tests/perf_script_layout.rs, and here too
//! when perf is installed) is cut at several lengths: inside the first record, at a
//! quarter, half and three quarters of its data (inside records), at a record's end, inside
//! its feature sections; and with its data size set to 0. Each cut must print the first
//! samples of the whole recording's output, byte for byte (all but the last few, those of
//! the round the cut falls in: sorted by time among themselves, where in the whole recording
//! the next round's samples may fall between them), and no sample the recording lacks.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::Command;

use support::{find_tool, skip_or_fail, tool, writeln_stderr};

const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/recordings/perf-nofp.data.zst"
);
const RUN_DIR: &str = "/tmp/stacksym-unwind-bench";
const RUN_FILES: [&str; 2] = ["unwind-demo-nofp", "libunwind-demo-nofp.so"];

/// The committed recording, decompressed, with the recorded program put back where it ran
/// (as tests/perf_script_layout.rs does).
fn committed_recording() -> Vec<u8> {
    let mut bytes = Vec::new();
    let file = std::fs::File::open(RECORDING).expect("the committed recording");
    ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(file))
        .expect("a zstd stream")
        .read_to_end(&mut bytes)
        .expect("decompressed");
    std::fs::create_dir_all(RUN_DIR).expect("the run dir");
    for name in RUN_FILES {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/unwind")
            .join(name);
        let to = Path::new(RUN_DIR).join(name);
        let bytes = std::fs::read(&from).expect("testdata/unwind");
        if std::fs::read(&to).ok().as_deref() != Some(&bytes[..]) {
            // A new file renamed over the old one: a running copy keeps its inode.
            let tmp = to.with_extension(format!("new{}", std::process::id()));
            std::fs::write(&tmp, &bytes).expect("written");
            std::fs::rename(&tmp, &to).expect("renamed");
        }
    }
    bytes
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// `stacksym perf -i data`: (success, stdout, stderr).
fn ours(data: &Path) -> (bool, String, String) {
    let out = tool("perf").arg("-i").arg(data).output().expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The end of the record that holds or ends at `at` (the records walked from the data
/// section's start).
fn record_end_after(file: &[u8], at: usize) -> usize {
    let mut offset = le_u64(file, 40) as usize;
    while offset < at {
        let size = u16::from_le_bytes([file[offset + 6], file[offset + 7]]);
        offset += usize::from(size);
    }
    offset
}

#[test]
fn a_recording_cut_short_prints_the_samples_it_holds() {
    let test = "a_recording_cut_short_prints_the_samples_it_holds";
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = committed_recording();
    let whole = dir.path().join("whole.data");
    std::fs::write(&whole, &file).expect("written");
    let (ok, expected, _) = ours(&whole);
    assert!(ok, "the whole recording is read");
    match find_tool("perf") {
        Some(perf) => {
            let out = Command::new(perf)
                .args(["script", "-i"])
                .arg(&whole)
                .output()
                .expect("perf runs");
            assert!(out.status.success(), "perf script failed");
            assert!(
                out.stdout == expected.as_bytes(),
                "the whole recording is not printed as perf script prints it"
            );
        }
        None => skip_or_fail(test, "perf not found: the whole recording's output is not checked against perf script (tests/perf_script_layout.rs does)"),
    }
    let samples: Vec<&str> = expected.split_inclusive("\n\n").collect();
    let (data_offset, data_size) = (le_u64(&file, 40) as usize, le_u64(&file, 48) as usize);
    let data_end = data_offset + data_size;
    let boundary = record_end_after(&file, data_offset + data_size * 3 / 5);
    let mut zero_size = file[..data_offset + data_size * 3 / 4].to_vec();
    zero_size[48..56].fill(0);
    let cases: Vec<(String, Vec<u8>, &str, usize)> = vec![
        (
            "inside the first record".into(),
            file[..data_offset + 30].to_vec(),
            "inside a record at 0x108",
            0,
        ),
        (
            "at a quarter of the data".into(),
            file[..data_offset + data_size / 4].to_vec(),
            "inside a record",
            250,
        ),
        (
            "at half of the data".into(),
            file[..data_offset + data_size / 2].to_vec(),
            "inside a record",
            500,
        ),
        (
            "at three quarters of the data".into(),
            file[..data_offset + data_size * 3 / 4].to_vec(),
            "inside a record",
            750,
        ),
        (
            format!("at a record's end ({boundary:#x})"),
            file[..boundary].to_vec(),
            "the records up to the file's end are read",
            600,
        ),
        (
            "inside the feature sections".into(),
            file[..data_end + 100].to_vec(),
            "the feature sections after the data",
            samples.len(),
        ),
        (
            "data size 0 (perf record never ended)".into(),
            zero_size,
            "the header's data size is 0",
            750,
        ),
    ];
    for (what, bytes, says, at_least) in cases {
        let cut = dir.path().join("cut.data");
        std::fs::write(&cut, &bytes).expect("written");
        let (ok, printed, stderr) = ours(&cut);
        let n = printed.split_inclusive("\n\n").count();
        writeln_stderr(format_args!(
            "{test}: cut {what} ({} of {} bytes): {n} of {} samples; stderr:\n{}",
            bytes.len(),
            file.len(),
            samples.len(),
            stderr.trim_end()
        ));
        assert!(ok, "{what}: failed: {stderr}");
        // The samples of the rounds the file holds whole come first, as in the whole
        // recording; then those of the round the cut falls in, sorted by time among
        // themselves (in the whole recording, the next round's may fall between them).
        let ours: Vec<&str> = printed.split_inclusive("\n\n").collect();
        let same = ours
            .iter()
            .zip(&samples)
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            ours[same..].iter().all(|sample| samples.contains(sample)),
            "{what}: a sample not in the whole recording's output"
        );
        assert!(
            ours.len() - same <= 20,
            "{what}: only the first {same} of {} samples are the whole recording's first",
            ours.len()
        );
        assert!(n >= at_least, "{what}: {n} samples, {at_least} expected");
        assert!(stderr.contains("stacksym perf: note: "), "{what}: {stderr}");
        assert!(stderr.contains(&*cut.to_string_lossy()), "{what}: {stderr}");
        assert!(stderr.contains(says), "{what}: {stderr}");
    }
    // The header alone: nothing to read, an error naming the missing data.
    let cut = dir.path().join("header.data");
    std::fs::write(&cut, &file[..104]).expect("written");
    let (ok, printed, stderr) = ours(&cut);
    assert!(!ok && printed.is_empty(), "{stderr}");
    assert!(stderr.contains("truncated perf.data"), "{stderr}");
}
