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

/// The size of a region of counters, in bytes.
pub const REGION_BYTES: usize = REGION_WORDS * 8;

/// GPUs counted apart (`HIPFILE_MAX_GPUS`); higher device numbers count with no GPU.
pub const MAX_GPUS: usize = 16;
/// Size classes: 0 is under 1 KiB, class `i` is 2^(i-1) KiB up to 2^i KiB, the last is open.
pub const SIZE_CLASSES: usize = 24;

const GPU_ROWS: usize = MAX_GPUS + 1; // the last: not per GPU
const CLASS_ROWS: usize = SIZE_CLASSES + 1; // the last: no size class (level 1)
const PATHS: usize = 3;
const CELL: usize = 4; // ok, err, bytes, clock ticks
const SLOTS: usize = 64;
const EVENTS: usize = 32;

const IO_WORDS: usize = 2 * PATHS * GPU_ROWS * CLASS_ROWS * CELL;
const UNALIGNED_AT: usize = IO_WORDS;
const EVENTS_AT: usize = UNALIGNED_AT + 2 * PATHS * GPU_ROWS;
const REG_AT: usize = EVENTS_AT + EVENTS;
const PAGE_WORDS: usize = 512;
/// A slot's size in words, whole pages.
const SLOT_WORDS: usize = (REG_AT + GPU_ROWS).div_ceil(PAGE_WORDS) * PAGE_WORDS;
const HEADER_WORDS: usize = PAGE_WORDS;
/// The region's size in words.
const REGION_WORDS: usize = HEADER_WORDS + SLOTS * SLOT_WORDS;

/// The header's words.
mod header {
    pub(super) const MAGIC: usize = 0;
    pub(super) const VERSION: usize = 1;
    pub(super) const SLOTS: usize = 2;
    pub(super) const SLOT_WORDS: usize = 3;
    pub(super) const HEADER_WORDS: usize = 4;
    pub(super) const PID: usize = 5;
    pub(super) const LEVEL: usize = 6;
    /// Bit `i`: slot `i` has been counted into.
    pub(super) const SLOTS_USED: usize = 7;
    pub(super) const LAST_BATCH_READ: usize = 8;
    pub(super) const LAST_BATCH_WRITE: usize = 9;
    /// The clock's kind (1: time-stamp counter ticks, 0: nanoseconds), and the clock and
    /// `CLOCK_MONOTONIC` read together when the region was made.
    pub(super) const CLOCK: usize = 10;
    pub(super) const TICKS0: usize = 11;
    pub(super) const MONO0: usize = 12;
}

const MAGIC: u64 = u64::from_le_bytes(*b"HFRSTATS");
const VERSION: u64 = 1;

/// The path that served a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// A `p2p` backend: storage to GPU memory.
    P2p = 0,
    /// A `bounce` backend, through pinned host memory.
    Bounce = 1,
    /// Host memory, moved by the driver itself (semantics §4).
    Host = 2,
}

impl Path {
    /// All paths, in counter order.
    pub const ALL: [Path; PATHS] = [Path::P2p, Path::Bounce, Path::Host];
}

/// Counted events other than I/O requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Counter {
    HandleRegisterOk,
    HandleRegisterErr,
    HandleDeregisterOk,
    HandleDeregisterErr,
    BufRegisterOk,
    BufRegisterErr,
    BufDeregisterOk,
    BufDeregisterErr,
    BatchSetupOk,
    BatchSetupErr,
    BatchSubmitOk,
    BatchSubmitErr,
    BatchCancelOk,
    BatchCancelErr,
    BatchDestroy,
    /// Entries submitted.
    BatchEntries,
    /// Entries submitted that the bounce path takes.
    BatchEntriesBounce,
    /// Entries submitted that a p2p backend takes.
    BatchEntriesP2p,
    BatchCompleteOk,
    BatchCompleteErr,
    BatchReadBytes,
    BatchWriteBytes,
    /// Time spent in submit calls (clock ticks; ns in a [`Snapshot`]).
    BatchSubmitTime,
    /// Time from submission to completion, summed over completed entries (clock ticks; ns in a
    /// [`Snapshot`]).
    BatchCompletionTime,
    /// Requests a p2p backend found no path for, retried on the bounce path.
    BouncedNoPath,
    /// Requests a p2p backend declined (unaligned, ...), served by the bounce path.
    BouncedDeclined,
}

