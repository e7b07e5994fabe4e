//! The node-local cache (docs/remote.md, "The node cache"): an object read once is kept on the
//! node's disk, keyed by its URL and the store's version of it, so a restart, a second job or
//! another process of the node reads the local copy instead of the network.
//!
//! Each entry is three files named by a hash of the URL: `KEY.data` (the object's bytes),
//! `KEY.json` (its URL and version; its modification time is the entry's last use) and
//! `KEY.lock` (held while the entry is filled). A fill writes `KEY.PID.tmp`, reserves its
//! size first (a full disk fails before any byte is fetched), syncs it, checks its size and
//! renames it; the record is renamed in after the data, so a record always describes whole
//! data. A read asks the store for the object's version first: a changed object is fetched
//! again, never served stale.

use std::fs::File;
use std::io::ErrorKind as IoKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::error::{Error, ErrorKind, Result};
use crate::object::{RemoteObject, Version};

/// A node-local cache in a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    dir: PathBuf,
    limit: Option<u64>,
}

/// How a [`Cache::get`] was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// From the node's copy, which matched the store's version.
    Hit,
    /// Fetched from the store into the cache (by this call).
    Fetched,
}

/// One entry of the cache, as [`Cache::entries`] lists it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The object's URL.
    pub url: String,
    /// The version the copy holds.
    pub version: Version,
    /// The copy's path.
    pub path: PathBuf,
    /// When it was last used.
    pub last_used: SystemTime,
}

