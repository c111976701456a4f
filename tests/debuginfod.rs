//! debuginfod (feature `debuginfod`): the client against elfutils' real server (`debuginfod
//! -F` over a temporary directory, bound to 127.0.0.1) and against a fake server inside the
//! test (std::net on 127.0.0.1) that misbehaves on purpose.
//!
//! Every symbolizer here is given its debuginfod config explicitly and no local debug dirs,
//! so no `DEBUGINFOD_*` variable of the user's environment is read and debug files come from
//! the server or the test's own cache only (the one test of the environment sets it in a
//! child process).
//!
//! Binaries: `c-buildid` (a `.symtab`, no DWARF; its debug file is only in
//! `testdata/debug/.build-id`) for the fake server: its symbols answer with or without the
//! debug file, so a failed fetch shows as frames missing and an error. For the real server
//! `c-gcc-O2-g-dwarf4.stripped-buildid` (no `.symtab`, no DWARF), whose unstripped twin
//! `c-gcc-O2-g-dwarf4` has the same build-id and code, and `c-dwz-a`, whose debug file needs
//! a dwz supplementary file.
#![cfg(feature = "debuginfod")]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use stacksym::debuginfo::{DebuginfodConfig, Progress};
use stacksym::elf::ElfFile;
use stacksym::{Error, Input, Source, Symbolizer, Symbols};

// ---------------------------------------------------------------------------------------
// Test binaries and answers

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn build_id_of(path: &Path) -> Vec<u8> {
    let elf = ElfFile::open(path).expect("committed test binary");
    elf.build_id().expect("has a build-id").to_vec()
}

/// `testdata/debug/.build-id/xx/rest.debug` of the binary (its debug file).
fn committed_debug_file(binary: &Path) -> PathBuf {
    let id = hex(&build_id_of(binary));
    testdata(&format!("debug/.build-id/{}/{}.debug", &id[..2], &id[2..]))
}

/// Addresses inside every sized function of `path`'s symbol table (start, middle, last
/// byte), read with stacksym's own ELF reader: the comparisons below are between two
/// stacksym answers (through debuginfod, and from local files), so the addresses only need
/// to cover the code.
fn function_addrs(path: &Path) -> Vec<u64> {
    let readelf = support::find_tool("readelf").expect("binutils' readelf (see .ci/run)");
    let mut addrs: Vec<u64> = support::readelf_symbols(&readelf, path)
        .iter()
        .filter(|s| s.is_sized_function())
        .flat_map(|s| [s.value, s.value + s.size / 2, s.value + s.size - 1])
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert!(addrs.len() > 20, "{}: too few functions", path.display());
    addrs
}

/// One answer, comparable: the symbol's name and offset, then each frame's function, file,
/// line, column and whether it is inlined.
type Answer = (
    Option<(String, u64)>,
    Vec<(
        Option<String>,
        Option<String>,
        Option<u32>,
        Option<u32>,
        bool,
    )>,
);

fn answers(symbols: &Symbols) -> Vec<Answer> {
    (0..symbols.len())
        .map(|i| {
            let sym = symbols.get(i).map(|s| (s.name.to_string(), s.offset));
            let frames = symbols
                .lines(i)
                .iter()
                .map(|f| {
                    (
                        f.function.as_ref().map(|n| n.demangled.clone()),
                        f.file.as_deref().map(str::to_string),
                        f.line,
                        f.column,
                        f.inlined,
                    )
                })
                .collect();
            (sym, frames)
        })
        .collect()
}

/// A symbolizer with no debug dirs and no debuginfod: what the local files alone give.
fn local_only(debug_dirs: Vec<PathBuf>) -> Symbolizer {
    Symbolizer::builder()
        .debug_dirs(debug_dirs)
        .debuginfod(DebuginfodConfig::new())
        .build()
}

/// The test's config: these servers, this cache, a short timeout.
fn config(urls: &[&str], cache: &Path) -> DebuginfodConfig {
    DebuginfodConfig::new()
        .urls(urls.iter().map(|u| u.to_string()).collect())
        .cache_dir(cache.to_path_buf())
        .timeout(Duration::from_secs(10))
}

/// A symbolizer that finds debug files through debuginfod only.
fn remote_only(config: DebuginfodConfig) -> Symbolizer {
    Symbolizer::builder()
        .debug_dirs(Vec::new())
        .debuginfod(config)
        .build()
}

fn symbolize(symbolizer: &Symbolizer, path: &Path, addrs: &[u64]) -> Symbols {
    symbolizer
        .symbolize(
            &Source::Elf { path },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(addrs)),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The batch found its debug information without trouble.
fn assert_no_debug_error(symbols: &Symbols) {
    assert!(
        symbols.debug_error().is_none(),
        "{:?}",
        symbols.debug_error()
    );
}

fn frame_count(symbols: &Symbols) -> usize {
    (0..symbols.len()).map(|i| symbols.lines(i).len()).sum()
}

/// Everything under `dir`: (relative path, size, is a symlink), sorted.
fn listing(dir: &Path) -> Vec<(String, u64, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries {
            let entry = entry.unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
                continue;
            }
            let rel = entry
                .path()
                .strip_prefix(dir)
                .unwrap()
                .display()
                .to_string();
            out.push((rel, meta.len(), meta.file_type().is_symlink()));
        }
    }
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------
// Log capture: warnings are counted per message, so tests running in parallel filter by
// their own unique paths.