impl Counter {
    /// Every counter, in order.
    pub const ALL: [Counter; 26] = [
        Counter::HandleRegisterOk,
        Counter::HandleRegisterErr,
        Counter::HandleDeregisterOk,
        Counter::HandleDeregisterErr,
        Counter::BufRegisterOk,
        Counter::BufRegisterErr,
        Counter::BufDeregisterOk,
        Counter::BufDeregisterErr,
        Counter::BatchSetupOk,
        Counter::BatchSetupErr,
        Counter::BatchSubmitOk,
        Counter::BatchSubmitErr,
        Counter::BatchCancelOk,
        Counter::BatchCancelErr,
        Counter::BatchDestroy,
        Counter::BatchEntries,
        Counter::BatchEntriesBounce,
        Counter::BatchEntriesP2p,
        Counter::BatchCompleteOk,
        Counter::BatchCompleteErr,
        Counter::BatchReadBytes,
        Counter::BatchWriteBytes,
        Counter::BatchSubmitTime,
        Counter::BatchCompletionTime,
        Counter::BouncedNoPath,
        Counter::BouncedDeclined,
    ];
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

/// The index of a cell's first word in a slot.
fn cell_at(dir: Direction, path: Path, gpu: usize, class: usize) -> usize {
    let d = matches!(dir, Direction::Write) as usize;
    (((d * PATHS + path as usize) * GPU_ROWS + gpu) * CLASS_ROWS + class) * CELL
}

/// The size class of a request of `bytes`.
pub fn size_class(bytes: usize) -> usize {
    let kib = (bytes >> 10) as u64;
    if kib == 0 { 0 } else { (64 - kib.leading_zeros() as usize).min(SIZE_CLASSES - 1) }
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
        if level == 0 {
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

/// The clock: the CPU's time-stamp counter where it runs at one rate on every core and in
/// every sleep state (x86-64 with `constant_tsc` and `nonstop_tsc`: a third of the cost of
/// `CLOCK_MONOTONIC`), else `CLOCK_MONOTONIC` in nanoseconds.
#[inline]
fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if tsc_usable() {
        // SAFETY: RDTSC has no preconditions on x86-64.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    monotonic_ns()
}

/// 1 when [`now`] reads the time-stamp counter, 0 when it gives nanoseconds.
fn clock_kind() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if tsc_usable() {
        return 1;
    }
    0
}

#[cfg(target_arch = "x86_64")]
fn tsc_usable() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| {
        use std::io::BufRead;
        let Ok(file) = std::fs::File::open("/proc/cpuinfo") else { return false };
        let flags = std::io::BufReader::new(file).lines().map_while(|l| l.ok()).find(|l| l.starts_with("flags"));
        flags.is_some_and(|f| {
            let words: Vec<&str> = f.split_whitespace().collect();
            words.contains(&"constant_tsc") && words.contains(&"nonstop_tsc")
        })
    })
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds per tick of a region whose clock of `kind` read `ticks0` when
/// `CLOCK_MONOTONIC` read `mono0` (the region's header): measured against the time since, or
/// over a millisecond once per process when less has passed. The time-stamp counter is the
/// machine's, so another process on it converts the same way.
fn ns_per_tick(kind: u64, ticks0: u64, mono0: u64) -> f64 {
    if kind == 0 {
        return 1.0;
    }
    if clock_kind() != kind {
        return 0.0; // cannot happen on one machine; times then read 0
    }
    let rate = |t0: u64, m0: u64| {
        let (t, m) = (now(), monotonic_ns());
        (m > m0 && t > t0).then(|| ((m - m0) as f64 / (t - t0) as f64, m - m0))
    };
    match rate(ticks0, mono0) {
        Some((r, elapsed)) if elapsed >= 1_000_000 => r,
        _ => {
            static CALIBRATED: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
            *CALIBRATED.get_or_init(|| {
                let (t0, m0) = (now(), monotonic_ns());
                while monotonic_ns() - m0 < 1_000_000 {
                    std::hint::spin_loop();
                }
                rate(t0, m0).map_or(0.0, |(r, _)| r)
            })
        }
    }
}

/// One direction's (or path's, or GPU's) totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Requests that succeeded.
    pub ok: u64,
    /// Requests that failed in a backend.
    pub err: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Time the successful requests took, summed (µs).
    pub micros: u64,
    /// Requests not aligned for direct I/O.
    pub unaligned: u64,
}

