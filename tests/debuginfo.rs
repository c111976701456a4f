//! Finding debug companions (`stacksym::debuginfo`): the system libc through
//! `/usr/lib/debug/.build-id`, the committed split pairs (`testdata/bin/c-debuglink` +
//! `c-debuglink.debug`, `testdata/bin/c-buildid` + `testdata/debug/.build-id/…`), and, in
//! temporary directories built from those, the `.debug/` and debug-dir places, a wrong CRC,
//! a wrong build-id, a debuglink naming the file itself, the order, and decoys outside the
//! allowed directories.

mod support;

use std::path::{Path, PathBuf};

use stacksym::debuginfo::{DebugFinder, DebugLinkDir, FoundBy};
use stacksym::elf::ElfFile;
use support::writeln_stderr;

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

fn open(path: &Path) -> ElfFile {
    ElfFile::open(path).unwrap_or_else(|e| panic!("{e}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<debug_dir>/.build-id/xx/rest.debug` for `build_id`.
fn build_id_path(debug_dir: &Path, build_id: &[u8]) -> PathBuf {
    let id = hex(build_id);
    debug_dir
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]))
}

/// Copies `from` to `to`, creating `to`'s directory.
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("{} -> {}: {e}", from.display(), to.display()));
}

/// A temporary directory holding `bin/c-debuglink` (a copy of the committed stripped file).
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let scratch = Scratch {
            dir: tempfile::tempdir().unwrap(),
        };
        copy(
            &testdata("bin/c-debuglink"),
            &scratch.path("bin/c-debuglink"),
        );
        scratch
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn binary(&self) -> ElfFile {
        open(&self.path("bin/c-debuglink"))
    }

    /// Puts a good copy of the committed debug file at `rel`.
    fn good_debug_at(&self, rel: &str) -> PathBuf {
        let to = self.path(rel);
        copy(&testdata("bin/c-debuglink.debug"), &to);
        to
    }
}

#[test]
fn system_libc_debug_file_is_found_by_build_id() {
    let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    if !libc.exists() {
        writeln_stderr(format_args!(
            "skipped: {} does not exist (not an x86-64 Debian/Ubuntu system)",
            libc.display()
        ));
        return;
    }
    let elf = open(libc);
    let build_id = elf.build_id().expect("libc.so.6 has a build-id");
    let expected = build_id_path(Path::new("/usr/lib/debug"), build_id);
    if !expected.exists() {
        writeln_stderr(format_args!(
            "skipped: {} does not exist (apt-get install libc6-dbg)",
            expected.display()
        ));
        return;
    }
    let found = DebugFinder::default()
        .find(&elf)
        .unwrap()
        .expect("libc6-dbg's file is found");
    assert_eq!(found.path, expected);
    assert_eq!(
        found.found_by,
        FoundBy::BuildIdDir {
            debug_dir: PathBuf::from("/usr/lib/debug")
        }
    );
    assert_eq!(found.elf.build_id(), Some(build_id));
}

#[test]
fn committed_build_id_pair_is_found_in_testdata_debug() {
    let elf = open(&testdata("bin/c-buildid"));
    assert!(elf.debuglink().is_none(), "c-buildid has no debuglink");
    let debug_dir = testdata("debug");
    let finder = DebugFinder::new(vec![
        PathBuf::from("/nonexistent-debug-dir"),
        debug_dir.clone(),
    ]);
    let found = finder.find(&elf).unwrap().expect("found in testdata/debug");
    assert_eq!(
        found.path,
        build_id_path(&debug_dir, elf.build_id().unwrap())
    );
    assert_eq!(found.found_by, FoundBy::BuildIdDir { debug_dir });
    assert_eq!(found.elf.build_id(), elf.build_id());
    // The debug file has the full symbol table too.
    assert!(found.elf.symbol_count().unwrap().0 > 10);

    // Not in the default debug dir, nor without debug dirs.
    assert!(DebugFinder::new(Vec::new()).find(&elf).unwrap().is_none());
    assert!(DebugFinder::default().find(&elf).unwrap().is_none());
}

#[test]
fn committed_debuglink_pair_is_found_next_to_the_file() {
    let elf = open(&testdata("bin/c-debuglink"));
    let (name, crc) = elf.debuglink().expect("c-debuglink has a .gnu_debuglink");
    assert_eq!(name, b"c-debuglink.debug");
    let debug_path = testdata("bin/c-debuglink.debug");
    let debug_bytes = std::fs::read(&debug_path).unwrap();
    assert_eq!(
        crc,
        crc32fast::hash(&debug_bytes),
        "the CRC as objcopy wrote it"
    );

    let found = DebugFinder::new(Vec::new())
        .find(&elf)
        .unwrap()
        .expect("found next to it");
    assert_eq!(found.path, debug_path.canonicalize().unwrap());
    assert_eq!(
        found.found_by,
        FoundBy::DebugLink {
            dir: DebugLinkDir::SameDir
        }
    );
    assert_eq!(found.elf.build_id(), elf.build_id());
}