struct WarnLog;

static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

impl log::Log for WarnLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if record.level() <= log::Level::Warn {
            WARNINGS.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

fn capture_warnings() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        log::set_logger(&WarnLog).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Warn);
    });
}

fn warnings_mentioning(text: &str) -> Vec<String> {
    WARNINGS
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.contains(text))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------------------
// The fake server

/// What the fake server answers to every request.
#[derive(Clone)]
enum Reply {
    /// 200 with a `Content-Length`.
    File(Arc<Vec<u8>>),
    /// 200 without a `Content-Length` (the body ends when the connection closes).
    Unsized(Arc<Vec<u8>>),
    /// 200 announcing the whole file, then half of it and a closed connection.
    Truncated(Arc<Vec<u8>>),
    /// This status, empty body.
    Status(u16),
    /// 302 to the same URL, forever.
    RedirectToSelf,
    /// The reply, after this long.
    Slow(Duration, Box<Reply>),
}

/// An HTTP/1.1 server on 127.0.0.1 that records each request's path and answers with its
/// [`Reply`], one thread per connection, `Connection: close`.
struct FakeServer {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl FakeServer {
    fn start(reply: Reply) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = listener.local_addr().unwrap();
        let url = format!("http://{addr}");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopped, base) = (Arc::clone(&requests), Arc::clone(&stop), url.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (reply, seen, base) = (reply.clone(), Arc::clone(&seen), base.clone());
                std::thread::spawn(move || serve(stream, &reply, &seen, &base));
            }
        });
        FakeServer {
            url,
            requests,
            stop,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

fn serve(mut stream: TcpStream, reply: &Reply, seen: &Mutex<Vec<String>>, base: &str) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() || request_line.is_empty() {
        return; // the wake-up connection of Drop
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => return,
            Ok(_) if header == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    seen.lock().unwrap().push(path.clone());
    let mut reply = reply;
    if let Reply::Slow(delay, inner) = reply {
        std::thread::sleep(*delay);
        reply = inner;
    }
    // Write errors are the client giving up (a timeout case): nothing to do.
    let _ = match reply {
        Reply::File(bytes) => write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            bytes.len()
        )
        .and_then(|()| stream.write_all(bytes)),
        Reply::Unsized(bytes) => stream
            .write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
            .and_then(|()| stream.write_all(bytes)),
        Reply::Truncated(bytes) => write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            bytes.len()
        )
        .and_then(|()| stream.write_all(&bytes[..bytes.len() / 2])),
        Reply::Status(code) => write!(
            stream,
            "HTTP/1.1 {code} Whatever\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        Reply::RedirectToSelf => write!(
            stream,
            "HTTP/1.1 302 Found\r\nLocation: {base}{path}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        ),
        Reply::Slow(..) => Ok(()),
    };
    let _ = stream.flush();
}

// ---------------------------------------------------------------------------------------
// Fake server: success, the cache, bad entries

fn c_buildid() -> (PathBuf, Arc<Vec<u8>>) {
    let binary = testdata("bin/c-buildid");
    let debug = std::fs::read(committed_debug_file(&binary)).unwrap();
    (binary, Arc::new(debug))
}

/// c-buildid's answers with its debug file found locally: what debuginfod must reproduce.
fn c_buildid_reference(addrs: &[u64]) -> Vec<Answer> {
    let binary = testdata("bin/c-buildid");
    let local = symbolize(&local_only(vec![testdata("debug")]), &binary, addrs);
    assert_no_debug_error(&local);
    assert!(frame_count(&local) > 0, "c-buildid's debug file has frames");
    answers(&local)
}

#[test]
fn fetched_debug_file_gives_the_frames_of_the_local_one_and_is_cached() {
    let (binary, debug) = c_buildid();
    let addrs = function_addrs(&binary);
    let reference = c_buildid_reference(&addrs);
    let server = FakeServer::start(Reply::File(Arc::clone(&debug)));
    let cache = tempfile::tempdir().unwrap();
    // (bytes so far, announced total) per callback.
    type Seen = Mutex<Vec<(u64, Option<u64>)>>;
    let progress: Arc<Seen> = Arc::default();
    let seen = Arc::clone(&progress);
    let symbolizer = remote_only(config(&[&server.url], cache.path()).progress(Arc::new(
        move |p: &Progress<'_>| seen.lock().unwrap().push((p.bytes, p.total)),
    )));

    let symbols = symbolize(&symbolizer, &binary, &addrs);
    assert_no_debug_error(&symbols);
    assert_eq!(answers(&symbols), reference);
    let id = hex(&build_id_of(&binary));
    assert_eq!(server.requests(), [format!("/buildid/{id}/debuginfo")]);
    let entry = cache.path().join(&id).join("debuginfo");
    assert_eq!(symbols.debug_file(), Some(entry.as_path()));
    assert_eq!(std::fs::read(&entry).unwrap(), *debug, "the cache holds it");
    assert_eq!(
        listing(cache.path()),
        [(format!("{id}/debuginfo"), debug.len() as u64, false)],
        "no temporary file or lock file is left"
    );
    let stats = symbolizer.stats().debuginfod;
    assert_eq!((stats.downloads, stats.hits, stats.misses), (1, 0, 0));
    assert_eq!(stats.bytes, debug.len() as u64);
    assert!(stats.last_fetch.is_some());
    let progress = progress.lock().unwrap().clone();
    assert_eq!(
        progress.last(),
        Some(&(debug.len() as u64, Some(debug.len() as u64))),
        "the callback saw the whole file: {progress:?}"
    );

    // A second symbolizer finds it in the cache: no request.
    let again = remote_only(config(&[&server.url], cache.path()));
    assert_eq!(answers(&symbolize(&again, &binary, &addrs)), reference);
    assert_eq!(server.requests().len(), 1);
    let stats = again.stats().debuginfod;
    assert_eq!(
        (stats.downloads, stats.hits, stats.last_fetch),
        (0, 1, None)
    );
}

