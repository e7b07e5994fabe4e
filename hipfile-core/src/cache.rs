//! The page-cache policy (semantics §16): whether a transfer's bytes go through the page cache,
//! so that a file read or written once is in memory for every later load, or around it
//! (`O_DIRECT`), so that reading a file that does not fit evicts nothing else.
//!
//! One rule, applied by the dispatcher to every request before a backend sees it
//! ([`FileHandle::decide_cache`](crate::FileHandle::decide_cache) with the driver's
//! [`CachePolicy`]); backends only obey the answer ([`CacheUse`]):
//! - `keep`: through the page cache;
//! - `bypass`: around it where the file allows `O_DIRECT` (the bounce path still reads a chunk
//!   the page cache already holds from there: that costs no disk read);
//! - `auto` (the default): `keep` while the file fits comfortably in memory, `bypass` when it
//!   does not. "Comfortably": the file's size (for a write, the size the file will have after
//!   it) is at most the limit, `HIPFILE_PAGE_CACHE_LIMIT_MIB`, by default half of the memory
//!   the kernel says is available (`MemAvailable`, read at most once a second).
//!
//! A file's own setting (`Driver::handle_set_page_cache`, Python's `cache=`) wins over the
//! driver's. The p2p path moves data by DMA and is direct whatever the policy says.

use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::words::Words;

/// How transfers use the page cache (`HIPFILE_PAGE_CACHE`, the `PageCache` parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PageCache {
    /// Keep files that fit comfortably in memory, bypass larger ones.
    #[default]
    Auto,
    /// Always through the page cache.
    Keep,
    /// Around the page cache (`O_DIRECT`) wherever the file allows it.
    Bypass,
}

/// As `HIPFILE_PAGE_CACHE` and `hipFileParamPageCache` spell it.
impl Words for PageCache {
    const WORDS: &'static [(&'static str, PageCache)] =
        &[("auto", PageCache::Auto), ("keep", PageCache::Keep), ("bypass", PageCache::Bypass)];
}

impl PageCache {
    fn to_raw(setting: Option<PageCache>) -> u8 {
        match setting {
            None => 0,
            Some(PageCache::Auto) => 1,
            Some(PageCache::Keep) => 2,
            Some(PageCache::Bypass) => 3,
        }
    }

    fn from_raw(raw: u8) -> Option<PageCache> {
        match raw {
            1 => Some(PageCache::Auto),
            2 => Some(PageCache::Keep),
            3 => Some(PageCache::Bypass),
            _ => None,
        }
    }
}

impl fmt::Display for PageCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// What a request does with the page cache: the policy's answer, which backends obey.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheUse {
    /// Through the page cache: reads fill it, writes leave their pages in it.
    Keep,
    /// Around it where the file allows (`O_DIRECT`): what the page cache does not hold is read
    /// from the disk without filling it, and durable writes go straight to the disk.
    Bypass,
}

/// Which rule of the policy decided, and on what figures (for logs and `hipfile check`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheRule {
    /// The file cannot be opened `O_DIRECT`: the page cache, whatever the setting.
    NoDirect,
    /// `keep`, by the file's setting or the driver's.
    Keep,
    /// `bypass`, by the file's setting or the driver's.
    Bypass,
    /// `auto`: the file fits.
    Fits {
        /// The file's size in bytes (for a write, after it).
        size: u64,
        /// The largest file `auto` keeps.
        limit: u64,
    },
    /// `auto`: the file is larger than the limit.
    TooLarge {
        /// The file's size in bytes (for a write, after it).
        size: u64,
        /// The largest file `auto` keeps.
        limit: u64,
    },
}

impl CacheRule {
    /// What the request does.
    pub fn cache_use(self) -> CacheUse {
        match self {
            CacheRule::NoDirect | CacheRule::Keep | CacheRule::Fits { .. } => CacheUse::Keep,
            CacheRule::Bypass | CacheRule::TooLarge { .. } => CacheUse::Bypass,
        }
    }

