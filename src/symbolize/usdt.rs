//! USDT probes through the façade: [`Symbolizer::find_usdt`] lists the probes
//! ([`crate::usdt::read_probes`]) of a file, or of every file a live process maps (opened
//! as [`Source::Process`] opens them: through the process's root, so a container's own
//! files), whose `provider:name` matches a glob, with their absolute addresses there.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::addr::AbsAddr;
use crate::error::{Error, Result};
use crate::process::{FileKey, Process, ProcessMaps};
use crate::symbolize::finder::NamePattern;
use crate::symbolize::{Source, Symbolizer};
use crate::usdt::{read_probes, Probe};

/// One probe [`Symbolizer::find_usdt`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsdtMatch {
    /// The probe, as its file states it (addresses and file offsets in the file).
    pub probe: Probe,
    /// The file: the path given, or for a process the path the process names it by (its
    /// `/proc/PID/maps` line; from the host, a container's file is under `/proc/PID/root`).
    pub file: PathBuf,
    /// For a process: the probe's absolute address in it. A file mapped twice gives a match
    /// per mapping.
    pub abs_addr: Option<AbsAddr>,
    /// For a process: the semaphore's absolute address (the same load of the file), if the
    /// probe has a semaphore.
    pub semaphore_abs_addr: Option<AbsAddr>,
}

impl Symbolizer {
    /// The USDT probes (`.note.stapsdt`) of `source` whose `provider:name` matches `pattern`,
    /// a glob (`*` any run, `?` one character: `python:function__*`); a pattern without `:`
    /// is matched against the probe's name alone, under every provider.
    ///
    /// For [`Source::Elf`] and [`Source::BuildId`]: the file's probes, in note order. For
    /// [`Source::Process`]: the probes of every ELF file the process maps executable, with
    /// their absolute addresses, per mapping (a library mapped twice gives both); files that
    /// are not ELF are passed over, and a file that cannot be read or whose notes are
    /// malformed is left out with a `log::warn!`. The kernel and stacks are
    /// [`Error::InvalidRequest`] (probes are in files).
    ///
    /// ```
    /// use stacksym::{Source, Symbolizer};
    /// # fn main() -> stacksym::Result<()> {
    /// let symbolizer = Symbolizer::builder().build();
    /// let path = std::path::Path::new("testdata/bin/usdt-x86_64");
    /// let found = symbolizer.find_usdt(&Source::Elf { path }, "stacksym_demo:guarded")?;
    /// let probe = &found[0].probe;
    /// assert!(probe.semaphore.is_some(), "the guarded probe has a semaphore");
    /// # Ok(())
    /// # }
    /// ```
    pub fn find_usdt(&self, source: &Source<'_>, pattern: &str) -> Result<Vec<UsdtMatch>> {
        let pattern = UsdtPattern::new(pattern);
        match source {
            Source::Elf { path } => {
                let file = self.open_elf(path)?;
                Ok(read_probes(&file.elf)?
                    .into_iter()
                    .filter(|probe| pattern.matches(probe))
                    .map(|probe| UsdtMatch {
                        probe,
                        file: path.to_path_buf(),
                        abs_addr: None,
                        semaphore_abs_addr: None,
                    })
                    .collect())
            }
            Source::BuildId { build_id } => {
                let found = self.file_with_build_id(source, build_id)?;
                self.find_usdt(&Source::Elf { path: &found.path }, pattern.text)
            }
            Source::Process { process, maps } => {
                let cached;
                let maps: &ProcessMaps = match maps {
                    Some(maps) => maps,
                    None => {
                        cached = self.cached_maps(process, &[])?;
                        &cached
                    }
                };
                self.find_usdt_in_process(process, maps, &pattern)
            }
            Source::Kernel(_) | Source::Stack { .. } | Source::Core(_) => {
                Err(Error::InvalidRequest {
                    path: source.describe(),
                    what: "USDT probes are in the files of a process or on disk: give \
                       Source::Elf or Source::Process"
                        .to_string(),
                })
            }
        }
    }