#[test]
fn corrupt_and_symlinked_cache_entries_are_fetched_again() {
    let (binary, debug) = c_buildid();
    let addrs = function_addrs(&binary);
    let reference = c_buildid_reference(&addrs);
    let server = FakeServer::start(Reply::File(Arc::clone(&debug)));
    let cache = tempfile::tempdir().unwrap();
    let id = hex(&build_id_of(&binary));
    let entry = cache.path().join(&id).join("debuginfo");
    symbolize(
        &remote_only(config(&[&server.url], cache.path())),
        &binary,
        &addrs,
    );
    assert_eq!(server.requests().len(), 1);

    // Truncated in place (a crash of another tool, a full disk): refused, fetched again.
    std::fs::write(&entry, &debug[..debug.len() / 3]).unwrap();
    let symbols = symbolize(
        &remote_only(config(&[&server.url], cache.path())),
        &binary,
        &addrs,
    );
    assert_eq!(answers(&symbols), reference);
    assert_eq!(
        server.requests().len(),
        2,
        "the truncated entry was fetched again"
    );
    assert_eq!(std::fs::read(&entry).unwrap(), *debug);

    // Replaced by a symlink to elsewhere, even to a good copy: not followed, the link is
    // removed (not its target) and the file fetched again.
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("planted.debug");
    std::fs::write(&target, &*debug).unwrap();
    std::fs::remove_file(&entry).unwrap();
    std::os::unix::fs::symlink(&target, &entry).unwrap();
    let symbols = symbolize(
        &remote_only(config(&[&server.url], cache.path())),
        &binary,
        &addrs,
    );
    assert_eq!(answers(&symbols), reference);
    assert_eq!(server.requests().len(), 3, "the symlink was not followed");
    let meta = std::fs::symlink_metadata(&entry).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the entry is a regular file again"
    );
    assert_eq!(
        std::fs::read(&target).unwrap(),
        *debug,
        "the target is untouched"
    );

    // A different ELF file in the entry (another build-id): refused, fetched again.
    std::fs::copy(testdata("bin/c-debuglink.debug"), &entry).unwrap();
    let symbols = symbolize(
        &remote_only(config(&[&server.url], cache.path())),
        &binary,
        &addrs,
    );
    assert_eq!(answers(&symbols), reference);
    assert_eq!(server.requests().len(), 4);
}

// ---------------------------------------------------------------------------------------
// Fake server: every failure is an error in the batch, a failure marker, and symbols still

