//! A debuginfod client (feature `debuginfod`): fetches a debug file (`debuginfo`) or a binary
//! (`executable`) by its GNU build-id from the servers the user names, into the on-disk cache
//! gdb, perf and elfutils' `debuginfod-find` share.
//!
//! Configuration follows elfutils ([`DebuginfodConfig::from_env`]): `DEBUGINFOD_URLS`
//! (servers, space-separated, tried in order; unset or empty: no lookups at all),
//! `DEBUGINFOD_CACHE_PATH` (default `$XDG_CACHE_HOME/debuginfod_client`, else
//! `~/.cache/debuginfod_client`), `DEBUGINFOD_TIMEOUT`, `DEBUGINFOD_MAXSIZE`,
//! `DEBUGINFOD_MAXTIME`. A [`DebuginfodConfig`] built in code reads no environment.
//!
//! The cache holds `<cache>/<build-id>/debuginfo` and `<cache>/<build-id>/executable`, as
//! elfutils lays it out, so a file one tool fetched is found by the others. A lookup:
//!
//! 1. refuses a build-id shorter than 2 or longer than 64 bytes before it becomes a path or
//!    a URL (it is written in lowercase hex, so nothing else can reach either);
//! 2. takes the cached file if it is a regular file (a symlink is not followed: it is removed
//!    and the file fetched again) that is ELF with the build-id asked for; a cached file that
//!    is not is removed and fetched again;
//! 3. answers "not found" while an empty file (elfutils' negative-cache marker, left by a
//!    failed lookup) is younger than [`DebuginfodConfig::negative_ttl`] (600 s, as elfutils);
//! 4. otherwise locks the build-id's cache directory (`flock`, so threads of one process and
//!    separate processes download a file once: the others wait, then find it cached), asks
//!    each server in turn for `GET <url>/buildid/<hex>/<kind>`, streams the body into a
//!    temporary file in the same directory under the size cap and the timeouts, following
//!    at most [`DebuginfodConfig::max_redirects`] redirects, checks that the file is ELF
//!    with the build-id asked for, and renames it into place (atomic: a reader sees the whole
//!    file or none). When every server fails, the empty marker is left instead.
//!
//! A cache that cannot be written (a read-only directory, a path that is a file, no home
//! directory) does not stop lookups: files are downloaded into memory, checked the same way
//! and used uncached (up to [`MAX_UNCACHED_BYTES`]), after one `log::warn!` per client.
//!
//! Only `http` and `https` URLs are used; others (`file://`, no scheme) are dropped with a
//! `log::warn!`. TLS is rustls with the bundled Mozilla roots (`webpki-roots`); proxies are
//! taken from `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` and `NO_PROXY`, as curl does for elfutils.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::elf::{hex, ElfFile};
use crate::error::{Error, Result};

/// elfutils' default for `DEBUGINFOD_TIMEOUT`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);
/// elfutils' default time a failed lookup is remembered (its `cache_miss_s`).
pub const DEFAULT_NEGATIVE_TTL: Duration = Duration::from_secs(600);
/// Redirects followed per request by default.
pub const DEFAULT_MAX_REDIRECTS: u32 = 8;
/// The largest file downloaded into memory when the cache cannot be written (a smaller
/// [`DebuginfodConfig::max_size`] still applies).
pub const MAX_UNCACHED_BYTES: u64 = 1 << 30;
/// Build-ids are at least this many bytes (gdb's `.build-id/xx/rest` needs a rest).
const MIN_BUILD_ID_BYTES: usize = 2;
/// elfutils' `MAX_BUILD_ID_BYTES`.
const MAX_BUILD_ID_BYTES: usize = 64;

/// What is fetched for a build-id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// The separate debug file (`/buildid/<hex>/debuginfo`).
    Debuginfo,
    /// The binary itself (`/buildid/<hex>/executable`).
    Executable,
}

impl FileKind {
    /// The name in URLs and in the cache, as elfutils spells it.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Debuginfo => "debuginfo",
            FileKind::Executable => "executable",
        }
    }
}

