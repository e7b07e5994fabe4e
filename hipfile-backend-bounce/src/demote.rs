//! Staged bytes moved out of the reading core's own cache before their copy to the device
//! (docs/performance.md, "Copies read from the shared cache").
//!
//! A read from the page cache leaves the bytes it wrote into a slot in the reading core's own
//! cache, modified. A copy to the device that reads such lines has each fetched from that core,
//! which is slow: on the H200 machine a call's copies ran at 21-26 GB/s while their lines were
//! still there, against 41-52 GB/s from the shared cache. A thread that writes more than its
//! cache holds pushes its older lines out by itself, so only the last bytes a read's threads
//! wrote are still there when their copies run: the last `threads x cache` bytes of a read.
//! Those lines are demoted (`cldemote`, on x86-64 processors that have it): a hint that moves a
//! line to the shared cache without writing it to memory. Demoting every line costs the
//! readers more than it saves on a long read (a whole 4 GiB file: 47 against 52 GB/s), which
//! is why only the tail is.

use std::path::Path;

/// Most bytes of one thread's writes that its own cache holds when its caches are not known.
const DEFAULT_CACHE: usize = 2 << 20;

/// How a read's tail is demoted on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Demote {
    /// Bytes of one thread's writes its own caches hold (its L2, the largest cache a core
    /// does not share).
    cache: usize,
}

impl Demote {
    /// Demoting on this machine: `None` where the processor has no `cldemote`.
    pub(crate) fn detect(sysfs: &Path) -> Option<Demote> {
        has_cldemote().then(|| Demote { cache: own_cache(sysfs).unwrap_or(DEFAULT_CACHE) })
    }

    /// Demoting as if each thread's own caches held `cache` bytes (tests).
    #[cfg(test)]
    pub(crate) fn with_cache(cache: usize) -> Demote {
        Demote { cache }
    }

    /// Bytes at the end of a read whose lines are still in their threads' own caches when
    /// their copies run: what `threads` threads' caches hold.
    pub(crate) fn tail(&self, threads: usize) -> usize {
        self.cache.saturating_mul(threads.max(1))
    }

    /// Moves the lines of `bytes` to the shared cache (a hint: nothing changes in memory).
    pub(crate) fn lines(&self, bytes: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        for line in bytes.chunks(64) {
            // SAFETY: `cldemote` reads no memory and writes none; it only names a line of
            // `bytes`, which the caller holds. (`detect` made sure the processor has it; on one
            // without, it would still be a no-op.)
            unsafe {
                std::arch::asm!("cldemote [{0}]", in(reg) line.as_ptr(), options(nostack, preserves_flags, readonly))
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = bytes;
    }
}

#[cfg(target_arch = "x86_64")]
fn has_cldemote() -> bool {
    // CPUID leaf 7, sub-leaf 0: ECX bit 25 is CLDEMOTE.
    let max = std::arch::x86_64::__cpuid(0).eax;
    max >= 7 && std::arch::x86_64::__cpuid_count(7, 0).ecx >> 25 & 1 == 1
}

#[cfg(not(target_arch = "x86_64"))]
fn has_cldemote() -> bool {
    false
}

/// The largest cache CPU 0 does not share with other cores, from
/// `devices/system/cpu/cpu0/cache/index*/` under `sysfs` (`level`, `size` such as `2048K`,
/// `shared_cpu_list`).
fn own_cache(sysfs: &Path) -> Option<usize> {
    let dir = sysfs.join("devices/system/cpu/cpu0/cache");
    let mut best = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        let (Some(size), Some(shared)) = (read("size").and_then(|s| parse_size(&s)), read("shared_cpu_list")) else {
            continue;
        };
        if read("type").is_some_and(|t| t.trim() == "Instruction") || !alone(&shared) {
            continue;
        }
        best = best.max(Some(size));
    }
    best
}

/// `2048K`, `32M` or `512` as bytes.
fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.strip_suffix('K') {
        Some(d) => (d, 1 << 10),
        None => match text.strip_suffix('M') {
            Some(d) => (d, 1 << 20),
            None => (text, 1),
        },
    };
    digits.parse::<usize>().ok()?.checked_mul(unit).filter(|&n| n > 0)
}

/// Whether a `shared_cpu_list` names one CPU only (`0`, not `0-15` or `0,16`).
fn alone(list: &str) -> bool {
    let list = list.trim();
    !list.is_empty() && list.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(dir: &Path, index: usize, level: u32, kind: &str, size: &str, shared: &str) {
        let d = dir.join(format!("devices/system/cpu/cpu0/cache/index{index}"));
        std::fs::create_dir_all(&d).unwrap();
        for (name, text) in [("level", level.to_string()), ("type", kind.into()), ("size", size.into())] {
            std::fs::write(d.join(name), format!("{text}\n")).unwrap();
        }
        std::fs::write(d.join("shared_cpu_list"), format!("{shared}\n")).unwrap();
    }

    #[test]
    fn a_threads_own_cache_is_its_largest_unshared_one() {
        let dir = tempfile::tempdir().unwrap();
        cache(dir.path(), 0, 1, "Data", "48K", "0");
        cache(dir.path(), 1, 1, "Instruction", "4096K", "0"); // not for data
        cache(dir.path(), 2, 2, "Unified", "2048K", "0");
        cache(dir.path(), 3, 3, "Unified", "307200K", "0-15"); // shared
        assert_eq!(own_cache(dir.path()), Some(2 << 20));
        // Hyperthreads sharing an L2: none is a thread's own but the L1.
        let dir = tempfile::tempdir().unwrap();
        cache(dir.path(), 0, 1, "Data", "32K", "0");
        cache(dir.path(), 2, 2, "Unified", "1M", "0,16");
        assert_eq!(own_cache(dir.path()), Some(32 << 10));
        assert_eq!(own_cache(Path::new("/nonexistent")), None);
    }

    #[test]
    fn sizes_and_lists_parse() {
        assert_eq!(parse_size("2048K\n"), Some(2 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("0K"), None);
        assert_eq!(parse_size("lots"), None);
        assert!(alone("7\n"));
        assert!(!alone("0-15"));
        assert!(!alone("0,16"));
        assert!(!alone(""));
    }

    #[test]
    fn the_tail_is_what_the_threads_caches_hold() {
        let d = Demote { cache: 2 << 20 };
        assert_eq!(d.tail(16), 32 << 20);
        assert_eq!(d.tail(0), 2 << 20);
        d.lines(&[0u8; 1000]); // a hint: nothing to see, nothing breaks (a no-op without the instruction)
    }
}
