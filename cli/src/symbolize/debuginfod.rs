//! `--debuginfod URL` and `--no-debuginfod`: the library's debuginfod config from the
//! environment (`DEBUGINFOD_URLS`, `DEBUGINFOD_CACHE_PATH`, ...) and the command line, and a
//! progress bar on stderr for downloads when stderr is a terminal.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressStyle};
use stacksym::debuginfo::{DebuginfodConfig, Progress};

/// The config: none with `--no-debuginfod`; else the environment's, with the `--debuginfod`
/// URLs tried before `DEBUGINFOD_URLS`'.
pub fn config(urls: &[String], off: bool) -> DebuginfodConfig {
    if off {
        return DebuginfodConfig::new();
    }
    let from_env = DebuginfodConfig::from_env();
    let mut all = urls.to_vec();
    all.extend(from_env.url_list().iter().cloned());
    let config = from_env.urls(all);
    if std::io::stderr().is_terminal() {
        config.progress(progress_bar())
    } else {
        config
    }
}

/// A callback that draws one bar per download (a new URL starts a new bar).
fn progress_bar() -> Arc<stacksym::debuginfo::ProgressFn> {
    let current: Mutex<Option<(String, ProgressBar)>> = Mutex::new(None);
    Arc::new(move |progress: &Progress<'_>| {
        let mut current = current.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_none_or(|(url, _)| url != progress.url) {
            if let Some((_, old)) = current.take() {
                old.finish_and_clear();
            }
            let bar = match progress.total {
                Some(total) => ProgressBar::new(total).with_style(
                    ProgressStyle::with_template(
                        "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                ),
                None => ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template("{msg} {spinner} {bytes} {bytes_per_sec}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                ),
            };
            bar.set_message(format!("debuginfod {}", progress.url));
            *current = Some((progress.url.to_string(), bar));
        }
        if let Some((_, bar)) = current.as_ref() {
            bar.set_position(progress.bytes);
            if progress.total == Some(progress.bytes) {
                bar.finish_and_clear();
            }
        }
    })
}
