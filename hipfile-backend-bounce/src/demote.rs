//! A read's last bytes kept out of the reading cores' own caches before their copy to the
//! device (docs/bench/history.md, "Copies read from the shared cache").
//!
//! A read from the page cache leaves the bytes it wrote into a slot in the reading core's own
//! cache, modified. A copy to the device that reads such lines has each fetched from that core,
//! which is slow: on the H200 machine a call's copies ran at 21-26 GB/s while their lines were
//! still there, against 41-52 GB/s from the shared cache. A thread that writes more than its
//! cache holds pushes its older lines out by itself, so only the last bytes a read's threads
//! wrote are still there when their copies run: the last `threads x cache` bytes of a read.
//! Those are demoted (`cldemote`, on x86-64 processors that have it: a hint that moves a line
//! to the shared cache without writing it to memory). Demoting every line costs the readers
//! more than it saves on a long read (a whole 4 GiB file: 47 against 52 GB/s), which is why
//! only the tail is.
//!
//! `HIPFILE_BOUNCE_DEMOTE=stream` reads the tail through the thread's own small buffer instead
//! and stores it with streaming stores, which go to memory around the caches
//! ([`crate::streaming`]), on any x86-64 processor: the way left to processors without
//! `cldemote`. On the H200 machine's (which has it) one caller's 16 MiB calls ran alike both
//! ways (35.2 against 34.6 GB/s), 4 MiB calls slower (20.8 against 26.7), so it is not the
//! default there; on other processors it is untried, so it is not the default anywhere.

use std::path::Path;

use hipfile_core::Result;

use crate::fileio::FileSide;

/// Most bytes of one thread's writes that its own cache holds when its caches are not known.
const DEFAULT_CACHE: usize = 2 << 20;

/// How a read's tail leaves the readers' caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    Cldemote,
    Stream,
}

/// How a read's tail is demoted on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Demoter {
    /// Bytes of one thread's writes its own caches hold (its share of its core's L2).
    cache: usize,
    how: How,
}

impl Demoter {
    /// What `mode` does on this machine: `None` where it does nothing (`true` where the
    /// processor has no `cldemote`, `stream` on one that is not x86-64).
    pub(crate) fn detect(sysfs: &Path, mode: hipfile_core::Demote) -> Option<Demoter> {
        let how = Self::how(mode, has_cldemote())?;
        Some(Demoter { cache: own_cache(sysfs).unwrap_or(DEFAULT_CACHE), how })
    }

    fn how(mode: hipfile_core::Demote, cldemote: bool) -> Option<How> {
        use hipfile_core::Demote::*;
        match mode {
            Auto if cldemote => Some(How::Cldemote),
            Stream if cfg!(target_arch = "x86_64") => Some(How::Stream),
            _ => None,
        }
    }

    /// What `mode` would do with each thread's caches holding `cache` bytes, on a processor
    /// that has `cldemote` (tests).
    #[cfg(test)]
    pub(crate) fn with_cache(mode: hipfile_core::Demote, cache: usize) -> Option<Demoter> {
        Some(Demoter { cache, how: Self::how(mode, true)? })
    }

    /// Bytes at the end of a read whose lines are still in their threads' own caches when
    /// their copies run: what `threads` threads' caches hold.
    pub(crate) fn tail(&self, threads: usize) -> usize {
        self.cache.saturating_mul(threads.max(1))
    }

    /// Reads `buf.len()` bytes of `file` at `offset` from the page cache (fewer only at end of
    /// file), leaving them out of this core's own caches.
    pub(crate) fn read(&self, file: &FileSide, buf: &mut [u8], offset: u64) -> Result<usize> {
        match self.how {
            How::Stream => crate::streaming::read_buffered(file, buf, offset),
            How::Cldemote => {
                let n = file.read_buffered(buf, offset)?;
                lines(&buf[..n]);
                Ok(n)
            }
        }
    }
}

/// What `mode` does with reads' tails on this machine, in words.
pub(crate) fn describe(sysfs: &Path, mode: hipfile_core::Demote) -> String {
    describe_for(mode, has_cldemote(), own_cache(sysfs))
}

fn describe_for(mode: hipfile_core::Demote, cldemote: bool, cache: Option<usize>) -> String {
    let share = match cache {
        Some(bytes) => format!("{} KiB", bytes >> 10),
        None => format!("unknown, taken as {} KiB", DEFAULT_CACHE >> 10),
    };
    match (Demoter::how(mode, cldemote), mode) {
        (Some(How::Cldemote), _) => {
            format!("reads' tails demoted with cldemote (each reading thread's share of L2: {share})")
        }
        (Some(How::Stream), _) => format!(
            "reads' tails written with streaming stores, HIPFILE_BOUNCE_DEMOTE=stream (each reading thread's \
             share of L2: {share})"
        ),
        (None, hipfile_core::Demote::Off) => "reads' tails not demoted: HIPFILE_BOUNCE_DEMOTE=false".to_owned(),
        (None, hipfile_core::Demote::Stream) => {
            "reads' tails not demoted: streaming stores need an x86-64 processor".to_owned()
        }
        (None, hipfile_core::Demote::Auto) => "reads' tails not demoted: this processor has no cldemote \
                                              (HIPFILE_BOUNCE_DEMOTE=stream writes them with streaming stores)"
            .to_owned(),
    }
}