impl Cache {
    /// A cache in `dir` (made on first use), bounded by the disk only.
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into(), limit: None }
    }

    /// At most `limit` bytes of copies: the least recently used go first.
    pub fn with_limit(mut self, limit: Option<u64>) -> Cache {
        self.limit = limit;
        self
    }

    /// The cache `HIPFILE_REMOTE_CACHE` names, bounded by `HIPFILE_REMOTE_CACHE_LIMIT_MIB`
    /// where set; `None` where the variable is unset or empty.
    pub fn from_env() -> Option<Cache> {
        let dir = std::env::var_os("HIPFILE_REMOTE_CACHE").filter(|d| !d.is_empty())?;
        let limit = std::env::var("HIPFILE_REMOTE_CACHE_LIMIT_MIB").ok().and_then(|v| v.trim().parse::<u64>().ok());
        Some(Cache::new(dir).with_limit(limit.filter(|&l| l > 0).map(|mib| mib << 20)))
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The local copy of `object` at the version read when it was opened: the node's copy
    /// where it holds that version, else fetched now. Several processes (or threads) asking
    /// at once fetch it once: the others wait for the fill and read its copy.
    pub fn get(&self, object: &RemoteObject) -> Result<(PathBuf, Served)> {
        let url = object.url();
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::cache(url, self.dir.display(), &e))?;
        let key = key(url);
        let data = self.dir.join(format!("{key}.data"));
        if self.holds(&key, url, object.version()) || settling(&data, url, object.version()) {
            tracing::debug!("{url}: served from the node cache ({})", data.display());
            return Ok((data, Served::Hit));
        }
        let lock_path = self.dir.join(format!("{key}.lock"));
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::cache(url, lock_path.display(), &e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| Error::cache(url, lock_path.display(), &e.into()))?;
        // Another process may have filled it while this one waited.
        if self.holds(&key, url, object.version()) {
            tracing::debug!("{url}: served from the node cache ({}), filled by another", data.display());
            return Ok((data, Served::Hit));
        }
        self.fill(&key, object, lock)?;
        tracing::debug!("{url}: fetched from the store into the node cache ({})", data.display());
        Ok((data, Served::Fetched))
    }

    /// Whether the entry `key` holds `version` of `url`, whole; its last use is now if so.
    fn holds(&self, key: &str, url: &str, version: &Version) -> bool {
        let record = self.dir.join(format!("{key}.json"));
        let Some((found_url, found)) = read_record(&record) else { return false };
        let whole = std::fs::metadata(self.dir.join(format!("{key}.data"))).is_ok_and(|m| m.len() == version.size);
        let same = found_url == url && found == *version && whole;
        if same {
            // The entry's last use, for eviction; a read-only cache still serves.
            let _ = File::options().write(true).open(&record).and_then(|f| f.set_modified(SystemTime::now()));
        }
        same
    }

    /// Fetches `object` into the entry `key` (its lock held).
    /// The copy is whole (its size checked) and renamed into place when this returns, its
    /// bytes in the page cache; a thread of its own then syncs it and writes its record,
    /// holding the entry's `lock` until then ([`flush`] waits for it): the caller reads the copy
    /// while the disk writes it, and no entry counts before its bytes are on the disk.
    fn fill(&self, key: &str, object: &RemoteObject, lock: File) -> Result<()> {
        let url = object.url();
        let (data, record) = (self.dir.join(format!("{key}.data")), self.dir.join(format!("{key}.json")));
        // The old version goes first: no record may describe data being replaced.
        for stale in [&record, &data] {
            remove(stale).map_err(|e| Error::cache(url, stale.display(), &e))?;
        }
        let size = object.size();
        if self.limit.is_some_and(|limit| size > limit) {
            let limit = self.limit.unwrap_or_default();
            return Err(Error::new(
                ErrorKind::Cache,
                url,
                format!("{size} bytes do not fit the cache's limit of {limit} bytes ({})", self.dir.display()),
            ));
        }
        self.evict(size, key);
        let tmp = self.dir.join(format!("{key}.{}.tmp", std::process::id()));
        let copy = self.write_copy(object, &tmp, key).and_then(|file| {
            std::fs::rename(&tmp, &data).map_err(|e| Error::cache(url, data.display(), &e))?;
            Ok(file)
        });
        let file = copy.inspect_err(|_| drop(remove(&tmp)))?;
        let text = json!({
            "url": url,
            "size": size,
            "etag": object.version().etag,
            "last_modified": object.version().last_modified,
            "version": object.version().version,
        });
        let record_tmp = self.dir.join(format!("{key}.{}.json.tmp", std::process::id()));
        let (url, shown) = (url.to_owned(), url.to_owned());
        let (path, version) = (data.clone(), object.version().clone());
        let settle = move || {
            let _held = lock; // the entry's, until its record is in or the copy is gone
            let done = file
                .sync_data()
                .and_then(|()| std::fs::write(&record_tmp, text.to_string() + "\n"))
                .and_then(|()| std::fs::rename(&record_tmp, &record));
            if let Err(e) = done {
                tracing::warn!("{url}: the node cache's copy could not be kept ({e}); the next read fetches it again");
                let _ = remove(&data);
                let _ = remove(&record_tmp);
            }
        };
        match std::thread::Builder::new().name("hipfile-cache".into()).spawn(settle) {
            Ok(thread) => {
                SETTLING.lock().unwrap_or_else(|p| p.into_inner()).push(Settling { path, url: shown, version, thread })
            }
            // The copy serves this read; with no record, the next read fetches it again.
            Err(e) => tracing::warn!("{}: no thread to keep the node cache's copy ({e})", object.url()),
        }
        Ok(())
    }

    /// The object's bytes in `tmp` (reserved first, checked whole), not yet synced.
    fn write_copy(&self, object: &RemoteObject, tmp: &Path, key: &str) -> Result<File> {
        let url = object.url();
        let file = File::options()
            .create(true)
            .truncate(true)
            .write(true)
            .open(tmp)
            .map_err(|e| Error::cache(url, tmp.display(), &e))?;
        let size = object.size();
        // An object larger than the whole disk evicts nothing.
        if let Ok(fs) = rustix::fs::fstatvfs(&file)
            && size > fs.f_blocks.saturating_mul(fs.f_frsize)
        {
            let why = format!("{size} bytes do not fit the cache's disk ({})", self.dir.display());
            return Err(Error::new(ErrorKind::Cache, url, why));
        }
        // Reserved up front: a full disk fails here, after the least recently used copies
        // have made what room they can.
        loop {
            match rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, size) {
                Ok(()) => break,
                Err(rustix::io::Errno::NOSPC) if self.evict_one(key) => continue,
                Err(rustix::io::Errno::OPNOTSUPP) => break, // the file system cannot reserve
                Err(e) => return Err(Error::cache(url, format!("{} (the cache's disk)", tmp.display()), &e.into())),
            }
        }
        object.read_to_file(&file)?;
        let len = file.metadata().map_err(|e| Error::cache(url, tmp.display(), &e))?.len();
        if len != size {
            return Err(Error::new(ErrorKind::ShortBody, url, format!("the local copy has {len} of {size} bytes")));
        }
        Ok(file)
    }

    /// Removes the least recently used copies (never `keep`) until `need` more bytes fit the
    /// limit.
    fn evict(&self, need: u64, keep: &str) {
        let Some(limit) = self.limit else { return };
        let mut entries = self.keyed_entries();
        let mut total: u64 = entries.iter().map(|(_, e)| e.version.size).sum();
        entries.sort_by_key(|(_, e)| e.last_used);
        for (key, entry) in entries {
            if total + need <= limit {
                break;
            }
            if key != keep {
                self.remove_entry(&key);
                total = total.saturating_sub(entry.version.size);
            }
        }
    }

    /// Removes the least recently used copy other than `keep`; whether there was one.
    fn evict_one(&self, keep: &str) -> bool {
        let mut entries = self.keyed_entries();
        entries.retain(|(k, _)| k != keep);
        let Some((key, _)) = entries.into_iter().min_by_key(|(_, e)| e.last_used) else { return false };
        self.remove_entry(&key);
        true
    }

    fn remove_entry(&self, key: &str) {
        tracing::debug!("remote cache: {key} evicted from {}", self.dir.display());
        let _ = remove(&self.dir.join(format!("{key}.json")));
        let _ = remove(&self.dir.join(format!("{key}.data")));
    }

    fn keyed_entries(&self) -> Vec<(String, Entry)> {
        let Ok(dir) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut out = Vec::new();
        for path in dir.flatten().map(|e| e.path()) {
            let Some(key) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            let Some((url, version)) = read_record(&path) else { continue };
            let data = self.dir.join(format!("{key}.data"));
            let last_used = std::fs::metadata(&path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
            if std::fs::metadata(&data).is_ok_and(|m| m.len() == version.size) {
                out.push((key.to_owned(), Entry { url, version, path: data, last_used }));
            }
        }
        out
    }

    /// The whole entries, least recently used first.
    pub fn entries(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = self.keyed_entries().into_iter().map(|(_, e)| e).collect();
        entries.sort_by_key(|e| e.last_used);
        entries
    }

    /// Removes every entry, and any file a fill left behind; the entries removed and their
    /// bytes.
    pub fn clear(&self) -> std::io::Result<(usize, u64)> {
        let (n, bytes) = self.entries().iter().fold((0, 0), |(n, b), e| (n + 1, b + e.version.size));
        let dir = match std::fs::read_dir(&self.dir) {
            Ok(dir) => dir,
            Err(e) if e.kind() == IoKind::NotFound => return Ok((0, 0)),
            Err(e) => return Err(e),
        };
        for path in dir.flatten().map(|e| e.path()) {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if [".data", ".json", ".tmp", ".lock"].iter().any(|s| name.ends_with(s)) {
                remove(&path)?;
            }
        }
        Ok((n, bytes))
    }
}