#[test]
fn a_symlinked_binary_is_searched_in_its_real_directory() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("c-debuglink");
    std::os::unix::fs::symlink(testdata("bin/c-debuglink"), &link).unwrap();
    let found = DebugFinder::new(Vec::new())
        .find(&open(&link))
        .unwrap()
        .expect("found");
    assert_eq!(
        found.path,
        testdata("bin/c-debuglink.debug").canonicalize().unwrap()
    );
}

#[test]
fn debuglink_in_dot_debug_and_in_a_debug_dir() {
    let scratch = Scratch::new();
    let real_bin_dir = scratch.path("bin").canonicalize().unwrap();
    // <debug-dir>/<file's directory>/NAME
    let debug_dir = scratch.path("debug");
    let under_debug_dir = debug_dir
        .join(real_bin_dir.strip_prefix("/").unwrap())
        .join("c-debuglink.debug");
    copy(&testdata("bin/c-debuglink.debug"), &under_debug_dir);
    let finder = DebugFinder::new(vec![debug_dir.clone()]);
    let found = finder
        .find(&scratch.binary())
        .unwrap()
        .expect("found in the debug dir");
    assert_eq!(found.path, under_debug_dir);
    assert_eq!(
        found.found_by,
        FoundBy::DebugLink {
            dir: DebugLinkDir::DebugDir { debug_dir }
        }
    );

    // .debug/NAME comes before the debug dir.
    let dot_debug = scratch.good_debug_at("bin/.debug/c-debuglink.debug");
    let found = finder
        .find(&scratch.binary())
        .unwrap()
        .expect("found in .debug/");
    assert_eq!(found.path, real_bin_dir.join(".debug/c-debuglink.debug"));
    assert_eq!(
        found.found_by,
        FoundBy::DebugLink {
            dir: DebugLinkDir::DotDebug
        }
    );
    assert_eq!(
        found.path.canonicalize().unwrap(),
        dot_debug.canonicalize().unwrap()
    );
}

#[test]
fn a_candidate_with_the_wrong_crc_is_skipped() {
    let scratch = Scratch::new();
    let mut bytes = std::fs::read(testdata("bin/c-debuglink.debug")).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    let bad = scratch.path("bin/c-debuglink.debug");
    std::fs::write(&bad, &bytes).unwrap();
    // Still a readable ELF file with the right build-id: only the CRC tells it apart.
    let bad_elf = open(&bad);
    assert_eq!(bad_elf.build_id(), scratch.binary().build_id());

    let finder = DebugFinder::new(Vec::new());
    assert!(
        finder.find(&scratch.binary()).unwrap().is_none(),
        "bad CRC refused"
    );

    // The next place is still tried: a good copy in .debug/ is found.
    scratch.good_debug_at("bin/.debug/c-debuglink.debug");
    let found = finder
        .find(&scratch.binary())
        .unwrap()
        .expect("good copy found");
    assert_eq!(
        found.found_by,
        FoundBy::DebugLink {
            dir: DebugLinkDir::DotDebug
        }
    );
}

#[test]
fn a_debuglink_naming_the_file_itself_is_skipped() {
    let scratch = Scratch::new();
    // The stripped file under the name its own debuglink gives.
    let itself = scratch.path("bin/c-debuglink.debug");
    std::fs::rename(scratch.path("bin/c-debuglink"), &itself).unwrap();
    let elf = open(&itself);
    assert_eq!(elf.debuglink().unwrap().0, b"c-debuglink.debug");
    let finder = DebugFinder::new(Vec::new());
    assert!(finder.find(&elf).unwrap().is_none());

    // The same through a hard link in .debug/ (a different path, the same file).
    std::fs::create_dir(scratch.path("bin/.debug")).unwrap();
    std::fs::hard_link(&itself, scratch.path("bin/.debug/c-debuglink.debug")).unwrap();
    assert!(finder.find(&elf).unwrap().is_none());
}