/// Moves the lines of `bytes` to the shared cache (a hint: nothing changes in memory).
fn lines(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        let (start, end) = (bytes.as_ptr() as usize, bytes.as_ptr() as usize + bytes.len());
        for line in (start & !63..end).step_by(64) {
            // SAFETY: `cldemote` reads no memory and writes none; it names a cache line of
            // `bytes` (the first may begin before them, in the same line and so the same page),
            // which the caller holds. (`detect` made sure the processor has it.)
            unsafe { std::arch::asm!("cldemote [{0}]", in(reg) line, options(nostack, preserves_flags, readonly)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
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

/// CPU 0's share of its level-2 cache, from `devices/system/cpu/cpu0/cache/index*/` under
/// `sysfs` (`level`, `type`, `size` such as `2048K`, `shared_cpu_list`): its size divided among
/// the CPUs that share it (hyperthreads of one core).
fn own_cache(sysfs: &Path) -> Option<usize> {
    let dir = sysfs.join("devices/system/cpu/cpu0/cache");
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        if read("level").is_none_or(|l| l.trim() != "2") || read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let size = read("size").and_then(|s| parse_size(&s))?;
        let sharers = read("shared_cpu_list").and_then(|l| crate::topology::parse_cpu_list(&l)).map_or(1, |c| c.len());
        return Some(size / sharers.max(1));
    }
    None
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
    fn a_threads_own_cache_is_its_share_of_the_l2() {
        let dir = tempfile::tempdir().unwrap();
        cache(dir.path(), 0, 1, "Data", "48K", "0");
        cache(dir.path(), 1, 1, "Instruction", "64K", "0");
        cache(dir.path(), 2, 2, "Unified", "2048K", "0");
        cache(dir.path(), 3, 3, "Unified", "307200K", "0-15");
        assert_eq!(own_cache(dir.path()), Some(2 << 20));
        // Hyperthreads sharing an L2: each has half.
        let dir = tempfile::tempdir().unwrap();
        cache(dir.path(), 0, 1, "Data", "32K", "0,16");
        cache(dir.path(), 2, 2, "Unified", "1M", "0,16");
        assert_eq!(own_cache(dir.path()), Some(512 << 10));
        // No level 2 listed, or nothing at all: unknown (the default applies).
        let dir = tempfile::tempdir().unwrap();
        cache(dir.path(), 0, 1, "Data", "32K", "0");
        assert_eq!(own_cache(dir.path()), None);
        assert_eq!(own_cache(Path::new("/nonexistent")), None);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("2048K\n"), Some(2 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("0K"), None);
        assert_eq!(parse_size("lots"), None);
    }

    #[test]
    fn the_tail_is_what_the_threads_caches_hold() {
        let d = Demoter { cache: 2 << 20, how: How::Cldemote };
        assert_eq!(d.tail(16), 32 << 20);
        assert_eq!(d.tail(0), 2 << 20);
    }

    #[test]
    fn check_says_what_each_setting_does() {
        use hipfile_core::Demote::*;
        let say = |mode, cldemote, cache| describe_for(mode, cldemote, cache);
        assert_eq!(
            say(Auto, true, Some(2 << 20)),
            "reads' tails demoted with cldemote (each reading thread's share of L2: 2048 KiB)"
        );
        assert!(say(Auto, false, None).contains("no cldemote (HIPFILE_BOUNCE_DEMOTE=stream"));
        assert!(say(Off, true, None).ends_with("not demoted: HIPFILE_BOUNCE_DEMOTE=false"));
        let stream = say(Stream, true, None);
        if cfg!(target_arch = "x86_64") {
            assert!(stream.contains("streaming stores") && stream.contains("unknown, taken as 2048 KiB"), "{stream}");
        } else {
            assert!(stream.contains("need an x86-64"), "{stream}");
        }
    }

    #[test]
    fn each_setting_does_what_the_processor_allows() {
        use hipfile_core::Demote::*;
        let x86 = cfg!(target_arch = "x86_64");
        let stream = x86.then_some(How::Stream);
        for (mode, with, without) in [(Auto, Some(How::Cldemote), None), (Stream, stream, stream), (Off, None, None)] {
            assert_eq!((Demoter::how(mode, true), Demoter::how(mode, false)), (with, without), "{mode:?}");
        }
    }
}