/// A fill of this process whose copy is being synced (its record written after).
struct Settling {
    path: PathBuf,
    url: String,
    version: Version,
    thread: std::thread::JoinHandle<()>,
}

/// The fills of this process still settling.
static SETTLING: Mutex<Vec<Settling>> = Mutex::new(Vec::new());

/// Whether this process filled `path` with `version` of `url` and is syncing it now: the copy
/// is whole (this process checked it), so this process reads it without waiting for the disk.
fn settling(path: &Path, url: &str, version: &Version) -> bool {
    let pending = SETTLING.lock().unwrap_or_else(|p| p.into_inner());
    let mine =
        pending.iter().any(|s| s.path == path && s.url == url && s.version == *version && !s.thread.is_finished());
    mine && std::fs::metadata(path).is_ok_and(|m| m.len() == version.size)
}

/// Waits until every copy this process fetched into a node cache is on the disk with its
/// record (a process about to exit calls it, or its last fills count for nothing: the next
/// read fetches them again).
pub fn flush() {
    let settling = std::mem::take(&mut *SETTLING.lock().unwrap_or_else(|p| p.into_inner()));
    for s in settling {
        let _ = s.thread.join();
    }
}

/// Removes `path`; one already gone is fine.
fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != IoKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// An entry's record: its URL and version, or `None` where it is missing or not one.
fn read_record(path: &Path) -> Option<(String, Version)> {
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let version = Version {
        size: v.get("size")?.as_u64()?,
        etag: text("etag"),
        last_modified: text("last_modified")?,
        version: text("version"),
    };
    Some((text("url")?, version))
}