/// How far a download has come, passed to the [progress callback](DebuginfodConfig::progress).
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The URL being downloaded.
    pub url: &'a str,
    /// Bytes received so far.
    pub bytes: u64,
    /// The size the server announced (`Content-Length`), if it did.
    pub total: Option<u64>,
}

/// The progress callback's type: called from the thread that downloads, after each chunk.
pub type ProgressFn = dyn Fn(&Progress<'_>) + Send + Sync;

/// Where and how a [`Debuginfod`] client fetches. Built in code it reads no environment;
/// [`DebuginfodConfig::from_env`] reads elfutils' variables. Set it on
/// [`crate::SymbolizerBuilder::debuginfod`], which wins over the environment.
///
/// ```
/// use std::time::Duration;
/// use stacksym::debuginfo::DebuginfodConfig;
/// let config = DebuginfodConfig::new()
///     .urls(vec!["https://debuginfod.debian.net".into()])
///     .cache_dir("/tmp/my-debuginfod-cache".into())
///     .timeout(Duration::from_secs(10))
///     .max_size(Some(512 << 20));
/// assert_eq!(config.url_list().len(), 1);
/// ```
#[derive(Clone)]
pub struct DebuginfodConfig {
    urls: Vec<String>,
    cache_dir: Option<PathBuf>,
    timeout: Duration,
    max_size: Option<u64>,
    max_time: Option<Duration>,
    negative_ttl: Duration,
    max_redirects: u32,
    progress: Option<Arc<ProgressFn>>,
}

impl std::fmt::Debug for DebuginfodConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebuginfodConfig")
            .field("urls", &self.urls)
            .field("cache_dir", &self.cache_dir)
            .field("timeout", &self.timeout)
            .field("max_size", &self.max_size)
            .field("max_time", &self.max_time)
            .field("negative_ttl", &self.negative_ttl)
            .field("max_redirects", &self.max_redirects)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl Default for DebuginfodConfig {
    fn default() -> Self {
        DebuginfodConfig::new()
    }
}

impl DebuginfodConfig {
    /// No servers (so no lookups), the default cache directory (`$XDG_CACHE_HOME` or
    /// `$HOME/.cache`, then `debuginfod_client`), elfutils' defaults otherwise: a 90 s
    /// timeout, no size or total-time cap, failures remembered 600 s.
    pub fn new() -> Self {
        DebuginfodConfig {
            urls: Vec::new(),
            cache_dir: default_cache_dir(),
            timeout: DEFAULT_TIMEOUT,
            max_size: None,
            max_time: None,
            negative_ttl: DEFAULT_NEGATIVE_TTL,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            progress: None,
        }
    }

    /// [`DebuginfodConfig::new`] with elfutils' environment variables applied:
    /// `DEBUGINFOD_URLS` (whitespace-separated), `DEBUGINFOD_CACHE_PATH`,
    /// `DEBUGINFOD_TIMEOUT` (seconds, > 0), `DEBUGINFOD_MAXSIZE` (bytes; 0: no cap),
    /// `DEBUGINFOD_MAXTIME` (seconds; 0: no cap). A value that does not parse is ignored with
    /// a `log::warn!`.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// [`DebuginfodConfig::from_env`] over any variable lookup (the tests' environment).
    fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Self {
        let mut config = DebuginfodConfig::new();
        if let Some(urls) = var("DEBUGINFOD_URLS") {
            config.urls = urls
                .to_string_lossy()
                .split_whitespace()
                .map(str::to_string)
                .collect();
        }
        if let Some(path) = var("DEBUGINFOD_CACHE_PATH").filter(|p| !p.is_empty()) {
            config.cache_dir = Some(PathBuf::from(path));
        }
        let seconds = |name: &str| -> Option<u64> {
            let value = var(name)?;
            match value.to_string_lossy().trim().parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    log::warn!("ignoring {name}={value:?}: not a whole number");
                    None
                }
            }
        };
        if let Some(n) = seconds("DEBUGINFOD_TIMEOUT").filter(|&n| n > 0) {
            config.timeout = Duration::from_secs(n);
        }
        if let Some(n) = seconds("DEBUGINFOD_MAXSIZE") {
            config.max_size = (n > 0).then_some(n);
        }
        if let Some(n) = seconds("DEBUGINFOD_MAXTIME") {
            config.max_time = (n > 0).then(|| Duration::from_secs(n));
        }
        config
    }

    /// The servers, tried in order (`DEBUGINFOD_URLS`). Only `http://` and `https://` URLs
    /// are used; the others are dropped with a `log::warn!` when the client is made.
    pub fn urls(mut self, urls: Vec<String>) -> Self {
        self.urls = urls;
        self
    }

    /// The servers as configured (before [`Debuginfod::new`] drops unusable ones).
    pub fn url_list(&self) -> &[String] {
        &self.urls
    }

    /// The cache directory (`DEBUGINFOD_CACHE_PATH`).
    pub fn cache_dir(mut self, dir: PathBuf) -> Self {
        self.cache_dir = Some(dir);
        self
    }

    /// The cache directory, if there is one (none when no home directory is known).
    pub fn cache_path(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// How long to wait for a connection, for the response headers, and for each read of the
    /// body (`DEBUGINFOD_TIMEOUT`; default 90 s): a server that stalls that long fails.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest file downloaded, in bytes (`DEBUGINFOD_MAXSIZE`; default `None`: no cap).
    /// A larger announced size is refused before the body is read; a body that grows past
    /// it is cut off.
    pub fn max_size(mut self, bytes: Option<u64>) -> Self {
        self.max_size = bytes;
        self
    }

    /// The longest a whole download may take, redirects included (`DEBUGINFOD_MAXTIME`;
    /// default `None`: no cap).
    pub fn max_time(mut self, time: Option<Duration>) -> Self {
        self.max_time = time;
        self
    }

    /// How long a failed lookup's marker stops new attempts for that file (default 600 s,
    /// elfutils' `cache_miss_s`).
    pub fn negative_ttl(mut self, ttl: Duration) -> Self {
        self.negative_ttl = ttl;
        self
    }

    /// Redirects followed per request (default 8); one more is an error.
    pub fn max_redirects(mut self, count: u32) -> Self {
        self.max_redirects = count;
        self
    }

    /// A callback told of each download's progress.
    pub fn progress(mut self, callback: Arc<ProgressFn>) -> Self {
        self.progress = Some(callback);
        self
    }
}