impl Totals {
    /// Sums saturate: the counters come from shared memory, and whatever they hold must not
    /// overflow here (semantics §14).
    fn add(&mut self, o: &Totals) {
        self.ok = self.ok.saturating_add(o.ok);
        self.err = self.err.saturating_add(o.err);
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.micros = self.micros.saturating_add(o.micros);
        self.unaligned = self.unaligned.saturating_add(o.unaligned);
    }

    /// What was counted after `base` (a count that went down, such as memory registered, is
    /// kept as it is now).
    fn since(&self, base: &Totals) -> Totals {
        Totals {
            ok: self.ok.saturating_sub(base.ok),
            err: self.err.saturating_sub(base.err),
            bytes: self.bytes.saturating_sub(base.bytes),
            micros: self.micros.saturating_sub(base.micros),
            unaligned: self.unaligned.saturating_sub(base.unaligned),
        }
    }

    /// Bytes per second of busy time (0 without time).
    pub fn bandwidth(&self) -> u64 {
        per_second(self.bytes, self.micros)
    }

    /// Average time per successful request (µs; 0 without requests).
    pub fn latency_avg_us(&self) -> u64 {
        self.micros.checked_div(self.ok).unwrap_or(0)
    }

    /// Successful requests per second of busy time (0 without time).
    pub fn ops_per_second(&self) -> u64 {
        per_second(self.ok, self.micros)
    }
}

fn per_second(n: u64, micros: u64) -> u64 {
    if micros == 0 { 0 } else { (n as u128 * 1_000_000 / micros as u128) as u64 }
}

/// The counters at one moment, summed over threads.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The observed process.
    pub pid: u32,
    /// The level it counts at.
    pub level: u8,
    /// Per direction, path, GPU row and class row.
    cells: Vec<Totals>,
    events: [u64; EVENTS],
    reg_bytes: [u64; GPU_ROWS],
    last_batch: (u64, u64),
}

impl Snapshot {
    /// Whether a region's first two words (magic number, version) are this layout's.
    pub fn is_region(first_words: [u64; 2]) -> bool {
        first_words == [MAGIC, VERSION]
    }

