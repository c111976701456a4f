//! The bounded, thread-safe LRU cache every layer uses, and the identity of files in it.

use std::hash::Hash;
use std::num::NonZeroUsize;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lru::LruCache;

use crate::error::{Error, Result};

/// What identifies a file on disk: the same (device, inode) is the same file whatever path
/// reaches it (hard links, symlinks, bind mounts); a different size or modification time
/// means it was replaced or rewritten and must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl FileId {
    /// Stats `path` (following symlinks).
    pub fn of_path(path: &Path) -> Result<Self> {
        let meta = std::fs::metadata(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self::of_metadata(&meta))
    }

    /// Stats an open `file` (`path` names it in errors).
    pub fn of_file(file: &std::fs::File, path: &Path) -> Result<Self> {
        let meta = file.metadata().map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self::of_metadata(&meta))
    }

    fn of_metadata(meta: &std::fs::Metadata) -> Self {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// Counters of one cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found their entry.
    pub hits: u64,
    /// Lookups that had to load the entry.
    pub misses: u64,
    /// Entries dropped to stay within capacity.
    pub evictions: u64,
}

/// A least-recently-used cache of shared values, safe to use from many threads.
///
/// The lock is held only to look up or insert, never while a value is being loaded, so one
/// slow file does not block lookups of others. Two threads that miss the same key at once
/// may both load it; the first insert wins and the other copy is dropped.
pub(crate) struct SharedLru<K: Hash + Eq, V> {
    entries: Mutex<LruCache<K, Arc<V>>>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl<K: Hash + Eq + Clone, V> SharedLru<K, V> {
    pub(crate) fn new(capacity: NonZeroUsize) -> Self {
        SharedLru {
            entries: Mutex::new(LruCache::new(capacity)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LruCache<K, Arc<V>>> {
        // A panic while the lock was held cannot leave the LRU half-updated in a way that
        // matters (at worst an entry is missing), so a poisoned lock is used as it is.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value for `key`, loading it with `load` on a miss.
    pub(crate) fn get_or_load(&self, key: &K, load: impl FnOnce() -> Result<V>) -> Result<Arc<V>> {
        if let Some(value) = self.lock().get(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Arc::clone(value));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let value = Arc::new(load()?);
        let mut entries = self.lock();
        if let Some(existing) = entries.get(key) {
            return Ok(Arc::clone(existing));
        }
        if let Some((evicted_key, _)) = entries.push(key.clone(), Arc::clone(&value)) {
            if evicted_key != *key {
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(value)
    }

    /// Puts `value` in the cache under `key`, replacing what was there (a refreshed entry).
    pub(crate) fn insert(&self, key: K, value: Arc<V>) {
        let mut entries = self.lock();
        if let Some((evicted_key, _)) = entries.push(key.clone(), value) {
            if evicted_key != key {
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Calls `f` on every cached value.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&V)) {
        for (_, value) in self.lock().iter() {
            f(value);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_and_counts() {
        let cache: SharedLru<u32, String> = SharedLru::new(NonZeroUsize::new(2).unwrap());
        for key in [1, 2, 1, 3, 2] {
            cache.get_or_load(&key, || Ok(key.to_string())).unwrap();
        }
        // 1 miss, 2 miss, 1 hit, 3 miss (evicts 2), 2 miss (evicts 1).
        assert_eq!(
            cache.stats(),
            CacheStats {
                hits: 1,
                misses: 4,
                evictions: 2
            }
        );
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn a_failed_load_is_not_cached() {
        let cache: SharedLru<u32, String> = SharedLru::new(NonZeroUsize::new(2).unwrap());
        let failed = cache.get_or_load(&1, || {
            Err(Error::NotAFile {
                path: "/x".into(),
                kind: "a directory",
            })
        });
        assert!(failed.is_err());
        assert_eq!(cache.len(), 0);
    }
}
