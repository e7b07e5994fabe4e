//! Small reads from several threads at once, copied to the device together. Each reading
//! thread queues its piece (the bytes it read into its slot, and where they go); a leader, one
//! of them, copies every piece queued so far with one operation of the runtime
//! ([`GpuRuntime::gather`]: on CUDA one kernel launch), waits for it and tells each piece's
//! thread how it went. From many threads a small read is bounded by the runtime's cost per copy
//! call, which the runtime pays one call at a time (docs/performance.md, "Small reads and many
//! callers"); a gathered copy pays it once for all its pieces.
//!
//! Up to [`LEADERS`] threads lead at once, each with a round of its own. A leader leads until
//! its own piece has been copied, then leaves the queue to the threads still waiting (each of
//! which looks, while it waits, whether it may lead), so that no caller keeps copying for
//! others while its own call could return.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use hipfile_core::sync::lock;
use hipfile_core::{GatherPiece, GpuRuntime, HipError, Stream};

use crate::profile::Profile;

/// Most pieces in one gathered copy.
const MOST: usize = 64;

/// Threads leading at once, each copying its own round on its own stream (so that one round's
/// launch and wait overlap another's copy). Measured on the H200 (docs/bench/
/// 2026-12-02-h200-gather/call3), sixteen threads' reads against a copy each: with one leader,
/// 16 KiB -2 to +6% and 32 KiB +7 to +11% (and 16 KiB 17-24% slower on another machine, call2);
/// with two, 16 KiB +3 to +16%, 32 KiB +20 to +24%; with eight, 16 KiB 11-13% slower.
const LEADERS: usize = 2;

/// How a piece's copy went: on failure, the runtime's error and the stream the copy was queued
/// on (it may still read the piece's bytes until that stream has been waited for).
pub(crate) type Outcome = Result<(), (HipError, Stream)>;

type Ticket = Arc<OnceLock<Outcome>>;

/// One device's queue of pieces to copy together.
#[derive(Default)]
pub(crate) struct Gatherer {
    queue: Mutex<Vec<(GatherPiece, Ticket)>>,
    /// Threads copying queued pieces.
    leading: AtomicUsize,
}

impl Gatherer {
    /// Copies `piece` to the device together with the pieces other threads queue meanwhile,
    /// and returns once it has been copied (or failed). `stream` is the calling thread's own,
    /// on which it queues the copies it leads (counted in `profile`). The calling thread's
    /// current device must be the gatherer's.
    ///
    /// # Safety
    /// As [`GpuRuntime::gather`] for `piece`: its source is pinned memory that stays untouched,
    /// and its destination valid, until this returns (on failure, until the returned stream has
    /// been waited for).
    pub(crate) unsafe fn copy<G: GpuRuntime + ?Sized>(
        &self,
        gpu: &G,
        piece: GatherPiece,
        stream: Stream,
        profile: &Profile,
    ) -> Outcome {
        let ticket: Ticket = Arc::default();
        lock(&self.queue).push((piece, Arc::clone(&ticket)));
        let mut looks = 0u32;
        loop {
            if let Some(outcome) = ticket.get() {
                return *outcome;
            }
            let lead = |n: usize| (n < LEADERS).then_some(n + 1);
            if self.leading.fetch_update(Ordering::Acquire, Ordering::Relaxed, lead).is_ok() {
                self.lead(gpu, stream, &ticket, profile);
                self.leading.fetch_sub(1, Ordering::Release);
                continue;
            }
            // A gathered copy takes microseconds: look again soon, and let others run now and
            // then.
            looks = looks.wrapping_add(1);
            if looks.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Copies the queued pieces, up to [`MOST`] at a time, until `own` has been copied.
    fn lead<G: GpuRuntime + ?Sized>(&self, gpu: &G, stream: Stream, own: &OnceLock<Outcome>, profile: &Profile) {
        while own.get().is_none() {
            let round: Vec<(GatherPiece, Ticket)> = {
                let mut queue = lock(&self.queue);
                let n = queue.len().min(MOST);
                queue.drain(..n).collect()
            };
            if round.is_empty() {
                return;
            }
            let pieces: Vec<GatherPiece> = round.iter().map(|(p, _)| *p).collect();
            // SAFETY: each piece's thread keeps its source and destination as they are until its
            // ticket says how the copy went (and, on failure, until it has waited for `stream`).
            let queued = unsafe { gpu.gather(&pieces, stream) };
            let outcome = queued.and_then(|()| gpu.stream_synchronize(stream)).map_err(|e| (e, stream));
            profile.gathered_copies.fetch_add(1, Ordering::Relaxed);
            profile.gathered_pieces.fetch_add(pieces.len() as u64, Ordering::Relaxed);
            for (_, ticket) in round {
                let _ = ticket.set(outcome);
            }
        }
    }
}