    /// A small number per rule, so that a file remembers the last one (logged when it changes).
    fn code(self) -> u8 {
        match self {
            CacheRule::NoDirect => 1,
            CacheRule::Keep => 2,
            CacheRule::Bypass => 3,
            CacheRule::Fits { .. } => 4,
            CacheRule::TooLarge { .. } => 5,
        }
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

impl fmt::Display for CacheRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CacheRule::NoDirect => f.write_str("keep (the file cannot be opened O_DIRECT)"),
            CacheRule::Keep => f.write_str("keep (set to keep)"),
            CacheRule::Bypass => f.write_str("bypass (set to bypass)"),
            CacheRule::Fits { size, limit: u64::MAX } => {
                write!(f, "keep (auto: the file, {}; MemAvailable unknown)", mib(size))
            }
            CacheRule::Fits { size, limit } => {
                write!(f, "keep (auto: the file, {}, fits within {})", mib(size), mib(limit))
            }
            CacheRule::TooLarge { size, limit } => {
                write!(f, "bypass (auto: the file, {}, is over {})", mib(size), mib(limit))
            }
        }
    }
}

/// A file's own page-cache setting, the last rule applied to it, and its size as `auto` last
/// read it, kept on its handle.
#[derive(Debug, Default)]
pub struct FileCache {
    setting: AtomicU8,
    last_rule: AtomicU8,
    /// The size, and when it was read ([`CachePolicy::now_ms`]; 0: never).
    size: AtomicU64,
    size_read_at_ms: AtomicU64,
}

impl FileCache {
    /// The file's size for `auto` at `now_ms` ([`CachePolicy::now_ms`]): the last reading while
    /// it is younger than a second (as `MemAvailable`'s) by that clock, else `read()`'s; at
    /// least `at_least` (the end of a write, which raises the size kept at once). Read so
    /// rarely, a request costs no `fstat`.
    pub fn size(&self, now_ms: u64, at_least: u64, read: impl FnOnce() -> u64) -> u64 {
        let size = if stale(self.size_read_at_ms.load(Ordering::Acquire), now_ms) {
            let size = read();
            self.size.store(size, Ordering::Relaxed);
            self.size_read_at_ms.store(now_ms, Ordering::Release);
            size
        } else {
            self.size.load(Ordering::Relaxed)
        };
        if at_least > size {
            self.size.fetch_max(at_least, Ordering::Relaxed);
        }
        size.max(at_least)
    }

    /// Records `rule` as the last applied to the file (the client's descriptor `fd`), logged at
    /// debug level when it differs from the one before.
    pub fn applied(&self, rule: CacheRule, fd: i32) {
        // Read first: the requests of many callers on one file then share the line unchanged.
        let seen = &self.last_rule;
        if seen.load(Ordering::Relaxed) != rule.code() && seen.swap(rule.code(), Ordering::Relaxed) != rule.code() {
            tracing::debug!(target: "hipfile", "page cache for file {fd}: {rule}");
        }
    }

    /// The file's own setting (`None`: the driver's).
    pub fn setting(&self) -> Option<PageCache> {
        PageCache::from_raw(self.setting.load(Ordering::Relaxed))
    }

    /// Sets the file's own setting (`None`: the driver's from now on).
    pub fn set(&self, setting: Option<PageCache>) {
        self.setting.store(PageCache::to_raw(setting), Ordering::Relaxed);
    }
}

/// How long a reading of `MemAvailable` (or of a file's size) is used before it is read again.
const MEMINFO_TTL: Duration = Duration::from_secs(1);

/// Whether a reading made at `read_at` ([`CachePolicy::now_ms`]; 0: never) is to be made again
/// at `now`: never made, [`MEMINFO_TTL`] on, or made by another policy's clock (now before then).
fn stale(read_at: u64, now: u64) -> bool {
    read_at == 0 || !(read_at..read_at + MEMINFO_TTL.as_millis() as u64).contains(&now)
}

/// The driver's page-cache policy: its setting and the limit of `auto`.
#[derive(Debug)]
pub struct CachePolicy {
    mode: PageCache,
    /// `auto`'s limit in bytes; 0: half of `MemAvailable`.
    limit: u64,
    /// When the policy was made: the clock of `read_at_ms`.
    made: Instant,
    /// The last reading of `MemAvailable` in bytes ([`UNKNOWN`]: unreadable), and when it was
    /// read (milliseconds after `made`, plus one; 0: never). Atomics, so that the requests of
    /// many callers read them without a lock (a race to refresh only reads the file twice).
    available: AtomicU64,
    read_at_ms: AtomicU64,
}