/// `$XDG_CACHE_HOME/debuginfod_client`, else `$HOME/.cache/debuginfod_client` (elfutils'
/// order); relative values are ignored, as the XDG spec says.
fn default_cache_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(xdg) = absolute("XDG_CACHE_HOME") {
        return Some(xdg.join("debuginfod_client"));
    }
    absolute("HOME").map(|home| home.join(".cache").join("debuginfod_client"))
}

/// Why a configured server URL is not used ([`checked_url`]).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum BadUrl {
    #[error("no scheme (http:// or https://)")]
    NoScheme,
    #[error("scheme {0:?} is not http or https")]
    Scheme(String),
    #[error("{0:?} is not allowed in a URL")]
    Character(char),
    #[error("no host")]
    NoHost,
    #[error("a query or fragment cannot be a base URL")]
    QueryOrFragment,
}

/// `raw` as a server base URL (no trailing `/`), or why it cannot be one.
fn checked_url(raw: &str) -> std::result::Result<String, BadUrl> {
    let Some((scheme, rest)) = raw.split_once("://") else {
        return Err(BadUrl::NoScheme);
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(BadUrl::Scheme(scheme.to_string()));
    }
    if let Some(bad) = raw
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "\"<>\\^`{|}".contains(*c))
    {
        return Err(BadUrl::Character(bad));
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() {
        return Err(BadUrl::NoHost);
    }
    if rest.contains(['?', '#']) {
        return Err(BadUrl::QueryOrFragment);
    }
    Ok(raw.trim_end_matches('/').to_string())
}