#[test]
fn failed_fetches_give_an_error_and_a_marker_and_symbols_still_answer() {
    let (binary, debug) = c_buildid();
    let addrs = function_addrs(&binary);
    let symbols_only: Vec<Option<(String, u64)>> =
        answers(&symbolize(&local_only(Vec::new()), &binary, &addrs))
            .into_iter()
            .map(|(sym, _)| sym)
            .collect();
    assert!(symbols_only.iter().filter(|s| s.is_some()).count() == addrs.len());
    let other_build_id = Arc::new(std::fs::read(testdata("bin/c-debuglink.debug")).unwrap());
    let cap = 4096;
    assert!(debug.len() > cap as usize);
    let timeout = Duration::from_secs(1);
    let cases: Vec<(&str, Reply, &str)> = vec![
        (
            "wrong build-id",
            Reply::File(other_build_id),
            "the file is refused",
        ),
        (
            "truncated body",
            Reply::Truncated(Arc::clone(&debug)),
            "truncated",
        ),
        (
            "oversized, announced",
            Reply::File(Arc::clone(&debug)),
            "-byte cap",
        ),
        (
            "oversized, unannounced",
            Reply::Unsized(Arc::clone(&debug)),
            "grew past the 4096-byte cap",
        ),
        ("redirect loop", Reply::RedirectToSelf, "redirect"),
        ("404", Reply::Status(404), "not found (HTTP 404)"),
        ("500", Reply::Status(500), "HTTP 500"),
        (
            "slower than the timeout",
            Reply::Slow(timeout * 3, Box::new(Reply::File(Arc::clone(&debug)))),
            "timeout",
        ),
    ];
    let id = hex(&build_id_of(&binary));
    for (case, reply, says) in cases {
        let server = FakeServer::start(reply);
        let cache = tempfile::tempdir().unwrap();
        let config = config(&[&server.url], cache.path())
            .timeout(timeout)
            .max_size(case.starts_with("oversized").then_some(cap))
            .max_redirects(3);
        let symbols = symbolize(&remote_only(config.clone()), &binary, &addrs);
        let got: Vec<_> = answers(&symbols).into_iter().map(|(s, _)| s).collect();
        assert_eq!(got, symbols_only, "{case}: the symbols still answer");
        assert_eq!(frame_count(&symbols), 0, "{case}: no DWARF");
        let error = symbols
            .debug_error()
            .unwrap_or_else(|| panic!("{case}: no error in the batch"));
        assert!(matches!(error, Error::Debuginfod { .. }), "{case}: {error}");
        let message = error.to_string();
        assert!(
            message.contains(says) && message.contains(&server.url) && message.contains(&id),
            "{case}: {message:?} should name the URL, the build-id and say {says:?}"
        );
        assert_eq!(
            listing(cache.path()),
            [(format!("{id}/debuginfo"), 0, false)],
            "{case}: only the failure marker is left"
        );
        let requests = server.requests().len();
        assert!(requests >= 1, "{case}");

        // Within the marker's TTL: no request, the error says why.
        let symbols = symbolize(&remote_only(config.clone()), &binary, &addrs);
        let message = symbols.debug_error().expect("remembered").to_string();
        assert!(message.contains("ago failed"), "{case}: {message}");
        assert_eq!(server.requests().len(), requests, "{case}: marker honoured");

        // Past it (TTL 0): asked again.
        let expired = remote_only(config.negative_ttl(Duration::ZERO));
        symbolize(&expired, &binary, &addrs);
        assert!(server.requests().len() > requests, "{case}: marker expired");
        assert_eq!(expired.stats().debuginfod.misses, 1, "{case}");
    }
}

#[test]
fn servers_are_tried_in_order_until_one_has_the_file() {
    let (binary, debug) = c_buildid();
    let addrs = function_addrs(&binary);
    let reference = c_buildid_reference(&addrs);
    let missing = FakeServer::start(Reply::Status(404));
    let broken = FakeServer::start(Reply::Status(500));
    let good = FakeServer::start(Reply::File(debug));
    let cache = tempfile::tempdir().unwrap();
    let symbolizer = remote_only(config(
        &[&missing.url, &broken.url, &good.url],
        cache.path(),
    ));
    assert_eq!(answers(&symbolize(&symbolizer, &binary, &addrs)), reference);
    let counts = (
        missing.requests().len(),
        broken.requests().len(),
        good.requests().len(),
    );
    assert_eq!(counts, (1, 1, 1));
}

// ---------------------------------------------------------------------------------------
// One download per build-id: threads, processes

