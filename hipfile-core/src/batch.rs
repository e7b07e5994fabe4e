//! Batches (semantics §11): `hipFileBatchIOSetUp`, `Submit`, `GetStatus`, `Cancel` and
//! `Destroy`, with cuFile's semantics where AMD's released code has none.
//!
//! A batch is a bounded set of entries in flight. Submitting checks every entry the way a
//! synchronous call is checked (handle, buffer, offsets) before any runs, all or nothing; the
//! entries then run concurrently on the driver's batch threads, each through the same dispatch
//! (and retry on bounce) as `hipFileRead`/`hipFileWrite`, and each finished entry leaves an event.
//! `GetStatus` reaps events; an entry counts against the batch's capacity from its submission
//! until its event is reaped (or the batch is canceled). `Cancel` drops the entries that have
//! not started and waits for those running, so that when it returns (and when `Destroy`
//! returns) nothing of the batch touches memory any more.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::backend::{Backend, Direction};
use crate::dispatch::Planned;
use crate::error::{OpError, Result};
use crate::platform::HandleId;
use crate::pool::WorkerPool;
use crate::stats::Counter;
use crate::sync::{lock, wait};

pub use crate::config::MAX_BATCH_ENTRIES;

/// Threads running batch entries at most.
pub(crate) const MAX_BATCH_THREADS: usize = 16;

/// A batch's key: opaque, never reused, never dereferenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchId(pub u64);

/// One entry of a batch: a read or write as `hipFileRead`/`hipFileWrite` take it, and the
/// caller's cookie, given back with its event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchEntry {
    /// Which way the bytes go.
    pub direction: Direction,
    /// The registered file.
    pub handle: HandleId,
    /// The buffer (registered, or any device allocation).
    pub buffer_base: usize,
    /// Where in the buffer.
    pub buffer_offset: i64,
    /// Where in the file.
    pub file_offset: i64,
    /// Bytes to move.
    pub size: usize,
    /// The caller's value for this entry.
    pub cookie: usize,
}

/// A finished entry: its cookie, and the bytes moved or why it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchEvent {
    /// The entry's cookie.
    pub cookie: usize,
    /// Bytes moved (fewer at end of file), or the error.
    pub result: Result<usize>,
}

impl BatchEvent {
    /// The event's `ret` as C sees it: the bytes, or a negative `errno` (`-EFBIG`), hipFile
    /// code (`-5022`) or HIP error: `hipFileRead`'s convention (semantics §1), with the
    /// `errno` itself in place of `-1`.
    pub fn ret(&self) -> i64 {
        crate::error::negative_ret(&self.result)
    }
}

/// One batch: its capacity and what is in flight.
pub(crate) struct Batch {
    pub(crate) capacity: usize,
    pub(crate) state: Mutex<BatchState>,
    pub(crate) changed: Condvar,
}

impl Batch {
    /// This batch for a forked child: its finished events if its lock is free, none if a
    /// thread of the parent held it at the fork; nothing running (the parent's entries in
    /// flight would never finish there).
    pub(crate) fn renewed(&self) -> Batch {
        let done = match self.state.try_lock() {
            Ok(state) => state.done.clone(),
            Err(std::sync::TryLockError::Poisoned(state)) => state.into_inner().done.clone(),
            Err(std::sync::TryLockError::WouldBlock) => VecDeque::new(),
        };
        let state = BatchState { generation: 0, outstanding: done.len(), running: 0, done };
        Batch { capacity: self.capacity, state: Mutex::new(state), changed: Condvar::new() }
    }
}

pub(crate) struct BatchState {
    /// Bumped by a cancel: entries of an older generation do not run or report.
    pub(crate) generation: u64,
    /// Submitted and not reaped (nor canceled).
    pub(crate) outstanding: usize,
    /// Running now.
    pub(crate) running: usize,
    /// Finished, not reaped.
    pub(crate) done: VecDeque<BatchEvent>,
}

/// The batches of a driver and the threads that run their entries.
pub(crate) struct Batches {
    pub(crate) batches: Mutex<HashMap<BatchId, Arc<Batch>>>,
    /// The fork generation the registry's batches belong to ([`crate::fork`]).
    pub(crate) fork: AtomicU64,
    pub(crate) next: AtomicU64,
    pub(crate) salt: u64,
    /// The threads that run entries (a forked child starts its own).
    pub(crate) runner: WorkerPool,
}

