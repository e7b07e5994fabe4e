//! Statistics (semantics §14): what the library did, counted as it does it, readable by the
//! process itself (`hipFileGetStatsL1/L2/L3`) and, while it runs, by another process of the
//! same user (through a [`Publisher`]; `hipfile::stats::Remote` reads it).
//!
//! The counters live in one region of 64-bit words: a header, then 64 slots. A thread owns a
//! slot until it ends and counts into it with plain loads and stores (no locked instruction,
//! no cache line shared with another thread); threads beyond 63 share the last slot and add
//! atomically. A reader sums the slots. The level (`HIPFILE_STATS_LEVEL`, the profile-stats
//! parameter) decides what a request records:
//! - 0: nothing (one relaxed load on the I/O path);
//! - 1: per direction and path (p2p, bounce, host memory): requests done and failed,
//!   bytes, time;
//! - 2: the same per size class (the size histograms of `hipFileStatsLevel2_t`);
//! - 3: the same per GPU as well (`hipFilePerGpuStats_t`).
//!
//! Times are summed in ticks of the cheapest steady clock (the CPU's time-stamp counter where it
//! runs at one rate, else `CLOCK_MONOTONIC`) and converted to microseconds when read.
//!
//! This crate counts; it does not publish. Counters live in anonymous memory unless a
//! [`Publisher`] gives memory other processes can read (the `hipfile` crate's sealed memory
//! file, served over a socket), and the reader of another process's counters is that layer's
//! too: it reads the region with [`Snapshot::read_region`].

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::Direction;
use crate::error::Result;

mod clock;
mod layout;
mod snapshot;

use clock::{clock_kind, monotonic_ns, now};
use layout::*;
pub use layout::{Counter, MAX_GPUS, Path, REGION_BYTES, SIZE_CLASSES, size_class};
pub use snapshot::{Snapshot, Totals};

thread_local! {
    /// Whether this thread is inside [`Stats::apart`].
    static APART: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Memory for the counters that other processes can read, and the service that hands it to
/// them (semantics §14).
pub trait Publisher: Send + Sync {
    /// A region of `len` bytes for the counters, zeroed and writable by this process.
    fn create(&self, len: usize) -> std::io::Result<Box<dyn Published>>;
}

/// One region a [`Publisher`] made.
///
/// # Safety
/// [`words`](Self::words) points to the `len` bytes asked of [`Publisher::create`], zeroed
/// when made, aligned for `u64`, readable and writable by this process until the value is
/// dropped or forgotten, and changed in this process only through the atomics it points to.
pub unsafe trait Published: Send {
    /// The region's first word.
    fn words(&self) -> NonNull<AtomicU64>;
    /// Starts handing the counters to readers, unless that runs (the first open at a level
    /// above 0). Failing only means other processes cannot read them.
    fn serve(&mut self);
    /// Stops handing them out (the driver's last close); the counters stay.
    fn stop(&mut self);
    /// The counters, read without touching the region's unused pages; `None`: read the words.
    fn snapshot(&self) -> Option<std::io::Result<Snapshot>> {
        None
    }
    /// In a forked child: lets go of what belongs to the parent (its threads do not exist
    /// here) without waiting for it, leaving the region mapped.
    fn forget_after_fork(self: Box<Self>);
}

/// A region of counters: a header and [`SLOTS`] slots of 64-bit words, in anonymous or
/// shared memory.
struct Region {
    words: *mut AtomicU64,
}

// SAFETY: the region is only accessed through atomics.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    /// Maps `REGION_WORDS` words of anonymous memory and writes the header.
    fn anonymous() -> std::io::Result<Region> {
        use rustix::mm::{MapFlags, ProtFlags};
        let prot = ProtFlags::READ | ProtFlags::WRITE;
        // SAFETY: a fresh private mapping at an address the kernel picks; nothing else refers to
        // that range.
        let p = unsafe { rustix::mm::mmap_anonymous(std::ptr::null_mut(), REGION_BYTES, prot, MapFlags::PRIVATE) }?;
        Ok(Region::init(p.cast()))
    }

    /// The region a publisher made, with the header written.
    fn published(published: &dyn Published) -> Region {
        Region::init(published.words().as_ptr())
    }

    /// Writes the header of a zeroed region of `REGION_WORDS` words at `words`.
    fn init(words: *mut AtomicU64) -> Region {
        let region = Region { words };
        for (i, v) in [
            (header::MAGIC, MAGIC),
            (header::VERSION, VERSION),
            (header::SLOTS, SLOTS as u64),
            (header::SLOT_WORDS, SLOT_WORDS as u64),
            (header::HEADER_WORDS, HEADER_WORDS as u64),
            (header::PID, std::process::id() as u64),
            (header::CLOCK, clock_kind()),
            (header::TICKS0, now()),
            (header::MONO0, monotonic_ns()),
        ] {
            region.word(i).store(v, Ordering::Relaxed);
        }
        region
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < REGION_WORDS);
        // SAFETY: `i` is in range of the REGION_WORDS words `words` maps.
        let word = unsafe { self.words.add(i) };
        // SAFETY: the mapping lives as long as `self`, and its words (zeroed at creation) are
        // valid atomics, only ever accessed as such.
        unsafe { &*word }
    }

    /// Unmaps an [`anonymous`](Self::anonymous) region.
    fn unmap(&self) {
        // SAFETY: the mapping made in `anonymous`; the caller makes sure nothing uses it any
        // more.
        let _ = unsafe { rustix::mm::munmap(self.words as *mut std::ffi::c_void, REGION_BYTES) };
    }
}

