//! `stacksym perf` on compressed recordings (`perf record -z`: `PERF_RECORD_COMPRESSED`
//! records holding one zstd stream) and on records it does not read.
//!
//! - `perf record -z --call-graph dwarf` of `testdata/unwind/unwind-demo-fp`, printed by
//!   `stacksym perf` and by `perf script` (the default layout, and `-F comm,tid,ip,sym,dso
//!   --no-inline`): every sample, with perf's header line, and at least 99 % of them byte
//!   for byte (the unwinder's own differences are tests/perf_unwind.rs's). Needs perf and permission to profile: skipped
//!   with a note otherwise, a failure under CI.
//! - The committed recording `testdata/recordings/perf-nofp.data.zst` repacked here as perf
//!   packs a compressed one (its data section one zstd stream, cut into records of a few
//!   sizes, so that blocks and the records inside lie across two compressed records; as
//!   `PERF_RECORD_COMPRESSED` and as perf 6.15's `PERF_RECORD_COMPRESSED2`; with the frame
//!   ended, and left open as perf leaves it): printed as the recording itself is. Needs no
//!   tool.
//! - A record of a kind the reader does not know, added to that recording: the samples are
//!   printed as before, and stderr names the kind with its count.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::Command;

use support::perf::{assert_same_samples, output};
use support::{find_tool, skip_or_fail, tool, writeln_stderr};

const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/recordings/perf-nofp.data.zst"
);

/// The committed recording, decompressed.
fn committed_recording() -> Vec<u8> {
    let mut bytes = Vec::new();
    let file = std::fs::File::open(RECORDING).expect("the committed recording");
    ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(file))
        .expect("a zstd stream")
        .read_to_end(&mut bytes)
        .expect("decompressed");
    bytes
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// `file` with its data section replaced by `data`: the header's data size and the feature
/// sections' offsets (they follow the data section, as their table does) moved to fit.
fn with_data(file: &[u8], data: &[u8]) -> Vec<u8> {
    let (offset, size) = (le_u64(file, 40) as usize, le_u64(file, 48) as usize);
    let end = offset + size;
    let shift = data.len() as i64 - size as i64;
    let mut out = file[..offset].to_vec();
    out[48..56].copy_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(data);
    let features = file[72..104]
        .iter()
        .map(|b| b.count_ones() as usize)
        .sum::<usize>();
    let mut rest = file[end..].to_vec();
    for i in 0..features {
        let at = 16 * i;
        let feature_offset = le_u64(&rest, at);
        if feature_offset >= end as u64 {
            let moved = (feature_offset as i64 + shift) as u64;
            rest[at..at + 8].copy_from_slice(&moved.to_le_bytes());
        }
    }
    out.extend_from_slice(&rest);
    out
}

/// A zstd frame's first block: after the magic, the descriptor and the fields it announces
/// (RFC 8878, 3.1.1.1).
fn first_block(frame: &[u8]) -> usize {
    let descriptor = frame[4];
    let single_segment = descriptor & 0x20 != 0;
    let dictionary = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let content_size = match descriptor >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    5 + usize::from(!single_segment) + dictionary + content_size
}

/// `frame` with its last block no longer marked last (and no checksum): the frame is left
/// open, as `perf record -z` leaves its stream.
fn left_open(mut frame: Vec<u8>) -> Vec<u8> {
    let has_checksum = frame[4] & 4 != 0;
    let mut at = first_block(&frame);
    loop {
        let header = u32::from_le_bytes([frame[at], frame[at + 1], frame[at + 2], 0]);
        let size = if (header >> 1) & 3 == 1 {
            1
        } else {
            (header >> 3) as usize
        };
        if header & 1 != 0 {
            frame[at] &= !1;
            frame.truncate(at + 3 + size);
            assert!(has_checksum || frame.len() == at + 3 + size);
            return frame;
        }
        at += 3 + size;
    }
}