#[test]
fn build_id_dir_wins_over_debuglink_and_is_verified() {
    let scratch = Scratch::new();
    scratch.good_debug_at("bin/c-debuglink.debug");
    let elf = scratch.binary();
    let build_id = elf.build_id().unwrap();

    // A file with another build-id at this build-id's place is refused; the debuglink
    // next to the binary is used instead.
    let wrong_dir = scratch.path("debug-wrong");
    let c_buildid = open(&testdata("bin/c-buildid"));
    copy(
        &build_id_path(&testdata("debug"), c_buildid.build_id().unwrap()),
        &build_id_path(&wrong_dir, build_id),
    );
    let finder = DebugFinder::new(vec![wrong_dir.clone()]);
    let found = finder.find(&elf).unwrap().expect("debuglink still found");
    assert_eq!(
        found.found_by,
        FoundBy::DebugLink {
            dir: DebugLinkDir::SameDir
        }
    );

    // A good file in a build-id dir wins over the debuglink, whichever dir holds it.
    let good_dir = scratch.path("debug-good");
    copy(
        &testdata("bin/c-debuglink.debug"),
        &build_id_path(&good_dir, build_id),
    );
    let finder = DebugFinder::new(vec![wrong_dir, good_dir.clone()]);
    let found = finder.find(&elf).unwrap().expect("found");
    assert_eq!(found.path, build_id_path(&good_dir, build_id));
    assert_eq!(
        found.found_by,
        FoundBy::BuildIdDir {
            debug_dir: good_dir
        }
    );
}

#[test]
fn nothing_outside_the_allowed_directories_is_found() {
    let scratch = Scratch::new();
    // Decoys: good debug files in a sibling directory, its .debug/, the parent directory,
    // and a debug dir that is not configured.
    scratch.good_debug_at("other/c-debuglink.debug");
    scratch.good_debug_at("other/.debug/c-debuglink.debug");
    scratch.good_debug_at("c-debuglink.debug");
    let unconfigured = scratch.path("unconfigured-debug");
    let real_bin_dir = scratch.path("bin").canonicalize().unwrap();
    copy(
        &testdata("bin/c-debuglink.debug"),
        &unconfigured
            .join(real_bin_dir.strip_prefix("/").unwrap())
            .join("c-debuglink.debug"),
    );
    copy(
        &testdata("bin/c-debuglink.debug"),
        &build_id_path(&unconfigured, scratch.binary().build_id().unwrap()),
    );
    let configured = scratch.path("debug");
    std::fs::create_dir(&configured).unwrap();
    let finder = DebugFinder::new(vec![configured]);
    assert!(finder.find(&scratch.binary()).unwrap().is_none());
}

#[test]
fn files_without_links_have_no_supplementary_file() {
    let finder = DebugFinder::new(vec![testdata("debug")]);
    for name in ["bin/c-debuglink", "bin/c-debuglink.debug", "bin/c-pie-g"] {
        let elf = open(&testdata(name));
        assert!(elf.debugaltlink().is_none(), "{name}");
        assert!(finder.find_supplementary(&elf).unwrap().is_none(), "{name}");
    }
    // An unstripped file with neither a build-id dir entry nor a debuglink: nothing.
    assert!(finder
        .find(&open(&testdata("bin/c-pie-g")))
        .unwrap()
        .is_none());
}

/// `testdata/altlink/c-altlink.debug` names `../.dwz/stacksym/common.debug` and c-buildid's
/// build-id; c-buildid's debug file plays the supplementary file.
struct AltScratch {
    dir: tempfile::TempDir,
    supplementary: PathBuf,
}