/// An entry's key: FNV-1a of the URL, 64 bits in hex (the record holds the URL, so two URLs
/// of one key are told apart: the second refills the entry).
fn key(url: &str) -> String {
    let hash = url.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(size: u64) -> Version {
        Version { size, etag: Some("\"e\"".into()), last_modified: "2026-12-06T00:00:00+00:00".into(), version: None }
    }

    fn put(cache: &Cache, url: &str, v: &Version, data: &[u8]) {
        let k = key(url);
        std::fs::create_dir_all(&cache.dir).unwrap();
        std::fs::write(cache.dir.join(format!("{k}.data")), data).unwrap();
        let rec =
            json!({"url": url, "size": v.size, "etag": v.etag, "last_modified": v.last_modified, "version": v.version});
        std::fs::write(cache.dir.join(format!("{k}.json")), rec.to_string()).unwrap();
    }

    #[test]
    fn an_entry_serves_only_its_url_at_its_version_whole() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        put(&cache, "s3://b/k", &version(4), b"abcd");
        assert!(cache.holds(&key("s3://b/k"), "s3://b/k", &version(4)));
        let changed = Version { etag: Some("\"f\"".into()), ..version(4) };
        assert!(!cache.holds(&key("s3://b/k"), "s3://b/k", &changed), "a changed object is not served");
        put(&cache, "s3://b/k", &version(5), b"abcd");
        assert!(!cache.holds(&key("s3://b/k"), "s3://b/k", &version(5)), "a truncated copy is not served");
        std::fs::write(dir.path().join(format!("{}.json", key("s3://b/k"))), "{not json").unwrap();
        assert!(!cache.holds(&key("s3://b/k"), "s3://b/k", &version(4)), "a corrupt record is not served");
    }

    #[test]
    fn the_least_recently_used_go_first_and_clear_removes_everything() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path()).with_limit(Some(10));
        put(&cache, "s3://b/old", &version(4), b"1234");
        let old = dir.path().join(format!("{}.json", key("s3://b/old")));
        File::options().write(true).open(&old).unwrap().set_modified(SystemTime::UNIX_EPOCH).unwrap();
        put(&cache, "s3://b/new", &version(4), b"5678");
        cache.evict(4, "s3://b/x");
        let urls: Vec<String> = cache.entries().into_iter().map(|e| e.url).collect();
        assert_eq!(urls, ["s3://b/new"]);
        std::fs::write(dir.path().join("x.1.tmp"), b"left").unwrap();
        assert_eq!(cache.clear().unwrap(), (1, 4));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