/// Whether a request is not aligned for direct I/O on `file` (its offset, size or memory).
pub fn unaligned(file: &crate::file::FileHandle, addr: usize, len: usize, offset: u64) -> bool {
    let (off_align, mem_align) = (file.dio_offset_align() as u64, file.dio_mem_align() as usize);
    off_align == 0 || !(offset | len as u64).is_multiple_of(off_align) || !addr.is_multiple_of(mem_align.max(1))
}

/// Which slots a thread owns (process-wide: a slot index means the same in every region).
static OWNED: [std::sync::atomic::AtomicBool; SLOTS] = [const { std::sync::atomic::AtomicBool::new(false) }; SLOTS];
/// The slot threads share once every other is owned.
const SHARED_SLOT: usize = SLOTS - 1;

/// A thread's slot: owned alone until the thread ends (counted into with plain loads and
/// stores), or the shared one (counted into with atomic additions).
struct Claim {
    slot: usize,
    alone: bool,
}

impl Claim {
    fn new() -> Claim {
        static HINT: AtomicU64 = AtomicU64::new(0);
        let start = HINT.fetch_add(1, Ordering::Relaxed) as usize;
        for i in (0..SHARED_SLOT).map(|i| (start + i) % SHARED_SLOT) {
            // Acquire: what the slot's previous owner counted is seen before adding to it.
            if OWNED[i].compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return Claim { slot: i, alone: true };
            }
        }
        Claim { slot: SHARED_SLOT, alone: false }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.alone {
            OWNED[self.slot].store(false, Ordering::Release);
        }
    }
}

thread_local! {
    static CLAIM: Claim = Claim::new();
}

/// Where this thread counts: its slot's first word in `region` (marked used in the header on
/// first use) and whether it owns the slot.
#[inline]
fn slot(region: &Region) -> (usize, bool) {
    let (slot, alone) = CLAIM.try_with(|c| (c.slot, c.alone)).unwrap_or((SHARED_SLOT, false));
    let used = region.word(header::SLOTS_USED);
    if used.load(Ordering::Relaxed) & (1 << slot) == 0 {
        used.fetch_or(1 << slot, Ordering::Relaxed);
    }
    (HEADER_WORDS + slot * SLOT_WORDS, alone)
}