    /// The counters of a region read through `read(bytes, offset)`, which fills `bytes` from
    /// the region's byte `offset`: the header, then only the slots in use (reading a shared
    /// memory file's unused pages would give it memory for them). Another process's region is
    /// untrusted: a region of another layout is `InvalidData`, and any values sum safely.
    pub fn read_region(mut read: impl FnMut(&mut [u8], u64) -> std::io::Result<()>) -> std::io::Result<Snapshot> {
        let mut words = vec![0u64; REGION_WORDS];
        let mut fill = |words: &mut [u64], at: usize| -> std::io::Result<()> {
            let mut bytes = vec![0u8; words.len() * 8];
            read(&mut bytes, (at * 8) as u64)?;
            for (w, b) in words.iter_mut().zip(bytes.chunks_exact(8)) {
                *w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
            }
            Ok(())
        };
        fill(&mut words[..HEADER_WORDS], 0)?;
        if !Snapshot::is_region([words[header::MAGIC], words[header::VERSION]]) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "statistics of another layout or version",
            ));
        }
        let used = words[header::SLOTS_USED];
        for slot in (0..SLOTS).filter(|s| used & (1 << s) != 0) {
            let at = HEADER_WORDS + slot * SLOT_WORDS;
            fill(&mut words[at..at + SLOT_WORDS], at)?;
        }
        Ok(Snapshot::read(&|i| words.get(i).copied().unwrap_or(0)))
    }

    /// Sums the used slots of a region's words: untrusted (shared) memory, so any values are
    /// read without overflow or out-of-range access.
    fn read(w: &dyn Fn(usize) -> u64) -> Snapshot {
        let ns_per_tick = ns_per_tick(w(header::CLOCK), w(header::TICKS0), w(header::MONO0));
        let ns = |ticks: u64| (ticks as f64 * ns_per_tick) as u64;
        let mut cells = vec![Totals::default(); 2 * PATHS * GPU_ROWS * CLASS_ROWS];
        let mut events = [0u64; EVENTS];
        let mut reg_bytes = [0u64; GPU_ROWS];
        let used = w(header::SLOTS_USED);
        for slot in (0..SLOTS).filter(|s| used & (1 << s) != 0) {
            let base = HEADER_WORDS + slot * SLOT_WORDS;
            for (c, t) in cells.iter_mut().enumerate() {
                let at = base + c * CELL;
                let ns = ns(w(at + 3));
                let rows = c / CLASS_ROWS; // (direction, path, gpu)
                t.add(&Totals {
                    ok: w(at),
                    err: w(at + 1),
                    bytes: w(at + 2),
                    micros: ns / 1000,
                    unaligned: if c % CLASS_ROWS == 0 { w(base + UNALIGNED_AT + rows) } else { 0 },
                });
            }
            for (e, v) in events.iter_mut().enumerate() {
                *v = v.saturating_add(w(base + EVENTS_AT + e));
            }
            for (g, v) in reg_bytes.iter_mut().enumerate() {
                *v = v.wrapping_add(w(base + REG_AT + g));
            }
        }
        for e in [Counter::BatchSubmitTime, Counter::BatchCompletionTime] {
            events[e as usize] = ns(events[e as usize]);
        }
        Snapshot {
            pid: w(header::PID) as u32,
            level: w(header::LEVEL) as u8,
            cells,
            events,
            reg_bytes,
            last_batch: (w(header::LAST_BATCH_READ), w(header::LAST_BATCH_WRITE)),
        }
    }

    /// The counts after `base` (an earlier snapshot of the same process): requests, bytes,
    /// times and events. Memory registered now, the level and the last batch's bytes are
    /// this snapshot's.
    fn since(&self, base: &Snapshot) -> Snapshot {
        let mut out = self.clone();
        for (c, b) in out.cells.iter_mut().zip(&base.cells) {
            *c = c.since(b);
        }
        for (e, b) in out.events.iter_mut().zip(&base.events) {
            *e = e.saturating_sub(*b);
        }
        out
    }

    /// Totals of one direction, over `path` (all when `None`) and `gpu` (all when `None`;
    /// a GPU's figures exist at level 3).
    pub fn totals(&self, dir: Direction, path: Option<Path>, gpu: Option<usize>) -> Totals {
        let mut t = Totals::default();
        for p in Path::ALL.into_iter().filter(|p| path.is_none_or(|q| q == *p)) {
            for g in (0..GPU_ROWS).filter(|g| gpu.is_none_or(|q| q == *g)) {
                for class in 0..CLASS_ROWS {
                    t.add(&self.cells[cell_at(dir, p, g, class) / CELL]);
                }
            }
        }
        t
    }

    /// Requests per size class (level 2 and up), all paths and GPUs.
    pub fn size_histogram(&self, dir: Direction) -> [u64; SIZE_CLASSES] {
        let mut h = [0u64; SIZE_CLASSES];
        for p in Path::ALL {
            for g in 0..GPU_ROWS {
                for (class, v) in h.iter_mut().enumerate() {
                    let c = &self.cells[cell_at(dir, p, g, class) / CELL];
                    *v = v.saturating_add(c.ok.saturating_add(c.err));
                }
            }
        }
        h
    }

    /// An event counter.
    pub fn get(&self, counter: Counter) -> u64 {
        self.events[counter as usize]
    }

    /// Device memory of `gpu` registered now (bytes).
    pub fn registered_bytes(&self, gpu: usize) -> u64 {
        self.reg_bytes.get(gpu).copied().unwrap_or(0)
    }

    /// The bytes the last batch submitted read and wrote.
    pub fn last_batch(&self) -> (u64, u64) {
        self.last_batch
    }

    /// The GPUs with anything counted (level 3).
    pub fn gpus_used(&self) -> Vec<usize> {
        (0..MAX_GPUS)
            .filter(|&g| {
                self.reg_bytes[g] != 0
                    || [Direction::Read, Direction::Write].into_iter().any(|d| {
                        let t = self.totals(d, None, Some(g));
                        t.ok > 0 || t.err > 0
                    })
            })
            .collect()
    }

    /// The time counted into `BatchSubmitTime` or `BatchCompletionTime`, in µs.
    pub fn micros(&self, counter: Counter) -> u64 {
        self.events[counter as usize] / 1000
    }
}

#[cfg(test)]
mod tests;