impl Batches {
    pub(crate) fn new(salt: u64) -> Self {
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get()).clamp(2, MAX_BATCH_THREADS);
        let runner = WorkerPool::new(threads, "hipfile-batch".into(), Arc::new(|| {}));
        let fork = AtomicU64::new(crate::fork::generation());
        Batches { batches: Mutex::new(HashMap::new()), fork, next: AtomicU64::new(1), salt, runner }
    }

    /// The registry, in a forked child with every batch renewed first: a thread of the parent
    /// (a batch thread recording an event, a caller waking from a wait) may have held a
    /// batch's lock at the fork, and it would stay held here forever. The registry's own lock is
    /// only taken inside a fork section, so a fork never finds it held.
    pub(crate) fn registry(
        &self,
    ) -> (std::sync::RwLockReadGuard<'static, ()>, std::sync::MutexGuard<'_, HashMap<BatchId, Arc<Batch>>>) {
        let section = crate::fork::section();
        let mut map = lock(&self.batches);
        let fork = crate::fork::generation();
        if self.fork.swap(fork, Ordering::AcqRel) != fork {
            for batch in map.values_mut() {
                *batch = Arc::new(batch.renewed());
            }
        }
        (section, map)
    }

    /// Forgets every batch, each canceled as `hipFileBatchIODestroy` cancels it (the driver's
    /// last close, semantics §2): entries not started never run, running ones are waited for.
    pub(crate) fn forget_all(&self) {
        let all: Vec<Arc<Batch>> = self.registry().1.drain().map(|(_, batch)| batch).collect();
        all.iter().for_each(|batch| cancel(batch));
    }

    /// Ends the batch threads (idle once the driver has closed); the next submission starts them.
    pub(crate) fn stop_threads(&self) {
        self.runner.stop();
    }

    pub(crate) fn get(&self, id: BatchId) -> Result<Arc<Batch>> {
        self.registry().1.get(&id).cloned().ok_or_else(|| OpError::InvalidValue.into())
    }
}

pub(crate) fn cancel(batch: &Batch) {
    let mut state = lock(&batch.state);
    state.generation += 1;
    state.outstanding = 0;
    state.done.clear();
    while state.running > 0 {
        state = wait(&batch.changed, state);
    }
    batch.changed.notify_all();
}

/// Runs entries (one, or several together), unless their batch was canceled since they were
/// submitted (at `submitted`, where statistics are counted).
pub(crate) fn run_entries<B: Backend>(
    batch: &Batch,
    generation: u64,
    entries: Vec<(usize, Planned<B>)>,
    submitted: Option<u64>,
) {
    let n = entries.len();
    {
        let _section = crate::fork::section();
        let mut state = lock(&batch.state);
        if state.generation != generation {
            return;
        }
        state.running += n;
    }
    let (cookies, planned): (Vec<usize>, Vec<Planned<B>>) = entries.into_iter().unzip();
    let stats = planned.first().map(Planned::stats);
    let directions: Vec<Direction> = planned.iter().map(Planned::direction).collect();
    // A panic would leave the entries running forever (and a cancel waiting for them).
    let results = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match planned.len() {
        1 => vec![planned.into_iter().next().expect("one").run()],
        _ => Planned::run_many(planned),
    }))
    .unwrap_or_else(|_| (0..n).map(|_| Err(OpError::InternalError.into())).collect());
    if let (Some(t), Some(stats)) = (submitted, stats) {
        let elapsed = stats.since(t);
        for (direction, result) in directions.iter().zip(&results) {
            stats.add(Counter::BatchCompletionTime, elapsed);
            let Ok(bytes) = result else {
                stats.add(Counter::BatchCompleteErr, 1);
                continue;
            };
            let moved = if *direction == Direction::Read { Counter::BatchReadBytes } else { Counter::BatchWriteBytes };
            stats.add(moved, *bytes as u64);
            stats.add(Counter::BatchCompleteOk, 1);
        }
    }
    let _section = crate::fork::section();
    let mut state = lock(&batch.state);
    state.running -= n;
    if state.generation == generation {
        state.done.extend(cookies.into_iter().zip(results).map(|(cookie, result)| BatchEvent { cookie, result }));
    }
    batch.changed.notify_all();
}