/// Adds `v` to a counter of a slot: plainly where the thread owns it.
#[inline]
fn add(word: &AtomicU64, v: u64, alone: bool) {
    if alone {
        word.store(word.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
    } else {
        word.fetch_add(v, Ordering::Relaxed);
    }
}

/// The process's statistics: the counters, the level they are kept at, and (for the
/// published kind) the server that hands them to readers.
pub struct Stats {
    region: AtomicPtr<AtomicU64>,
    level: AtomicU8,
    /// The fork generation the region belongs to: a forked child counts into a region of its
    /// own, never into its parent's.
    generation: AtomicU64,
    share: Mutex<Option<Box<dyn Published>>>,
    publisher: Option<Box<dyn Publisher>>,
    /// The counters at the last [`reset`](Self::reset): what this process's snapshots count
    /// from.
    baseline: Mutex<Option<Snapshot>>,
}

impl Stats {
    /// Statistics only this process sees (anonymous memory).
    pub fn private() -> Arc<Stats> {
        Arc::new(Self::new(None))
    }

    /// Statistics in memory `publisher` makes and hands to other processes (semantics §14);
    /// in anonymous memory where it fails.
    pub fn published_by(publisher: Box<dyn Publisher>) -> Arc<Stats> {
        Arc::new(Self::new(Some(publisher)))
    }

    fn new(publisher: Option<Box<dyn Publisher>>) -> Stats {
        let (region, share) = Self::make(publisher.as_deref());
        Stats {
            region: AtomicPtr::new(region.words),
            level: AtomicU8::new(0),
            generation: AtomicU64::new(crate::fork::generation()),
            share: Mutex::new(share),
            publisher,
            baseline: Mutex::new(None),
        }
    }

    /// A region: the publisher's, else anonymous memory.
    fn make(publisher: Option<&dyn Publisher>) -> (Region, Option<Box<dyn Published>>) {
        if let Some(Ok(published)) = publisher.map(|p| p.create(REGION_BYTES)) {
            return (Region::published(&*published), Some(published));
        }
        (Region::anonymous().expect("anonymous memory for statistics"), None)
    }

    /// The region this process counts into: in a forked child, a fresh one first.
    fn region(&self) -> Region {
        if self.generation.load(Ordering::Relaxed) != crate::fork::generation() {
            self.renew_after_fork();
        }
        Region { words: self.region.load(Ordering::Acquire) }
    }

    #[cold]
    fn renew_after_fork(&self) {
        let mut share = crate::sync::lock(&self.share);
        let generation = crate::fork::generation();
        if self.generation.load(Ordering::Relaxed) == generation {
            return;
        }
        // The parent's server thread does not exist here; its descriptors do.
        if let Some(old) = share.take() {
            old.forget_after_fork();
        }
        // The parent's region is left mapped: another thread may still hold it.
        let (region, shared) = Self::make(self.publisher.as_deref());
        self.region.store(region.words, Ordering::Release);
        *share = shared;
        self.generation.store(generation, Ordering::Relaxed);
        let level = self.level.load(Ordering::Relaxed);
        self.header_level(level, &mut share);
    }

    /// Sets the level (at driver open); publishing starts with the first level above 0.
    pub fn set_level(&self, level: u8) {
        let level = level.min(3);
        self.level.store(level, Ordering::Relaxed);
        let _ = self.region(); // renewed first in a forked child
        let mut share = crate::sync::lock(&self.share);
        self.header_level(level, &mut share);
    }

    fn header_level(&self, level: u8, share: &mut Option<Box<dyn Published>>) {
        let region = Region { words: self.region.load(Ordering::Acquire) };
        region.word(header::LEVEL).store(level as u64, Ordering::Relaxed);
        if level > 0
            && let Some(shared) = share.as_mut()
        {
            shared.serve();
        }
    }

    /// Stops publishing to other processes (the driver's last close, semantics §14): the
    /// server's thread ends and its socket closes; counting and reading go on. The next open
    /// at a level above 0 publishes again.
    pub fn unpublish(&self) {
        if let Some(shared) = crate::sync::lock(&self.share).as_mut() {
            shared.stop();
        }
    }

    /// The level counting is at.
    pub fn level(&self) -> u8 {
        self.level.load(Ordering::Relaxed)
    }

    /// Where counting is on, the clock now: pass it to [`io`](Self::io) when the request ends.
    #[inline]
    pub fn start(&self) -> Option<u64> {
        (self.level.load(Ordering::Relaxed) > 0).then(now)
    }

    /// Clock ticks since `started` ([`start`](Self::start)), for the time events.
    pub fn since(&self, started: u64) -> u64 {
        now().wrapping_sub(started)
    }

    /// Counts one request of `size` bytes that `path` served (or failed), started at
    /// `started` ([`start`](Self::start)). `unaligned`: not aligned for direct I/O.
    #[allow(clippy::too_many_arguments)]
    pub fn io(
        &self,
        started: u64,
        dir: Direction,
        path: Path,
        device: i32,
        size: usize,
        unaligned: bool,
        result: &Result<usize>,
    ) {
        let level = self.level.load(Ordering::Relaxed);
        if level == 0 || APART.get() {
            return;
        }
        let ticks = now().wrapping_sub(started);
        let region = self.region();
        let (base, alone) = slot(&region);
        let gpu = match usize::try_from(device) {
            Ok(g) if level >= 3 && g < MAX_GPUS => g,
            _ => MAX_GPUS,
        };
        let class = if level >= 2 { size_class(size) } else { SIZE_CLASSES };
        let cell = base + cell_at(dir, path, gpu, class);
        let add = |i: usize, v: u64| add(region.word(i), v, alone);
        match result {
            Ok(n) => {
                add(cell, 1);
                add(cell + 2, *n as u64);
                add(cell + 3, ticks);
            }
            Err(_) => {
                add(cell + 1, 1);
            }
        }
        if unaligned {
            let d = matches!(dir, Direction::Write) as usize;
            add(base + UNALIGNED_AT + (d * PATHS + path as usize) * GPU_ROWS + gpu, 1);
        }
    }

    /// Runs `f`, whose requests are not counted as requests: cuFile's vector I/O, which its
    /// caller counts apart ([`Counter::ReadvOk`] and its kin), as cuFile's statistics keep
    /// `cuFileReadv` and `cuFileWritev` out of the read and write counters.
    pub fn apart<T>(f: impl FnOnce() -> T) -> T {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                APART.set(self.0);
            }
        }
        let _restore = Restore(APART.replace(true));
        f()
    }

    /// Adds `n` to an event counter (where counting is on).
    pub fn add(&self, counter: Counter, n: u64) {
        if self.level.load(Ordering::Relaxed) == 0 {
            return;
        }
        let region = self.region();
        let (base, alone) = slot(&region);
        add(region.word(base + EVENTS_AT + counter as usize), n, alone);
    }

    /// Counts a registration (`len` > 0) or deregistration (`len` < 0) of device memory of
    /// `device`.
    pub fn registered_bytes(&self, device: i32, len: i64) {
        if self.level.load(Ordering::Relaxed) == 0 {
            return;
        }
        let gpu = usize::try_from(device).ok().filter(|&g| g < MAX_GPUS).unwrap_or(MAX_GPUS);
        let region = self.region();
        let (base, alone) = slot(&region);
        add(region.word(base + REG_AT + gpu), len as u64, alone);
    }

    /// Records the bytes of the last batch submitted (`last_batch_*_bytes`).
    pub fn last_batch(&self, read: u64, write: u64) {
        if self.level.load(Ordering::Relaxed) == 0 {
            return;
        }
        let region = self.region();
        region.word(header::LAST_BATCH_READ).store(read, Ordering::Relaxed);
        region.word(header::LAST_BATCH_WRITE).store(write, Ordering::Relaxed);
    }

    /// The counters now (since the last [`reset`](Self::reset)).
    pub fn snapshot(&self) -> Snapshot {
        let now = self.counted();
        match crate::sync::lock(&self.baseline).as_ref() {
            Some(base) if base.pid == now.pid => now.since(base),
            _ => now,
        }
    }

    /// Counts from zero again, for this process's snapshots (cuFile's `cuFileStatsReset`):
    /// the counters themselves go on (threads add to them without locks), so what readers in
    /// other processes see is unchanged. A forked child's counters start from zero anyway.
    pub fn reset(&self) {
        let now = self.counted();
        *crate::sync::lock(&self.baseline) = Some(now);
    }

    /// The counters as counted, since the process (or its fork) began.
    fn counted(&self) -> Snapshot {
        let region = self.region();
        // Published counters are read from their file, so that looking never allocates.
        if let Some(Ok(snapshot)) = crate::sync::lock(&self.share).as_ref().and_then(|s| s.snapshot()) {
            return snapshot;
        }
        Snapshot::read(&|i| region.word(i).load(Ordering::Relaxed))
    }
}

impl Drop for Stats {
    fn drop(&mut self) {
        let share = crate::sync::lock(&self.share).take();
        if self.generation.load(Ordering::Relaxed) == crate::fork::generation() {
            match share {
                Some(share) => drop(share), // the publisher's memory, unmapped by it
                None => Region { words: self.region.load(Ordering::Acquire) }.unmap(),
            }
        } else if let Some(share) = share {
            share.forget_after_fork(); // a forked child: the parent's, never renewed here
        }
    }
}

#[cfg(test)]
mod tests;