/// The data section of `file` compressed as one zstd stream and cut into compressed
/// records of at most `piece` bytes of it: `PERF_RECORD_COMPRESSED` (81: the header, the
/// data) or, `v2`, `PERF_RECORD_COMPRESSED2` (83: the header, the data's size, the data
/// padded to 8 bytes).
fn compressed_data_section(file: &[u8], piece: usize, v2: bool, open: bool) -> Vec<u8> {
    let (offset, size) = (le_u64(file, 40) as usize, le_u64(file, 48) as usize);
    let mut stream = ruzstd::encoding::compress_to_vec(
        &file[offset..offset + size],
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    if open {
        stream = left_open(stream);
    }
    let mut data = Vec::new();
    for chunk in stream.chunks(piece) {
        if v2 {
            let padded = chunk.len().div_ceil(8) * 8;
            data.extend(83u32.to_le_bytes());
            data.extend(0u16.to_le_bytes());
            data.extend(((16 + padded) as u16).to_le_bytes());
            data.extend((chunk.len() as u64).to_le_bytes());
            data.extend_from_slice(chunk);
            data.resize(data.len() + padded - chunk.len(), 0);
        } else {
            data.extend(81u32.to_le_bytes());
            data.extend(0u16.to_le_bytes());
            data.extend(((8 + chunk.len()) as u16).to_le_bytes());
            data.extend_from_slice(chunk);
        }
    }
    data
}

/// `stacksym perf -i data` (and `args`): (stdout, stderr); it must succeed.
fn ours(data: &Path, args: &[&str]) -> (String, String) {
    let out = tool("perf")
        .args(args)
        .arg("-i")
        .arg(data)
        .output()
        .expect("stacksym runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "stacksym perf failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

#[test]
fn compressed_records_read_as_the_records_they_hold() {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = committed_recording();
    let plain = dir.path().join("plain.data");
    std::fs::write(&plain, &file).expect("written");
    let (expected, expected_stderr) = ours(&plain, &["--no-inline"]);
    let samples = expected.matches("\n\n").count();
    assert!(
        samples > 1000,
        "{samples} samples in the committed recording"
    );
    for (piece, v2, open) in [(97, false, true), (4000, false, false), (1500, true, true)] {
        let what = format!(
            "{} records of {piece} bytes, frame {}",
            if v2 { "COMPRESSED2" } else { "COMPRESSED" },
            if open { "left open" } else { "ended" }
        );
        let data = compressed_data_section(&file, piece, v2, open);
        let packed = dir.path().join(format!("packed-{piece}.data"));
        std::fs::write(&packed, with_data(&file, &data)).expect("written");
        let (printed, stderr) = ours(&packed, &["--no-inline"]);
        writeln_stderr(format_args!(
            "compressed: {what}: {} bytes of records in {} bytes",
            le_u64(&file, 48),
            data.len()
        ));
        assert_same_samples(&what, &printed, &expected);
        assert_eq!(stderr, expected_stderr, "{what}: stderr");
        // Cut short half way through: the samples decompressed whole are printed (all the
        // whole recording's), and stderr says where the file ends.
        let bytes = with_data(&file, &data);
        let cut = dir.path().join(format!("cut-{piece}.data"));
        let at = le_u64(&bytes, 40) as usize + data.len() / 2;
        std::fs::write(&cut, &bytes[..at]).expect("written");
        let (printed, stderr) = ours(&cut, &["--no-inline"]);
        let whole: Vec<&str> = expected.split_inclusive("\n\n").collect();
        let cut_samples: Vec<&str> = printed.split_inclusive("\n\n").collect();
        writeln_stderr(format_args!(
            "{what}, cut at {at:#x}: {} samples; {}",
            cut_samples.len(),
            stderr.trim_end()
        ));
        assert!(
            cut_samples.len() > whole.len() / 3,
            "{what}: cut: too few samples"
        );
        assert!(
            cut_samples.iter().all(|sample| whole.contains(sample)),
            "{what}: cut: a sample not in the whole recording's output"
        );
        assert!(stderr.contains("truncated: the data section"), "{stderr}");
        assert!(stderr.contains("inside a record at"), "{stderr}");
    }
}

#[test]
fn a_record_of_an_unknown_kind_is_named_on_stderr() {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = committed_recording();
    let plain = dir.path().join("plain.data");
    std::fs::write(&plain, &file).expect("written");
    let (expected, expected_stderr) = ours(&plain, &["--no-inline"]);
    assert!(!expected_stderr.contains("not read"), "{expected_stderr}");
    // Two records of kind 200 (no such kind) and one AUXTRACE_INFO (70), first in the data.
    let (offset, size) = (le_u64(&file, 40) as usize, le_u64(&file, 48) as usize);
    let mut data = Vec::new();
    for kind in [200u32, 70, 200] {
        data.extend(kind.to_le_bytes());
        data.extend(0u16.to_le_bytes());
        data.extend(16u16.to_le_bytes());
        data.extend(0u64.to_le_bytes());
    }
    data.extend_from_slice(&file[offset..offset + size]);
    let odd = dir.path().join("odd.data");
    std::fs::write(&odd, with_data(&file, &data)).expect("written");
    let (printed, stderr) = ours(&odd, &["--no-inline"]);
    assert_same_samples("with records of unknown kinds", &printed, &expected);
    assert!(
        stderr.contains(&format!(
            "stacksym perf: note: {}: 2 records of kind type 200 not read",
            odd.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 record of kind AUXTRACE_INFO (type 70) not read"),
        "{stderr}"
    );
}

#[test]
fn perf_record_z_prints_as_perf_script() {
    let test = "perf_record_z_prints_as_perf_script";
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(test, "perf not found (apt-get install linux-perf)");
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    let data = dir.path().join("z.data");
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/unwind/unwind-demo-fp");
    let record = Command::new(&perf)
        .args(["record", "-q", "-z", "-e", "cpu-clock", "--call-graph"])
        .args(["dwarf,16384", "-o"])
        .arg(&data)
        .arg(&program)
        .arg("200")
        .output()
        .expect("perf runs");
    if !record.status.success() {
        return skip_or_fail(
            test,
            &format!(
                "perf record -z failed (permissions? kernel.perf_event_paranoid; a perf \
                 built without zstd): {}",
                String::from_utf8_lossy(&record.stderr)
            ),
        );
    }
    let header = output(
        Command::new(&perf)
            .args(["report", "--header-only", "-i"])
            .arg(&data),
    );
    assert!(
        header.contains("# compressed : Zstd"),
        "perf record -z wrote no compressed recording: {header}"
    );
    for args in [&[][..], &["-F", "comm,tid,ip,sym,dso", "--no-inline"][..]] {
        let theirs = output(
            Command::new(&perf)
                .arg("script")
                .args(args)
                .arg("-i")
                .arg(&data),
        );
        let (printed, stderr) = ours(&data, args);
        writeln_stderr(format_args!(
            "{test}: {args:?}: stderr: {}",
            stderr.trim_end()
        ));
        same_samples(&format!("{test}: {args:?}"), &printed, &theirs);
    }
}

/// Every sample of `theirs` is in `ours`, in its order, with its header line; at least
/// 99 % of them are byte for byte the same (the rest are the unwinder's differences, which
/// tests/perf_unwind.rs counts: a chain through a signal frame, say; printed here).
fn same_samples(what: &str, ours: &str, theirs: &str) {
    let (a, b): (Vec<&str>, Vec<&str>) =
        (ours.split("\n\n").collect(), theirs.split("\n\n").collect());
    assert!(b.len() > 50, "{what}: too few samples to judge: {theirs}");
    let head = |sample: &str| sample.lines().next().unwrap_or("").to_string();
    let heads = |samples: &[&str]| samples.iter().map(|s| head(s)).collect::<Vec<_>>();
    assert_eq!(
        heads(&a),
        heads(&b),
        "{what}: the samples' header lines differ"
    );
    let differ: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    writeln_stderr(format_args!(
        "{what}: {} samples, as perf's; {} differ",
        a.len(),
        differ.len()
    ));
    for &i in differ.iter().take(3) {
        writeln_stderr(format_args!("--- ours:\n{}\n--- perf's:\n{}", a[i], b[i]));
    }
    assert!(
        differ.len() * 100 <= a.len(),
        "{what}: {} of {} samples differ",
        differ.len(),
        a.len()
    );
}