/// `build_id` in lowercase hex, if its length is sane.
fn checked_build_id(build_id: &[u8], kind: FileKind) -> Result<String> {
    if (MIN_BUILD_ID_BYTES..=MAX_BUILD_ID_BYTES).contains(&build_id.len()) {
        return Ok(hex(build_id));
    }
    Err(Error::Debuginfod {
        path: PathBuf::from(format!("build-id {} ({})", hex(build_id), kind.name())),
        what: format!(
            "a build-id of {} bytes is not looked up (want {MIN_BUILD_ID_BYTES} to \
             {MAX_BUILD_ID_BYTES})",
            build_id.len()
        ),
    })
}

/// Counters of a [`Debuginfod`] client, to export as metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DebuginfodStats {
    /// Lookups answered by a file already in the cache.
    pub hits: u64,
    /// Lookups that found nothing: every server failed, or a failure marker was fresh.
    pub misses: u64,
    /// Files downloaded and checked.
    pub downloads: u64,
    /// Bytes received from servers (failed downloads included).
    pub bytes: u64,
    /// How long the last request to servers took (all servers tried, success or not).
    pub last_fetch: Option<Duration>,
}

/// A file a [`Debuginfod`] client found.
#[derive(Debug)]
pub struct Fetched {
    /// The opened file, checked: ELF with the build-id asked for. Its path is the cache
    /// entry, or the URL when the cache could not be written.
    pub elf: Arc<ElfFile>,
    /// The URL it was downloaded from now; `None` when it was in the cache already.
    pub downloaded_from: Option<String>,
}

/// A debuginfod client: the configuration, the HTTP agent (made on the first download) and
/// the counters. `Send + Sync`; one is shared by a symbolizer's lookups.
pub struct Debuginfod {
    urls: Vec<String>,
    config: DebuginfodConfig,
    agent: OnceLock<ureq::Agent>,
    /// Set once the cache was found unusable and said so.
    warned_cache: AtomicBool,
    hits: AtomicU64,
    misses: AtomicU64,
    downloads: AtomicU64,
    bytes: AtomicU64,
    last_fetch: Mutex<Option<Duration>>,
}

impl std::fmt::Debug for Debuginfod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Debuginfod")
            .field("urls", &self.urls)
            .field("cache_dir", &self.config.cache_dir)
            .field("stats", &self.stats())
            .finish()
    }
}

/// What the cache holds for one file.
enum CacheState {
    /// A checked file.
    Valid(Arc<ElfFile>),
    /// A failure marker this old (younger than the TTL).
    Negative(Duration),
    /// Nothing usable (a bad entry was removed if asked to).
    Absent,
}

/// Where a download goes.
enum Sink {
    /// A temporary file in the cache entry's directory.
    File { file: File, path: PathBuf },
    /// Memory, when the cache cannot be written.
    Memory(Vec<u8>),
}

impl Sink {
    /// Empties it for the next server's attempt.
    fn reset(&mut self) -> std::io::Result<()> {
        match self {
            Sink::File { file, .. } => {
                file.set_len(0)?;
                file.rewind()?;
                Ok(())
            }
            Sink::Memory(bytes) => {
                bytes.clear();
                Ok(())
            }
        }
    }

    fn write_all(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::File { file, .. } => file.write_all(chunk),
            Sink::Memory(bytes) => {
                bytes.extend_from_slice(chunk);
                Ok(())
            }
        }
    }

    /// Opens what was written as an ELF file, named `name` when it is in memory.
    fn open(&mut self, name: &str) -> Result<ElfFile> {
        match self {
            Sink::File { file, path } => {
                file.flush().map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                ElfFile::open(path.as_path())
            }
            Sink::Memory(bytes) => ElfFile::from_bytes(name, std::mem::take(bytes)),
        }
    }
}

impl Debuginfod {
    /// A client for `config`, or `None` when it names no usable server (then nothing is
    /// ever fetched). Unusable URLs are dropped with a `log::warn!` each.
    pub fn new(config: DebuginfodConfig) -> Option<Debuginfod> {
        let mut urls = Vec::new();
        for raw in &config.urls {
            match checked_url(raw) {
                Ok(url) => urls.push(url),
                Err(why) => log::warn!("debuginfod: ignoring server URL {raw:?}: {why}"),
            }
        }
        if urls.is_empty() {
            return None;
        }
        Some(Debuginfod {
            urls,
            config,
            agent: OnceLock::new(),
            warned_cache: AtomicBool::new(false),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            downloads: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            last_fetch: Mutex::new(None),
        })
    }