/// `MemAvailable` could not be read.
const UNKNOWN: u64 = u64::MAX;

impl CachePolicy {
    /// The policy `mode`, with `auto`'s limit `limit` bytes (0: half of `MemAvailable`).
    pub fn new(mode: PageCache, limit: u64) -> Self {
        CachePolicy {
            mode,
            limit,
            made: Instant::now(),
            available: AtomicU64::new(UNKNOWN),
            read_at_ms: AtomicU64::new(0),
        }
    }

    /// The policy's clock: milliseconds since it was made, plus one (never 0).
    pub fn now_ms(&self) -> u64 {
        self.made.elapsed().as_millis() as u64 + 1
    }

    /// The driver's setting.
    pub fn mode(&self) -> PageCache {
        self.mode
    }

    /// The largest file `auto` keeps, in bytes: the limit set, else half of what the kernel
    /// says is available now (`None` when it cannot be read: then `auto` keeps every file, as
    /// a program that reads with `pread` would).
    pub fn limit(&self) -> Option<u64> {
        self.limit_at(self.now_ms())
    }

    /// [`limit`](Self::limit) at `now` by the policy's clock ([`now_ms`](Self::now_ms)).
    pub fn limit_at(&self, now: u64) -> Option<u64> {
        if self.limit > 0 {
            return Some(self.limit);
        }
        let bytes = if stale(self.read_at_ms.load(Ordering::Acquire), now) {
            let bytes = mem_available().unwrap_or(UNKNOWN);
            self.available.store(bytes, Ordering::Relaxed);
            self.read_at_ms.store(now, Ordering::Release);
            bytes
        } else {
            self.available.load(Ordering::Relaxed)
        };
        (bytes != UNKNOWN).then_some(bytes / 2)
    }
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file's size is read once a second at most, and a write raises it at once.
    #[test]
    fn a_files_size_is_read_once_a_second_and_raised_by_writes() {
        let cache = FileCache::default();
        let reads = std::cell::Cell::new(0);
        let read = |size| {
            reads.set(reads.get() + 1);
            size
        };
        assert_eq!(cache.size(1, 0, || read(100)), 100);
        assert_eq!(cache.size(999, 0, || read(5)), 100, "within the second: the reading kept");
        assert_eq!(reads.get(), 1);
        assert_eq!(cache.size(999, 300, || read(5)), 300, "a write's end counts at once");
        assert_eq!(cache.size(999, 0, || read(5)), 300, "and is kept");
        assert_eq!(cache.size(1001, 0, || read(50)), 50, "a second on: read again");
        assert_eq!(reads.get(), 2);
        assert_eq!(cache.size(7, 0, || read(60)), 60, "a new policy's clock: read again");
    }

    #[test]
    fn names_round_trip() {
        for mode in [PageCache::Auto, PageCache::Keep, PageCache::Bypass] {
            assert_eq!(PageCache::parse(&format!(" {} ", mode.word().to_uppercase())), Some(mode));
            assert_eq!(PageCache::from_raw(PageCache::to_raw(Some(mode))), Some(mode));
        }
        assert_eq!(PageCache::parse("sometimes"), None);
        assert_eq!(PageCache::from_raw(PageCache::to_raw(None)), None);
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   23000000 kB\n";
        assert_eq!(parse_mem_available(text), Some(23_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 5 kB\n"), None);
        assert!(mem_available().is_some_and(|b| b > 0), "this machine's /proc/meminfo");
    }

    #[test]
    fn rules_say_what_they_do() {
        assert_eq!(CacheRule::Fits { size: 1, limit: 2 }.cache_use(), CacheUse::Keep);
        assert_eq!(CacheRule::TooLarge { size: 3, limit: 2 }.cache_use(), CacheUse::Bypass);
        assert_eq!(CacheRule::NoDirect.cache_use(), CacheUse::Keep);
        let text = CacheRule::TooLarge { size: 3 << 20, limit: 1 << 20 }.to_string();
        assert!(text.starts_with("bypass (auto") && text.contains("3.0 MiB") && text.contains("1.0 MiB"), "{text}");
    }
}