impl AltScratch {
    fn new() -> AltScratch {
        let c_buildid = open(&testdata("bin/c-buildid"));
        AltScratch {
            dir: tempfile::tempdir().unwrap(),
            supplementary: build_id_path(&testdata("debug"), c_buildid.build_id().unwrap()),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Places the referring debug file at `rel` and opens it.
    fn referrer_at(&self, rel: &str) -> ElfFile {
        let to = self.path(rel);
        copy(&testdata("altlink/c-altlink.debug"), &to);
        open(&to)
    }

    fn supplementary_at(&self, to: &Path) {
        copy(&self.supplementary, to);
    }
}

#[test]
fn supplementary_file_at_its_recorded_path() {
    let scratch = AltScratch::new();
    let debug_dir = scratch.path("debug");
    let referrer = scratch.referrer_at("debug/usr/lib/c-altlink.debug");
    let (recorded, build_id) = referrer.debugaltlink().expect("has .gnu_debugaltlink");
    assert_eq!(recorded, b"../.dwz/stacksym/common.debug");
    assert_eq!(Some(build_id), open(&scratch.supplementary).build_id());

    // Relative to the referring file's directory; inside the debug dir, so allowed.
    let at = scratch.path("debug/usr/.dwz/stacksym/common.debug");
    scratch.supplementary_at(&at);
    let finder = DebugFinder::new(vec![debug_dir]);
    let found = finder
        .find_supplementary(&referrer)
        .unwrap()
        .expect("found");
    assert_eq!(found.found_by, FoundBy::AltLinkPath);
    assert_eq!(
        found.path.canonicalize().unwrap(),
        at.canonicalize().unwrap()
    );
    assert_eq!(found.elf.build_id(), Some(build_id));
}

#[test]
fn supplementary_file_in_build_id_and_dwz_dirs() {
    let scratch = AltScratch::new();
    let debug_dir = scratch.path("debug");
    let finder = DebugFinder::new(vec![debug_dir.clone()]);
    let referrer = scratch.referrer_at("elsewhere/c-altlink.debug");
    let build_id = referrer.debugaltlink().unwrap().1.to_vec();

    // The recorded path resolves outside the debug dir and the file's directory: a decoy
    // there is not read.
    scratch.supplementary_at(&scratch.path(".dwz/stacksym/common.debug"));
    assert!(finder.find_supplementary(&referrer).unwrap().is_none());

    // <debug-dir>/.dwz/<part after .dwz/>.
    let in_dwz = debug_dir.join(".dwz/stacksym/common.debug");
    scratch.supplementary_at(&in_dwz);
    let found = finder
        .find_supplementary(&referrer)
        .unwrap()
        .expect("found in .dwz");
    assert_eq!(found.path, in_dwz);
    assert_eq!(
        found.found_by,
        FoundBy::DwzDir {
            debug_dir: debug_dir.clone()
        }
    );

    // The build-id dir comes before the .dwz dir.
    let by_id = build_id_path(&debug_dir, &build_id);
    scratch.supplementary_at(&by_id);
    let found = finder
        .find_supplementary(&referrer)
        .unwrap()
        .expect("found by id");
    assert_eq!(found.path, by_id);
    assert_eq!(found.found_by, FoundBy::BuildIdDir { debug_dir });
}

#[test]
fn supplementary_file_with_another_build_id_is_refused() {
    let scratch = AltScratch::new();
    let debug_dir = scratch.path("debug");
    let referrer = scratch.referrer_at("debug/usr/lib/c-altlink.debug");
    // The right name, the wrong file (its build-id is c-debuglink's).
    copy(
        &testdata("bin/c-debuglink.debug"),
        &scratch.path("debug/usr/.dwz/stacksym/common.debug"),
    );
    let finder = DebugFinder::new(vec![debug_dir]);
    assert!(finder.find_supplementary(&referrer).unwrap().is_none());
    // A missing supplementary file is Ok(None) too.
    let alone = scratch.referrer_at("alone/c-altlink.debug");
    assert!(finder.find_supplementary(&alone).unwrap().is_none());
}

/// Under a debug dir, a debuglink name is also looked for under each shorter tail of the
/// file's directory, down to the debug dir itself, as elfutils looks: a debug file kept as
/// `<debug-dir>/bin/NAME.debug` serves `/anything/bin/NAME`. eu-addr2line (elfutils, its
/// `--debuginfo-path`) must find the same file in each place, or the test says the rule is
/// not elfutils'.
#[test]
fn debuglink_under_a_tail_of_the_directory_in_a_debug_dir() {
    let test = "debuglink_under_a_tail_of_the_directory_in_a_debug_dir";
    let eu_addr2line = support::find_tool("eu-addr2line");
    if eu_addr2line.is_none() {
        support::skip_or_fail(test, "eu-addr2line not found (apt-get install elfutils)");
    }
    let scratch = tempfile::tempdir().unwrap();
    let bin_dir = scratch.path().join("x/y/bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let binary = bin_dir.join("c-debuglink");
    std::fs::copy(testdata("bin/c-debuglink"), &binary).unwrap();
    let debug_dir = scratch.path().join("debug");
    let main = support::nm_addr(&testdata("bin/c-debuglink.debug"), "main");
    for tail in ["y/bin", "bin", ""] {
        let _ = std::fs::remove_dir_all(&debug_dir);
        let at = debug_dir.join(tail).join("c-debuglink.debug");
        copy(&testdata("bin/c-debuglink.debug"), &at);
        let found = DebugFinder::new(vec![debug_dir.clone()])
            .find(&open(&binary))
            .unwrap()
            .unwrap_or_else(|| panic!("not found as {}", at.display()));
        assert_eq!(found.path, at);
        assert_eq!(
            found.found_by,
            FoundBy::DebugLink {
                dir: DebugLinkDir::DebugDir {
                    debug_dir: debug_dir.clone()
                }
            }
        );
        if let Some(eu) = &eu_addr2line {
            let out = support::run(
                eu,
                &[
                    "-e",
                    binary.to_str().unwrap(),
                    &format!("--debuginfo-path={}", debug_dir.display()),
                    &format!("{main:#x}"),
                ],
            );
            assert!(
                !out.starts_with("??"),
                "eu-addr2line did not find {}: {out}",
                at.display()
            );
        }
    }
}