    /// The servers used, in order.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// The configuration.
    pub fn config(&self) -> &DebuginfodConfig {
        &self.config
    }

    /// The counters so far.
    pub fn stats(&self) -> DebuginfodStats {
        DebuginfodStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            downloads: self.downloads.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            last_fetch: *self
                .last_fetch
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// The file `kind` of `build_id`: from the cache, else from the first server that has
    /// it (see the module docs for the checks). An error says what each server
    /// answered, or that a recent failure is remembered.
    pub fn fetch(&self, build_id: &[u8], kind: FileKind) -> Result<Fetched> {
        let hex = checked_build_id(build_id, kind)?;
        let result = match self.entry_dir(&hex) {
            Ok(dir) => self.fetch_cached(&dir, &hex, build_id, kind),
            Err(why) => {
                self.warn_cache(&why);
                self.fetch_uncached(&hex, build_id, kind)
            }
        };
        let counter = match &result {
            Ok(Fetched {
                downloaded_from: Some(_),
                ..
            }) => &self.downloads,
            Ok(_) => &self.hits,
            Err(_) => &self.misses,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        result
    }

    /// `<cache>/<hex>`, created if needed; why not when the cache cannot hold it.
    fn entry_dir(&self, hex: &str) -> std::result::Result<PathBuf, CacheUnusable> {
        let Some(cache) = &self.config.cache_dir else {
            return Err(CacheUnusable::NoDirectory);
        };
        let dir = cache.join(hex);
        // Private, as elfutils makes them.
        let created = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir);
        if let Err(source) = created {
            return Err(CacheUnusable::Create { path: dir, source });
        }
        // An entry's directory that is a symlink could point anywhere; elfutils makes
        // plain directories.
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => Ok(dir),
            Ok(_) => Err(CacheUnusable::NotADirectory(dir)),
            Err(source) => Err(CacheUnusable::Inspect { path: dir, source }),
        }
    }

    fn warn_cache(&self, why: &CacheUnusable) {
        if !self.warned_cache.swap(true, Ordering::Relaxed) {
            log::warn!("debuginfod: files are fetched without caching: {why}");
        } else {
            log::debug!("debuginfod: not caching: {why}");
        }
    }

