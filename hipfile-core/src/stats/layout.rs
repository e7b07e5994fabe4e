//! Where each counter lives in a region: its size and header, the slots, and the cells of a
//! slot by direction, path, GPU and size class.

use crate::backend::Direction;

/// The size of a region of counters, in bytes.
pub const REGION_BYTES: usize = REGION_WORDS * 8;

/// GPUs counted apart (`HIPFILE_MAX_GPUS`); higher device numbers count with no GPU.
pub const MAX_GPUS: usize = 16;
/// Size classes: 0 is under 1 KiB, class `i` is 2^(i-1) KiB up to 2^i KiB, the last is open.
pub const SIZE_CLASSES: usize = 24;

pub(super) const GPU_ROWS: usize = MAX_GPUS + 1; // the last: not per GPU
pub(super) const CLASS_ROWS: usize = SIZE_CLASSES + 1; // the last: no size class (level 1)
pub(super) const PATHS: usize = 3;
pub(super) const CELL: usize = 4; // ok, err, bytes, clock ticks
pub(super) const SLOTS: usize = 64;
pub(super) const EVENTS: usize = 40;

pub(super) const IO_WORDS: usize = 2 * PATHS * GPU_ROWS * CLASS_ROWS * CELL;
pub(super) const UNALIGNED_AT: usize = IO_WORDS;
pub(super) const EVENTS_AT: usize = UNALIGNED_AT + 2 * PATHS * GPU_ROWS;
pub(super) const REG_AT: usize = EVENTS_AT + EVENTS;
pub(super) const PAGE_WORDS: usize = 512;
/// A slot's size in words, whole pages.
pub(super) const SLOT_WORDS: usize = (REG_AT + GPU_ROWS).div_ceil(PAGE_WORDS) * PAGE_WORDS;
pub(super) const HEADER_WORDS: usize = PAGE_WORDS;
/// The region's size in words.
pub(super) const REGION_WORDS: usize = HEADER_WORDS + SLOTS * SLOT_WORDS;

/// The header's words.
pub(super) mod header {
    pub(in crate::stats) const MAGIC: usize = 0;
    pub(in crate::stats) const VERSION: usize = 1;
    pub(in crate::stats) const SLOTS: usize = 2;
    pub(in crate::stats) const SLOT_WORDS: usize = 3;
    pub(in crate::stats) const HEADER_WORDS: usize = 4;
    pub(in crate::stats) const PID: usize = 5;
    pub(in crate::stats) const LEVEL: usize = 6;
    /// Bit `i`: slot `i` has been counted into.
    pub(in crate::stats) const SLOTS_USED: usize = 7;
    pub(in crate::stats) const LAST_BATCH_READ: usize = 8;
    pub(in crate::stats) const LAST_BATCH_WRITE: usize = 9;
    /// The clock's kind (1: time-stamp counter ticks, 0: nanoseconds), and the clock and
    /// `CLOCK_MONOTONIC` read together when the region was made.
    pub(in crate::stats) const CLOCK: usize = 10;
    pub(in crate::stats) const TICKS0: usize = 11;
    pub(in crate::stats) const MONO0: usize = 12;
}

pub(super) const MAGIC: u64 = u64::from_le_bytes(*b"HFRSTATS");
pub(super) const VERSION: u64 = 2;

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
    /// Time spent in submit calls (clock ticks; ns in a [`Snapshot`](crate::stats::Snapshot)).
    BatchSubmitTime,
    /// Time from submission to completion, summed over completed entries (clock ticks; ns in a
    /// [`Snapshot`](crate::stats::Snapshot)).
    BatchCompletionTime,
    /// Requests a p2p backend found no path for, retried on the bounce path.
    BouncedNoPath,
    /// Requests a p2p backend declined (unaligned, ...), served by the bounce path.
    BouncedDeclined,
    /// cuFile's vector reads (`cuFileReadv`), counted apart from the requests they make.
    ReadvOk,
    ReadvErr,
    ReadvBytes,
    /// Time spent in vector reads (clock ticks; ns in a [`Snapshot`](crate::stats::Snapshot)).
    ReadvTime,
    /// cuFile's vector writes (`cuFileWritev`), counted apart from the requests they make.
    WritevOk,
    WritevErr,
    WritevBytes,
    /// Time spent in vector writes (clock ticks; ns in a [`Snapshot`](crate::stats::Snapshot)).
    WritevTime,
    /// Write requests done durably (each on stable storage when its call returned, semantics
    /// §5), and their bytes: what a durable save's writes must be (docs/performance.md).
    DurableWrites,
    DurableWriteBytes,
}

impl Counter {
    /// The counters of time (clock ticks in a region, ns in a snapshot).
    pub const TIMES: [Counter; 4] =
        [Counter::BatchSubmitTime, Counter::BatchCompletionTime, Counter::ReadvTime, Counter::WritevTime];

    /// Every counter, in order.
    pub const ALL: [Counter; 36] = [
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
        Counter::ReadvOk,
        Counter::ReadvErr,
        Counter::ReadvBytes,
        Counter::ReadvTime,
        Counter::WritevOk,
        Counter::WritevErr,
        Counter::WritevBytes,
        Counter::WritevTime,
        Counter::DurableWrites,
        Counter::DurableWriteBytes,
    ];
}

/// The index of a cell's first word in a slot.
pub(super) fn cell_at(dir: Direction, path: Path, gpu: usize, class: usize) -> usize {
    let d = matches!(dir, Direction::Write) as usize;
    (((d * PATHS + path as usize) * GPU_ROWS + gpu) * CLASS_ROWS + class) * CELL
}

/// The size class of a request of `bytes`.
pub fn size_class(bytes: usize) -> usize {
    let kib = (bytes >> 10) as u64;
    if kib == 0 { 0 } else { (64 - kib.leading_zeros() as usize).min(SIZE_CLASSES - 1) }
}