#[test]
fn two_threads_asking_for_one_build_id_download_it_once() {
    let (binary, debug) = c_buildid();
    let addrs = function_addrs(&binary);
    let reference = c_buildid_reference(&addrs);
    // Slow enough that the second thread asks while the first is downloading.
    let server = FakeServer::start(Reply::Slow(
        Duration::from_millis(700),
        Box::new(Reply::File(debug)),
    ));
    let cache = tempfile::tempdir().unwrap();
    let barrier = Barrier::new(2);
    let results: Vec<(Vec<Answer>, Instant, Instant, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    // Two symbolizers: one symbolizer already loads a file once.
                    let symbolizer = remote_only(config(&[&server.url], cache.path()));
                    barrier.wait();
                    let start = Instant::now();
                    let symbols = symbolize(&symbolizer, &binary, &addrs);
                    let downloads = symbolizer.stats().debuginfod.downloads;
                    (answers(&symbols), start, Instant::now(), downloads)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(server.requests().len(), 1, "one download");
    for (got, ..) in &results {
        assert_eq!(got, &reference);
    }
    let (a, b) = (&results[0], &results[1]);
    assert!(a.1 < b.2 && b.1 < a.2, "the two lookups overlapped in time");
    assert_eq!(
        a.3 + b.3,
        1,
        "one of them downloaded, the other waited and hit"
    );
}

/// Milliseconds since the epoch, comparable between processes.
fn epoch_ms() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// Starts `child_process` of the test binary `exe` as `role` with `envs`.
fn spawn_child_with(role: &str, envs: &[(String, String)], exe: &Path) -> Child {
    child_command(role, envs, exe)
        .spawn()
        .expect("the test binary runs")
}

/// The command that runs `child_process` of the test binary `exe` as `role` with `envs`
/// (and nothing of debuginfod's from this process's environment).
fn child_command(role: &str, envs: &[(String, String)], exe: &Path) -> Command {
    let mut command = Command::new(exe);
    command.env_remove("CI"); // the child's skips are the parent's business
    for name in [
        "DEBUGINFOD_URLS",
        "DEBUGINFOD_CACHE_PATH",
        "DEBUGINFOD_TIMEOUT",
        "DEBUGINFOD_MAXSIZE",
        "DEBUGINFOD_MAXTIME",
    ] {
        command.env_remove(name);
    }
    command
        .args([
            "--ignored",
            "--exact",
            "child_process",
            "--nocapture",
            "--quiet",
        ])
        .env("STACKSYM_DEBUGINFOD_CHILD", role)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in envs {
        command.env(name, value);
    }
    command
}

/// The child's stdout, once it exited successfully.
fn finish(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The value after `key=` in a child's output.
fn reported(stdout: &str, key: &str) -> u128 {
    stdout
        .split_whitespace()
        .find_map(|word| word.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {stdout:?}"))
        .parse()
        .unwrap()
}

#[test]
fn two_processes_asking_for_one_build_id_download_it_once() {
    let (binary, debug) = c_buildid();
    let server = FakeServer::start(Reply::Slow(
        Duration::from_millis(1500),
        Box::new(Reply::File(debug)),
    ));
    let cache = tempfile::tempdir().unwrap();
    let envs = child_env(&binary, &function_addrs(&binary), &server.url, cache.path());
    let exe = std::env::current_exe().unwrap();
    let children = [
        spawn_child_with("fetch", &envs, &exe),
        spawn_child_with("fetch", &envs, &exe),
    ];
    let outputs: Vec<String> = children.into_iter().map(finish).collect();
    assert_eq!(server.requests().len(), 1, "one download: {outputs:?}");
    let window = |out: &str| (reported(out, "start"), reported(out, "end"));
    let (a, b) = (window(&outputs[0]), window(&outputs[1]));
    assert!(
        a.0 < b.1 && b.0 < a.1,
        "the two processes' lookups overlapped: {outputs:?}"
    );
    let downloads: u128 = outputs.iter().map(|o| reported(o, "downloads")).sum();
    assert_eq!(downloads, 1, "{outputs:?}");
}

/// Not a test of its own: the child process of the tests that need one (another process
/// for the lock, another user for a read-only cache, another environment), chosen by
/// `STACKSYM_DEBUGINFOD_CHILD`; the binary, its addresses, the server and the cache come in
/// `STACKSYM_TEST_*` variables. Run alone, it does nothing.
#[test]
#[ignore = "run as a child process by the tests above"]
fn child_process() {
    let Ok(role) = std::env::var("STACKSYM_DEBUGINFOD_CHILD") else {
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is set"));
    let binary = PathBuf::from(var("STACKSYM_TEST_BINARY"));
    let addrs: Vec<u64> = var("STACKSYM_TEST_ADDRS")
        .split(',')
        .map(|a| u64::from_str_radix(a, 16).unwrap())
        .collect();
    capture_warnings();
    let symbolizer = match role.as_str() {
        // elfutils' variables, as the parent set them, read because the builder is told to.
        "environment" => Symbolizer::builder()
            .debug_dirs(Vec::new())
            .debuginfod(DebuginfodConfig::from_env())
            .build(),
        // The default builder: the environment is not read, nothing is fetched.
        "default" => Symbolizer::builder().debug_dirs(Vec::new()).build(),
        _ => remote_only(config(
            &[&var("STACKSYM_TEST_URL")],
            Path::new(&var("STACKSYM_TEST_CACHE")),
        )),
    };
    let start = epoch_ms();
    let symbols = symbolize(&symbolizer, &binary, &addrs);
    let end = epoch_ms();
    let stats = symbolizer.stats().debuginfod;
    println!(
        "start={start} end={end} downloads={} frames={} error={:?}",
        stats.downloads,
        frame_count(&symbols),
        symbols.debug_error().map(|e| e.to_string())
    );
    if role == "readonly" {
        // A second lookup (another build-id, which the server's file does not match) meets
        // the unwritable cache again: no second warning.
        let other = symbolizer.symbolize(
            &Source::BuildId {
                build_id: &[0x12; 20],
            },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        );
        assert!(other.is_err());
        let cache = var("STACKSYM_TEST_CACHE");
        let warned = warnings_mentioning(&cache);
        // The effective uid, as /proc/self shows it (owned by the process's euid).
        let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
        println!(
            "warnings={} cached={} uid={uid}",
            warned.len(),
            listing(Path::new(&cache)).len()
        );
        for warning in warned {
            println!("warning: {warning}");
        }
    }
}

/// `STACKSYM_TEST_*` for a child symbolizing `binary` at `addrs` through `url` into `cache`.
fn child_env(binary: &Path, addrs: &[u64], url: &str, cache: &Path) -> Vec<(String, String)> {
    let addrs: Vec<String> = addrs.iter().map(|a| format!("{a:x}")).collect();
    vec![
        ("STACKSYM_TEST_BINARY".into(), binary.display().to_string()),
        ("STACKSYM_TEST_ADDRS".into(), addrs.join(",")),
        ("STACKSYM_TEST_URL".into(), url.to_string()),
        ("STACKSYM_TEST_CACHE".into(), cache.display().to_string()),
    ]
}

// ---------------------------------------------------------------------------------------
// The real server: elfutils' debuginfod

/// Skips loudly when a tool is missing; under CI, fails instead (`.ci/run` installs it).
fn tool(test: &str, name: &str, package: &str) -> Option<PathBuf> {
    let found = support::require_tool(test, name, package);
    if found.is_none() && std::env::var_os("CI").is_some() {
        panic!("{test}: {name} is missing; CI is expected to install {package}");
    }
    found
}

/// `GET path` on 127.0.0.1:`port`: the status code, if the server answered.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut status_line = String::new();
    BufReader::new(stream).read_line(&mut status_line).ok()?;
    status_line.split_whitespace().nth(1)?.parse().ok()
}

/// elfutils' `debuginfod -F` serving a temporary directory, bound to 127.0.0.1 (through
/// `tests/support/loopback_bind.c`: Debian 12's server has no listen-address option).
struct RealServer {
    child: Child,
    url: String,
    port: u16,
    dir: tempfile::TempDir,
}

impl RealServer {
    /// Serves `files` (copied in under the given names) once every build-id of `ready` is
    /// indexed; `None` (after saying why) when a tool is missing outside CI.
    fn start(test: &str, files: &[(&Path, &str)], ready: &[&[u8]]) -> Option<RealServer> {
        let debuginfod = tool(test, "debuginfod", "debuginfod")?;
        let cc = tool(test, "cc", "gcc")?;
        let dir = tempfile::tempdir().unwrap();
        let served = dir.path().join("served");
        std::fs::create_dir(&served).unwrap();
        for (from, name) in files {
            std::fs::copy(from, served.join(name)).unwrap();
        }
        let shim = dir.path().join("loopback_bind.so");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/loopback_bind.c");
        let status = Command::new(cc)
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&shim)
            .arg(&source)
            .arg("-ldl")
            .status()
            .unwrap();
        assert!(status.success(), "cc {}", source.display());
        // A free port: bound, read, released (debuginfod takes a number, not a socket).
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.path().join("debuginfod.log")).unwrap();
        let child = Command::new(debuginfod)
            .arg("-p")
            .arg(port.to_string())
            .arg("-d")
            .arg(dir.path().join("index.sqlite"))
            .args(["-F", "-t", "0", "-g", "0", "-v"])
            .arg(&served)
            .env("LD_PRELOAD", &shim)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut server = RealServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
            port,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        for build_id in ready {
            let path = format!("/buildid/{}/debuginfo", hex(build_id));
            while http_status(port, &path) != Some(200) {
                if let Ok(Some(status)) = server.child.try_wait() {
                    panic!("debuginfod exited ({status}): {}", server.log());
                }
                assert!(
                    Instant::now() < deadline,
                    "{path} not served after 60 s: {}",
                    server.log()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let addresses = support::listening_addresses(port);
        assert!(!addresses.is_empty(), "nothing listens on {port}");
        for address in &addresses {
            assert!(
                address == "0100007F" || address == "0000000000000000FFFF00000100007F",
                "debuginfod listens on {address} (kernel hex), not 127.0.0.1 only"
            );
        }
        Some(server)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("debuginfod.log")).unwrap_or_default()
    }

    /// Stops the server (the child this test started, by its pid).
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RealServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn real_debuginfod_server_serves_what_the_local_debug_files_would() {
    let test = "real_debuginfod_server_serves_what_the_local_debug_files_would";
    let program = testdata("bin/c-gcc-O2-g-dwarf4");
    let stripped = testdata("bin/c-gcc-O2-g-dwarf4.stripped-buildid");
    let debug = committed_debug_file(&stripped);
    let dwz_a = testdata("bin/c-dwz-a");
    let dwz_a_debug = committed_debug_file(&dwz_a);
    let dwz_common = testdata("debug/.dwz/stacksym-c-dwz.debug");
    let build_id = build_id_of(&stripped);
    let dwz_common_id = ElfFile::open(&dwz_common)
        .unwrap()
        .build_id()
        .unwrap()
        .to_vec();
    let Some(debuginfod_find) = tool(test, "debuginfod-find", "debuginfod") else {
        return;
    };
    let Some(mut server) = RealServer::start(
        test,
        &[
            (&stripped, "c-gcc-O2-g-dwarf4"),
            (&debug, "c-gcc-O2-g-dwarf4.debug"),
            (&dwz_a, "c-dwz-a"),
            (&dwz_a_debug, "c-dwz-a.debug"),
            (&dwz_common, "stacksym-c-dwz.debug"),
        ],
        &[&build_id, &build_id_of(&dwz_a), &dwz_common_id],
    ) else {
        return;
    };

    // The stripped program, its debug file only on the server, answers as its unstripped
    // twin (same link, same build-id) does from its own DWARF: lines and inlined frames.
    let addrs = function_addrs(&program);
    let twin = answers(&symbolize(&local_only(Vec::new()), &program, &addrs));
    let inlined = twin
        .iter()
        .filter(|(_, frames)| frames.iter().any(|f| f.4))
        .count();
    assert!(inlined > 0, "the twin has inlined frames to compare");
    let cache = tempfile::tempdir().unwrap();
    let symbolizer = remote_only(config(&[&server.url], cache.path()));
    let symbols = symbolize(&symbolizer, &stripped, &addrs);
    assert_no_debug_error(&symbols);
    assert_eq!(answers(&symbols), twin);
    assert_eq!(symbolizer.stats().debuginfod.downloads, 1);

    // The cached file is the one debuginfod-find fetches into its own cache.
    let find_cache = tempfile::tempdir().unwrap();
    let out = Command::new(&debuginfod_find)
        .args(["debuginfo", &hex(&build_id)])
        .env("DEBUGINFOD_URLS", &server.url)
        .env("DEBUGINFOD_CACHE_PATH", find_cache.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "debuginfod-find: {out:?}");
    let found = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let ours = cache.path().join(hex(&build_id)).join("debuginfo");
    assert_eq!(
        found,
        find_cache.path().join(hex(&build_id)).join("debuginfo"),
        "the same cache layout"
    );
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&found).unwrap());

    // Source::BuildId, no local file at all: the executable, then its debug file.
    let by_id_cache = tempfile::tempdir().unwrap();
    let by_id = remote_only(config(&[&server.url], by_id_cache.path()));
    let symbols = by_id
        .symbolize(
            &Source::BuildId {
                build_id: &build_id,
            },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        )
        .unwrap();
    assert_eq!(answers(&symbols), twin);
    let offsets: Vec<u64> = addrs
        .iter()
        .map(|&a| support::readelf_file_offset(&program, a))
        .collect();
    let by_offset = by_id
        .symbolize(
            &Source::BuildId {
                build_id: &build_id,
            },
            Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&offsets)),
        )
        .unwrap();
    assert_eq!(
        answers(&by_offset),
        twin,
        "file offsets need the executable"
    );
    let stats = by_id.stats().debuginfod;
    assert_eq!(stats.downloads, 2, "executable and debuginfo: {stats:?}");
    assert_eq!(
        std::fs::read(by_id_cache.path().join(hex(&build_id)).join("executable")).unwrap(),
        std::fs::read(&stripped).unwrap()
    );

    // A dwz-compressed debug file: its supplementary file comes by its own build-id.
    let dwz_addrs = function_addrs(&dwz_a_debug);
    let local = answers(&symbolize(
        &local_only(vec![testdata("debug")]),
        &dwz_a,
        &dwz_addrs,
    ));
    let remote = symbolize(&symbolizer, &dwz_a, &dwz_addrs);
    assert_no_debug_error(&remote);
    assert_eq!(answers(&remote), local);
    assert!(
        cache
            .path()
            .join(hex(&dwz_common_id))
            .join("debuginfo")
            .is_file(),
        "the supplementary file was fetched by its build-id"
    );

    // The server stopped: the cache answers.
    server.stop();
    assert_eq!(http_status(server.port, "/metrics"), None, "stopped");
    let offline = remote_only(config(&[&server.url], cache.path()));
    let symbols = symbolize(&offline, &stripped, &addrs);
    assert_no_debug_error(&symbols);
    assert_eq!(answers(&symbols), twin);
    let stats = offline.stats().debuginfod;
    assert_eq!((stats.hits, stats.downloads), (1, 0));
}