    /// The file through the cache entry directory `dir`.
    fn fetch_cached(
        &self,
        dir: &Path,
        hex: &str,
        build_id: &[u8],
        kind: FileKind,
    ) -> Result<Fetched> {
        let target = dir.join(kind.name());
        // Without the lock first: the common case is a file some tool fetched already.
        if let Some(answer) = self.cached_answer(&target, hex, build_id, kind, false) {
            return answer;
        }
        // One download per entry: another thread or process holding the lock is fetching
        // it; after it, the file (or the failure marker) is there.
        let lock = match File::open(dir).and_then(|lock| lock.lock().map(|()| lock)) {
            Ok(lock) => Some(lock),
            Err(e) => {
                log::debug!(
                    "debuginfod: cannot lock {} ({e}); fetching without the lock",
                    dir.display()
                );
                None
            }
        };
        if let Some(answer) = self.cached_answer(&target, hex, build_id, kind, true) {
            return answer;
        }
        let temp = dir.join(format!(
            ".{}.{}.{}.tmp",
            kind.name(),
            std::process::id(),
            next_temp_number()
        ));
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => file,
            Err(e) => {
                drop(lock);
                self.warn_cache(&CacheUnusable::Create {
                    path: temp,
                    source: e,
                });
                return self.fetch_uncached(hex, build_id, kind);
            }
        };
        let mut sink = Sink::File {
            file,
            path: temp.clone(),
        };
        let fetched = self.download(&mut sink, hex, build_id, kind, self.config.max_size);
        drop(sink);
        let result = match fetched {
            Ok((url, elf)) => {
                drop(elf);
                match std::fs::rename(&temp, &target) {
                    Ok(()) => ElfFile::open(&target).map(|elf| Fetched {
                        elf: Arc::new(elf),
                        downloaded_from: Some(url),
                    }),
                    Err(e) => Err(Error::Io {
                        path: target.clone(),
                        source: e,
                    }),
                }
            }
            Err(e) => {
                // elfutils' failure marker: an empty file at the entry's place.
                if let Err(marker_error) = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                {
                    log::debug!(
                        "debuginfod: cannot leave a failure marker at {}: {marker_error}",
                        target.display()
                    );
                }
                Err(e)
            }
        };
        if let Err(e) = std::fs::remove_file(&temp) {
            if e.kind() != std::io::ErrorKind::NotFound {
                log::debug!("debuginfod: cannot remove {}: {e}", temp.display());
            }
        }
        drop(lock);
        result
    }

    /// The answer the cache gives for `target`, if it gives one: a checked file, or "not
    /// found" while a failure marker is fresh. `None`: download it (with `remove_bad`, a
    /// bad entry was removed first).
    fn cached_answer(
        &self,
        target: &Path,
        hex: &str,
        build_id: &[u8],
        kind: FileKind,
        remove_bad: bool,
    ) -> Option<Result<Fetched>> {
        match self.cache_state(target, build_id, remove_bad) {
            CacheState::Valid(elf) => Some(Ok(Fetched {
                elf,
                downloaded_from: None,
            })),
            CacheState::Negative(age) => Some(Err(Error::Debuginfod {
                path: entry_name(hex, kind),
                what: format!(
                    "not found: a lookup {} s ago failed (marker {}; tried again after {} s)",
                    age.as_secs(),
                    target.display(),
                    self.config.negative_ttl.as_secs()
                ),
            })),
            CacheState::Absent => None,
        }
    }

    fn cache_state(&self, target: &Path, build_id: &[u8], remove_bad: bool) -> CacheState {
        let metadata = match std::fs::symlink_metadata(target) {
            Ok(metadata) => metadata,
            Err(_) => return CacheState::Absent,
        };
        let remove = |why: &str| {
            if remove_bad {
                log::debug!(
                    "debuginfod: removing cache entry {}: {why}",
                    target.display()
                );
                if let Err(e) = std::fs::remove_file(target) {
                    log::debug!("debuginfod: cannot remove {}: {e}", target.display());
                }
            }
            CacheState::Absent
        };
        if !metadata.file_type().is_file() {
            // A symlink is not followed: the entry could point anywhere.
            return remove("not a regular file (a symlink is not followed)");
        }
        if metadata.len() == 0 {
            let age = metadata
                .modified()
                .ok()
                .and_then(|modified| SystemTime::now().duration_since(modified).ok());
            return match age {
                Some(age) if age < self.config.negative_ttl => CacheState::Negative(age),
                _ => remove("an expired failure marker"),
            };
        }
        match ElfFile::open(target).and_then(|elf| check_build_id(elf, build_id)) {
            Ok(elf) => CacheState::Valid(Arc::new(elf)),
            Err(e) => remove(&format!("{e}; fetching it again")),
        }
    }

    /// The file downloaded into memory (the cache cannot be written).
    fn fetch_uncached(&self, hex: &str, build_id: &[u8], kind: FileKind) -> Result<Fetched> {
        let cap = self
            .config
            .max_size
            .map_or(MAX_UNCACHED_BYTES, |m| m.min(MAX_UNCACHED_BYTES));
        let mut sink = Sink::Memory(Vec::new());
        let (url, elf) = self.download(&mut sink, hex, build_id, kind, Some(cap))?;
        Ok(Fetched {
            elf: Arc::new(elf),
            downloaded_from: Some(url),
        })
    }

    /// Asks each server in turn; the first whose file passes the checks wins. The error
    /// lists every server's failure.
    fn download(
        &self,
        sink: &mut Sink,
        hex: &str,
        build_id: &[u8],
        kind: FileKind,
        max_size: Option<u64>,
    ) -> Result<(String, ElfFile)> {
        let started = Instant::now();
        let mut failures = Vec::new();
        let mut answer = None;
        for base in &self.urls {
            let url = format!("{base}/buildid/{hex}/{}", kind.name());
            if let Err(e) = sink.reset() {
                failures.push(format!("{url}: cannot write the download: {e}"));
                break;
            }
            match self.get(&url, sink, max_size) {
                Ok(()) => {}
                Err(why) => {
                    log::debug!("debuginfod: {url}: {why}");
                    failures.push(format!("{url}: {why}"));
                    continue;
                }
            }
            match sink
                .open(&url)
                .and_then(|elf| check_build_id(elf, build_id))
            {
                Ok(elf) => {
                    answer = Some((url, elf));
                    break;
                }
                Err(e) => {
                    log::debug!("debuginfod: {url}: {e}");
                    failures.push(format!("{url}: the file is refused: {e}"));
                }
            }
        }
        *self
            .last_fetch
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(started.elapsed());
        answer.ok_or_else(|| Error::Debuginfod {
            path: entry_name(hex, kind),
            what: failures.join("; "),
        })
    }

    /// `GET url` into `sink` under the caps; why not.
    fn get(
        &self,
        url: &str,
        sink: &mut Sink,
        max_size: Option<u64>,
    ) -> std::result::Result<(), FetchFailure> {
        let agent = self.agent.get_or_init(|| self.make_agent());
        let response = agent.get(url).call().map_err(FetchFailure::Request)?;
        let status = response.status();
        if status.as_u16() == 404 {
            return Err(FetchFailure::NotFound);
        }
        if !status.is_success() {
            return Err(FetchFailure::Status(status));
        }
        let total = response.body().content_length();
        if let (Some(total), Some(max)) = (total, max_size) {
            if total > max {
                return Err(FetchFailure::TooLarge { size: total, max });
            }
        }
        let mut reader = response.into_body().into_reader();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut received: u64 = 0;
        loop {
            let n = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(FetchFailure::Cut {
                        received,
                        total,
                        source,
                    })
                }
            };
            received += n as u64;
            self.bytes.fetch_add(n as u64, Ordering::Relaxed);
            if let Some(max) = max_size {
                if received > max {
                    return Err(FetchFailure::GrewPastCap { max });
                }
            }
            sink.write_all(&buffer[..n]).map_err(FetchFailure::Write)?;
            if let Some(progress) = &self.config.progress {
                progress(&Progress {
                    url,
                    bytes: received,
                    total,
                });
            }
        }
        match total {
            Some(total) if received != total => Err(FetchFailure::Truncated { received, total }),
            _ => Ok(()),
        }
    }

    fn make_agent(&self) -> ureq::Agent {
        let timeout = Some(self.config.timeout);
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(self.config.max_redirects)
            .max_redirects_will_error(true)
            .timeout_connect(timeout)
            .timeout_recv_response(timeout)
            .timeout_per_read(timeout)
            .timeout_global(self.config.max_time)
            .user_agent(concat!("stacksym/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent()
    }
}

/// How errors name a cache entry: `build-id <hex> (<kind>)`.
fn entry_name(hex: &str, kind: FileKind) -> PathBuf {
    PathBuf::from(format!("build-id {hex} ({})", kind.name()))
}

/// `elf` if its build-id is `want`.
fn check_build_id(elf: ElfFile, want: &[u8]) -> Result<ElfFile> {
    let refusal = match elf.build_id() {
        Some(have) if have == want => return Ok(elf),
        Some(have) => format!("its build-id is {}, not {}", hex(have), hex(want)),
        None => format!("it has no build-id (want {})", hex(want)),
    };
    Err(Error::Debuginfod {
        path: elf.path().to_path_buf(),
        what: refusal,
    })
}

/// Why the on-disk cache cannot hold a build-id's files; files are then fetched into memory
/// ([`Debuginfod::warn_cache`] says why, once).
#[derive(Debug, thiserror::Error)]
enum CacheUnusable {
    #[error("no cache directory (set DEBUGINFOD_CACHE_PATH or HOME)")]
    NoDirectory,
    #[error("cannot create {}: {source}", path.display())]
    Create { path: PathBuf, source: io::Error },
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("{}: {source}", path.display())]
    Inspect { path: PathBuf, source: io::Error },
}

