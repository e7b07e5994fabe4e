//! Where the bounce path's threads spend their time (`hipfile bench --profile`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::fileio::ReadPolicy;

/// Where the threads of this backend spent their time, and how much they moved: the profile
/// `hipfile bench --profile` prints. Times are summed over threads.
#[derive(Debug, Default)]
pub(crate) struct Profile {
    /// Stripes read and chunks written.
    pub(crate) chunks: AtomicU64,
    /// In file reads and writes (page cache copies, or waiting for the disk).
    pub(crate) file_ns: AtomicU64,
    /// Waiting for copies, the GPU side of the pipeline: a read's at its end, a lane's last
    /// one.
    pub(crate) copy_wait_ns: AtomicU64,
    /// Waiting for (or creating) a read's slot, which includes waiting for the copy last
    /// queued from it, or a write's lane.
    pub(crate) lane_wait_ns: AtomicU64,
    /// Reads: asking the page cache what it holds of a stripe's parts.
    pub(crate) probe_ns: AtomicU64,
    /// Reads: looking for the next piece while other threads set stripes up.
    pub(crate) setup_wait_ns: AtomicU64,
    /// Reads: queuing copies.
    pub(crate) ship_ns: AtomicU64,
    /// Reads: bytes moved out of the reading cores' caches before their copies ([`demote`]).
    pub(crate) demoted_bytes: AtomicU64,
    /// Small reads' copies gathered from several threads ([`crate::gather`]), and the pieces
    /// in them.
    pub(crate) gathered_copies: AtomicU64,
    pub(crate) gathered_pieces: AtomicU64,
    /// Reads, wall time per call (not thread time): from its start to its first copy queued,
    /// and to its last.
    pub(crate) first_copy_wall_ns: AtomicU64,
    pub(crate) last_copy_wall_ns: AtomicU64,
}

/// Adds the time since `start` to `counter`.
pub(crate) fn charge(counter: &AtomicU64, start: Instant) {
    counter.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

impl Profile {
    /// The backend's counters (`Backend::counters`): this profile, how `reads` chose their path,
    /// and the io_uring operations done.
    pub(crate) fn counters(&self, reads: &ReadPolicy, io_uring_ops: u64) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("chunks", get(&self.chunks)),
            ("chunks_read_cached", get(&reads.cached_chunks)),
            ("chunks_read_direct", get(&reads.direct_chunks)),
            ("io_uring_ops", io_uring_ops),
            ("file_ns", get(&self.file_ns)),
            ("copy_wait_ns", get(&self.copy_wait_ns)),
            ("lane_wait_ns", get(&self.lane_wait_ns)),
            ("probe_ns", get(&self.probe_ns)),
            ("setup_wait_ns", get(&self.setup_wait_ns)),
            ("ship_ns", get(&self.ship_ns)),
            ("demoted_bytes", get(&self.demoted_bytes)),
            ("gathered_copies", get(&self.gathered_copies)),
            ("gathered_pieces", get(&self.gathered_pieces)),
            ("first_copy_wall_ns", get(&self.first_copy_wall_ns)),
            ("last_copy_wall_ns", get(&self.last_copy_wall_ns)),
            ("direct_slot_wait_ns", get(&reads.direct_streams.wait_ns)),
        ]
    }
}