// ---------------------------------------------------------------------------------------
// Bad input

/// No network unless asked: `DEBUGINFOD_URLS` names a working server, and the default
/// builder still makes no request (a root tracer on Fedora or Ubuntu, where the variable is
/// set system-wide, must not fetch inside `symbolize()`); told to read the environment, the
/// same child fetches.
#[test]
fn the_default_builder_ignores_debuginfod_urls() {
    let (binary, debug) = c_buildid();
    let server = FakeServer::start(Reply::File(debug));
    let cache = tempfile::tempdir().unwrap();
    let addrs = function_addrs(&binary);
    let exe = std::env::current_exe().unwrap();
    for (role, want_downloads) in [("default", 0), ("environment", 1)] {
        let mut envs = child_env(&binary, &addrs, "unused", Path::new("unused"));
        envs.push(("DEBUGINFOD_URLS".into(), server.url.clone()));
        envs.push((
            "DEBUGINFOD_CACHE_PATH".into(),
            cache.path().display().to_string(),
        ));
        let out = finish(spawn_child_with(role, &envs, &exe));
        assert_eq!(reported(&out, "downloads"), want_downloads, "{role}: {out}");
    }
    assert_eq!(
        server.requests().len(),
        1,
        "only the child told to read the environment"
    );
}

#[test]
fn hostile_urls_in_the_environment_are_dropped() {
    let (binary, debug) = c_buildid();
    let server = FakeServer::start(Reply::File(debug));
    let cache = tempfile::tempdir().unwrap();
    let addrs = function_addrs(&binary);
    let exe = std::env::current_exe().unwrap();
    let hostile = "127.0.0.1:1/noscheme file:///etc/passwd ftp://127.0.0.1:1/ \"http://127.0.0.1:1\" gopher://x";
    for (urls, want_downloads) in [
        (format!("{hostile}\t\n  {}/with path   ", server.url), 1),
        (hostile.to_string(), 0),
    ] {
        let mut envs = child_env(&binary, &addrs, "unused", Path::new("unused"));
        envs.push(("DEBUGINFOD_URLS".into(), urls.clone()));
        envs.push((
            "DEBUGINFOD_CACHE_PATH".into(),
            cache.path().display().to_string(),
        ));
        envs.push(("DEBUGINFOD_TIMEOUT".into(), "soon".into()));
        let out = finish(spawn_child_with("environment", &envs, &exe));
        assert_eq!(
            reported(&out, "downloads"),
            want_downloads,
            "{urls:?}: {out}"
        );
        assert!(out.contains("error=None"), "{urls:?}: {out}");
    }
    let id = hex(&build_id_of(&binary));
    assert_eq!(
        server.requests(),
        [format!("/with/buildid/{id}/debuginfo")],
        "only the http URL was asked, once, with its path kept"
    );
}