/// Why one server's answer to a `GET` was not taken ([`Debuginfod::get`]); the lookup's
/// error lists each server's.
#[derive(Debug, thiserror::Error)]
enum FetchFailure {
    /// No answer: the connection, TLS, a timeout, too many redirects.
    #[error("{0}")]
    Request(ureq::Error),
    #[error("not found (HTTP 404)")]
    NotFound,
    #[error("HTTP {0}")]
    Status(ureq::http::StatusCode),
    #[error("the file is {size} bytes, more than the {max}-byte cap")]
    TooLarge { size: u64, max: u64 },
    #[error("the body grew past the {max}-byte cap; download stopped")]
    GrewPastCap { max: u64 },
    /// Reading the body failed after `received` bytes.
    #[error("{}", cut_message(*received, *total, source))]
    Cut {
        received: u64,
        total: Option<u64>,
        source: io::Error,
    },
    #[error("truncated: {received} of the announced {total} bytes")]
    Truncated { received: u64, total: u64 },
    #[error("cannot write the download: {0}")]
    Write(io::Error),
}

fn cut_message(received: u64, total: Option<u64>, source: &io::Error) -> String {
    match total {
        Some(total) => format!("truncated: {received} of the announced {total} bytes ({source})"),
        None => format!("after {received} bytes: {source}"),
    }
}