    fn find_usdt_in_process(
        &self,
        process: &Process,
        maps: &ProcessMaps,
        pattern: &UsdtPattern<'_>,
    ) -> Result<Vec<UsdtMatch>> {
        // The executable mappings of each file, in address order: probes are code.
        let mut files: Vec<Vec<usize>> = Vec::new();
        let mut file_of_key: HashMap<FileKey, usize> = HashMap::new();
        for (index, mapping) in maps.mappings.iter().enumerate() {
            if !mapping.is_file() || !mapping.perms.exec {
                continue;
            }
            let next = files.len();
            let file = *file_of_key.entry(FileKey::of(mapping)).or_insert(next);
            if file == next {
                files.push(Vec::new());
            }
            files[file].push(index);
        }
        let mut found = Vec::new();
        for mappings in files {
            let Some(first) = mappings.first().map(|&index| &maps.mappings[index]) else {
                continue;
            };
            let Some(opened) = process.open_mapped(first) else {
                continue;
            };
            let probes = opened.and_then(|(file, path)| {
                let loaded = self.open_process_file(&file, &path, &process.root())?;
                Ok((read_probes(&loaded.elf)?, path))
            });
            let (probes, opened_path) = match probes {
                Ok(found) => found,
                Err(Error::NotElf { .. }) => continue,
                Err(err) => {
                    log::warn!("USDT probes of a file of pid {}: {err}", process.pid());
                    continue;
                }
            };
            // The name the process gives the file (its maps line), not the host path it was
            // opened through (`<procfs>/<pid>/root/...`, `map_files/...`).
            let path = first.file_path().unwrap_or(opened_path);
            for probe in probes.into_iter().filter(|probe| pattern.matches(probe)) {
                let Some(offset) = probe.file_offset else {
                    continue;
                };
                for &index in &mappings {
                    let mapping = &maps.mappings[index];
                    let Some(into) = offset.0.checked_sub(mapping.file_offset.0) else {
                        continue;
                    };
                    let abs = mapping.range.start.0.wrapping_add(into);
                    if !mapping.contains(AbsAddr(abs)) {
                        continue;
                    }
                    // The load bias of this mapping's load of the file places the semaphore.
                    let bias = abs.wrapping_sub(probe.addr.0);
                    found.push(UsdtMatch {
                        semaphore_abs_addr: probe
                            .semaphore
                            .map(|sem| AbsAddr(sem.addr.0.wrapping_add(bias))),
                        abs_addr: Some(AbsAddr(abs)),
                        file: path.clone(),
                        probe: probe.clone(),
                    });
                }
            }
        }
        Ok(found)
    }
}

/// A glob over `provider:name`, or over the name alone when it has no `:`.
struct UsdtPattern<'a> {
    text: &'a str,
    glob: NamePattern<'a>,
    with_provider: bool,
}

impl<'a> UsdtPattern<'a> {
    fn new(text: &'a str) -> Self {
        UsdtPattern {
            text,
            glob: NamePattern::Glob(text),
            with_provider: text.contains(':'),
        }
    }

    fn matches(&self, probe: &Probe) -> bool {
        if self.with_provider {
            self.glob
                .matches(&format!("{}:{}", probe.provider, probe.name))
        } else {
            self.glob.matches(&probe.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_provider_and_name() {
        let probe = |provider: &str, name: &str| Probe {
            provider: provider.to_string(),
            name: name.to_string(),
            addr: crate::VirtAddr(0),
            file_offset: None,
            semaphore: None,
            note: crate::usdt::NoteAddrs {
                location: 0,
                base: 0,
                semaphore: 0,
            },
            args_text: String::new(),
            args: Ok(Vec::new()),
        };
        let entry = probe("python", "function__entry");
        assert!(UsdtPattern::new("python:function__entry").matches(&entry));
        assert!(UsdtPattern::new("python:*").matches(&entry));
        assert!(UsdtPattern::new("*:function__*").matches(&entry));
        assert!(UsdtPattern::new("function__entry").matches(&entry));
        assert!(UsdtPattern::new("*entry").matches(&entry));
        assert!(!UsdtPattern::new("python:function").matches(&entry));
        assert!(!UsdtPattern::new("libstdcxx:*").matches(&entry));
    }
}