#[test]
fn a_cache_path_that_is_a_file_warns_once_and_fetches_uncached() {
    capture_warnings();
    let (binary, debug) = c_buildid();
    let addrs = function_addrs(&binary);
    let reference = c_buildid_reference(&addrs);
    let server = FakeServer::start(Reply::File(debug));
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("cache-is-a-file");
    std::fs::write(&not_a_dir, b"keep me").unwrap();
    let symbolizer = remote_only(config(&[&server.url], &not_a_dir));
    let symbols = symbolize(&symbolizer, &binary, &addrs);
    assert_no_debug_error(&symbols);
    assert_eq!(answers(&symbols), reference);
    let id = hex(&build_id_of(&binary));
    let url = format!("{}/buildid/{id}/debuginfo", server.url);
    assert_eq!(
        symbols.debug_file(),
        Some(Path::new(&url)),
        "named by its URL"
    );
    // Another lookup through the same unusable cache: no second warning.
    let other = symbolizer.symbolize(
        &Source::BuildId {
            build_id: &[0x12; 20],
        },
        Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
    );
    assert!(other.is_err(), "the server's file has another build-id");
    let warned = warnings_mentioning(&not_a_dir.display().to_string());
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(std::fs::read(&not_a_dir).unwrap(), b"keep me");
    assert_eq!(symbolizer.stats().debuginfod.downloads, 1);
}