/// A number for temporary file names, distinct within the process.
fn next_temp_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    #[test]
    fn only_http_and_https_urls_are_used() {
        assert_eq!(
            checked_url("http://127.0.0.1:8002/").unwrap(),
            "http://127.0.0.1:8002"
        );
        assert_eq!(
            checked_url("https://debuginfod.debian.net").unwrap(),
            "https://debuginfod.debian.net"
        );
        for bad in [
            "debuginfod.debian.net",
            "file:///etc",
            "ftp://x",
            "http://",
            "http:///path",
            "http://a b",
            "http://a\u{7}",
            "http://a/?q=1",
            "",
        ] {
            assert!(checked_url(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn build_ids_of_a_sane_length_only() {
        assert_eq!(
            checked_build_id(&[0xab, 0x01], FileKind::Debuginfo).unwrap(),
            "ab01"
        );
        assert!(checked_build_id(&[0xab], FileKind::Debuginfo).is_err());
        assert!(checked_build_id(&[0; 65], FileKind::Executable).is_err());
        assert_eq!(
            checked_build_id(&[0xff; 64], FileKind::Executable)
                .unwrap()
                .len(),
            128
        );
    }

    #[test]
    fn environment_variables_as_elfutils_reads_them() {
        let vars: HashMap<&str, &str> = [
            (
                "DEBUGINFOD_URLS",
                " http://a:1  https://b/ file:///x\tnoscheme ",
            ),
            ("DEBUGINFOD_CACHE_PATH", "/tmp/c"),
            ("DEBUGINFOD_TIMEOUT", "7"),
            ("DEBUGINFOD_MAXSIZE", "1000"),
            ("DEBUGINFOD_MAXTIME", "0"),
        ]
        .into_iter()
        .collect();
        let config = DebuginfodConfig::from_vars(|name| vars.get(name).map(OsString::from));
        assert_eq!(
            config.url_list(),
            ["http://a:1", "https://b/", "file:///x", "noscheme"]
        );
        assert_eq!(config.cache_path(), Some(Path::new("/tmp/c")));
        assert_eq!(config.timeout, Duration::from_secs(7));
        assert_eq!(config.max_size, Some(1000));
        assert_eq!(config.max_time, None);
        let client = Debuginfod::new(config).unwrap();
        assert_eq!(client.urls(), ["http://a:1", "https://b"]);

        let empty = DebuginfodConfig::from_vars(|name| {
            (name == "DEBUGINFOD_URLS").then(|| OsString::from("  "))
        });
        assert!(Debuginfod::new(empty).is_none(), "no URL, no client");
        let garbage = DebuginfodConfig::from_vars(|name| {
            (name == "DEBUGINFOD_TIMEOUT").then(|| OsString::from("soon"))
        });
        assert_eq!(garbage.timeout, DEFAULT_TIMEOUT);
    }
}