#[test]
fn a_read_only_cache_dir_warns_once_and_caches_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let (binary, debug) = c_buildid();
    let addrs = function_addrs(&binary);
    let server = FakeServer::start(Reply::File(debug));
    // World-readable, so that another user can run what is in it (see below).
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = cache.join("probe");
    let privileged = std::fs::write(&probe, b"").is_ok();
    let exe = std::env::current_exe().unwrap();
    let child = if privileged {
        // Root writes through the mode bits: run the lookup as `nobody`, from copies it
        // can read and run (the test binary may sit in a directory only root can enter).
        std::fs::remove_file(&probe).unwrap();
        let own_exe = dir.path().join("debuginfod-test");
        let own_binary = dir.path().join("c-buildid");
        std::fs::copy(&exe, &own_exe).unwrap();
        std::fs::copy(&binary, &own_binary).unwrap();
        let envs = child_env(&own_binary, &addrs, &server.url, &cache);
        let mut command = child_command("readonly", &envs, &own_exe);
        std::os::unix::process::CommandExt::uid(&mut command, 65534);
        std::os::unix::process::CommandExt::gid(&mut command, 65534);
        command.spawn().expect("runs as nobody")
    } else {
        let envs = child_env(&binary, &addrs, &server.url, &cache);
        spawn_child_with("readonly", &envs, &exe)
    };
    let out = finish(child);
    assert!(reported(&out, "frames") > 0, "lookups work: {out}");
    assert!(out.contains("error=None"), "{out}");
    assert_eq!(reported(&out, "warnings"), 1, "{out}");
    assert_eq!(reported(&out, "cached"), 0, "{out}");
    assert_eq!(listing(&cache), [], "nothing cached");
    assert_eq!(reported(&out, "downloads"), 1, "{out}");
    if privileged {
        assert_eq!(reported(&out, "uid"), 65534, "ran as nobody: {out}");
    }
}

// ---------------------------------------------------------------------------------------
// The example

#[test]
fn example_takes_debuginfod_urls_and_no_debuginfod() {
    let (binary, debug) = c_buildid();
    let server = FakeServer::start(Reply::File(debug));
    let cache = tempfile::tempdir().unwrap();
    let addr = format!("{:#x}", function_addrs(&binary)[0]);
    let run = |args: &[&str], env_urls: Option<&str>| {
        let mut command = support::tool("symbolize");
        command
            .args(["--debug-file-directory", "/nonexistent", "-e"])
            .arg(&binary)
            .args(args)
            .arg(&addr)
            .env("DEBUGINFOD_CACHE_PATH", cache.path())
            .env_remove("DEBUGINFOD_URLS");
        if let Some(urls) = env_urls {
            command.env("DEBUGINFOD_URLS", urls);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let local = {
        let out = support::tool("symbolize")
            .arg("--debug-file-directory")
            .arg(testdata("debug"))
            .arg("-e")
            .arg(&binary)
            .arg(&addr)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(local.contains("demo.c"), "{local}");
    assert!(!run(&["--no-debuginfod"], Some(&server.url)).contains("demo.c"));
    assert_eq!(
        server.requests().len(),
        0,
        "--no-debuginfod wins over the environment"
    );
    assert_eq!(run(&["--debuginfod", &server.url], None), local);
    assert_eq!(server.requests().len(), 1);
}
