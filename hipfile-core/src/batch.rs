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
use std::time::{Duration, Instant};

use crate::backend::{Backend, Direction};
use crate::driver::{Driver, HandleId, Planned, Platform};
use crate::error::{OpError, Result};
use crate::pool::WorkerPool;
use crate::stats::Counter;
use crate::sync::{lock, wait};

/// The most entries a batch holds by default (upstream's `IBatchContext::MAX_SIZE`); the
/// batch-size parameter (`hipFileParamPropertiesIOBatchsize`) changes it.
pub const MAX_BATCH_ENTRIES: usize = 128;

/// Threads running batch entries at most.
const MAX_BATCH_THREADS: usize = 16;

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
struct Batch {
    capacity: usize,
    state: Mutex<BatchState>,
    changed: Condvar,
}

impl Batch {
    /// This batch for a forked child: its finished events if its lock is free, none if a
    /// thread of the parent held it at the fork; nothing running (the parent's entries in
    /// flight would never finish there).
    fn renewed(&self) -> Batch {
        let done = match self.state.try_lock() {
            Ok(state) => state.done.clone(),
            Err(std::sync::TryLockError::Poisoned(state)) => state.into_inner().done.clone(),
            Err(std::sync::TryLockError::WouldBlock) => VecDeque::new(),
        };
        let state = BatchState { generation: 0, outstanding: done.len(), running: 0, done };
        Batch { capacity: self.capacity, state: Mutex::new(state), changed: Condvar::new() }
    }
}

struct BatchState {
    /// Bumped by a cancel: entries of an older generation do not run or report.
    generation: u64,
    /// Submitted and not reaped (nor canceled).
    outstanding: usize,
    /// Running now.
    running: usize,
    /// Finished, not reaped.
    done: VecDeque<BatchEvent>,
}

/// The batches of a driver and the threads that run their entries.
pub(crate) struct Batches {
    batches: Mutex<HashMap<BatchId, Arc<Batch>>>,
    /// The fork generation the registry's batches belong to ([`crate::fork`]).
    fork: AtomicU64,
    next: AtomicU64,
    salt: u64,
    /// The threads that run entries (a forked child starts its own).
    runner: WorkerPool,
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
    fn registry(
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

    fn get(&self, id: BatchId) -> Result<Arc<Batch>> {
        self.registry().1.get(&id).cloned().ok_or_else(|| OpError::InvalidValue.into())
    }
}

impl<P: Platform> Driver<P> {
    /// `hipFileBatchIOSetUp`: a batch of up to `capacity` entries (1 to the batch-size
    /// parameter, [`MAX_BATCH_ENTRIES`] by default, else `hipFileInvalidValue`). Needs no open
    /// driver.
    pub fn batch_setup(&self, capacity: usize) -> Result<BatchId> {
        let result = self.batch_setup_counted(capacity);
        self.count(&result, Counter::BatchSetupOk, Counter::BatchSetupErr);
        result
    }

    fn batch_setup_counted(&self, capacity: usize) -> Result<BatchId> {
        if !(1..=self.current_config().batch_size).contains(&capacity) {
            return Err(OpError::InvalidValue.into());
        }
        let b = self.batches();
        let id = BatchId(b.salt | b.next.fetch_add(1, Ordering::Relaxed));
        let state = BatchState { generation: 0, outstanding: 0, running: 0, done: VecDeque::new() };
        b.registry().1.insert(id, Arc::new(Batch { capacity, state: Mutex::new(state), changed: Condvar::new() }));
        Ok(id)
    }

    /// `hipFileBatchIOSubmit`: checks every entry as `hipFileRead`/`hipFileWrite` would (the
    /// first failure is the call's, and nothing runs), then runs them all. More entries than
    /// the batch has room for is `hipFileBatchFull`; none, or an unknown batch,
    /// `hipFileInvalidValue`.
    ///
    /// # Safety
    /// For each entry whose buffer is not device memory of the runtime (host memory, where the
    /// configuration allows it, semantics §4), the bytes it names must be valid host memory (for
    /// writes when reading, for reads when writing), untouched by anything else until its event
    /// is reaped or the batch is canceled or destroyed.
    pub unsafe fn batch_submit(&self, id: BatchId, entries: &[BatchEntry]) -> Result<()> {
        let started = self.stats().start();
        let result = self.batch_submit_counted(id, entries, started);
        self.count(&result, Counter::BatchSubmitOk, Counter::BatchSubmitErr);
        if let (Some(t), Ok(())) = (started, &result) {
            let stats = self.stats();
            // Sizes are the caller's (host memory allows any): summed without overflow.
            let bytes = |d: Direction| {
                entries.iter().filter(|e| e.direction == d).fold(0u64, |sum, e| sum.saturating_add(e.size as u64))
            };
            stats.last_batch(bytes(Direction::Read), bytes(Direction::Write));
            stats.add(Counter::BatchEntries, entries.len() as u64);
            stats.add(Counter::BatchSubmitTime, stats.since(t));
        }
        result
    }

    fn batch_submit_counted(&self, id: BatchId, entries: &[BatchEntry], started: Option<u64>) -> Result<()> {
        let batch = self.batches().get(id)?;
        if entries.is_empty() {
            return Err(OpError::InvalidValue.into());
        }
        let planned: Vec<(usize, Planned<P::Backend>)> = entries
            .iter()
            .map(|e| {
                let p = self.plan(e.direction, e.handle, e.buffer_base, e.size, e.file_offset, e.buffer_offset)?;
                Ok((e.cookie, p))
            })
            .collect::<Result<_>>()?;
        let generation = {
            let _section = crate::fork::section();
            let mut state = lock(&batch.state);
            if state.outstanding + entries.len() > batch.capacity {
                return Err(OpError::BatchFull.into());
            }
            state.outstanding += entries.len();
            state.generation
        };
        // Entries for the bounce path run together (one's read overlapping another's copy, on
        // the backend's own threads); the others each on a batch thread.
        let (together, alone): (Vec<_>, Vec<_>) = planned.into_iter().partition(|(_, p)| p.goes_to_bounce());
        self.stats().add(Counter::BatchEntriesBounce, together.len() as u64);
        self.stats().add(Counter::BatchEntriesP2p, alone.len() as u64);
        if !together.is_empty() {
            let batch = Arc::clone(&batch);
            self.batches().runner.submit(Box::new(move || run_entries(&batch, generation, together, started)));
        }
        for entry in alone {
            let batch = Arc::clone(&batch);
            self.batches().runner.submit(Box::new(move || run_entries(&batch, generation, vec![entry], started)));
        }
        Ok(())
    }

    /// `hipFileBatchIOGetStatus`: waits until at least `min` events are ready, nothing more can
    /// come, or `timeout` passes (`None`, or one too large for the clock: no limit), then reaps up to `max` events (finished
    /// entries, in the order they finished). `max` 0 or `min > max` is `hipFileInvalidValue`.
    pub fn batch_status(
        &self,
        id: BatchId,
        min: usize,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<Vec<BatchEvent>> {
        let batch = self.batches().get(id)?;
        if max == 0 || min > max {
            return Err(OpError::InvalidValue.into());
        }
        // A timeout past what the clock can represent is no limit (semantics §11).
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut state = lock(&batch.state);
        while state.done.len() < min && state.outstanding > state.done.len() {
            state = match deadline {
                None => wait(&batch.changed, state),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    batch.changed.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
        let n = state.done.len().min(max);
        state.outstanding -= n;
        Ok(state.done.drain(..n).collect())
    }

    /// `hipFileBatchIOCancel`: entries not started never run; running ones are waited for;
    /// events not reaped are dropped. The batch is empty (and reusable) afterwards.
    pub fn batch_cancel(&self, id: BatchId) -> Result<()> {
        let result = self.batches().get(id).map(|batch| cancel(&batch));
        self.count(&result, Counter::BatchCancelOk, Counter::BatchCancelErr);
        result
    }

    /// `hipFileBatchIODestroy`: cancels the batch and forgets it (unknown batches are
    /// ignored). When it returns, nothing of the batch touches memory.
    pub fn batch_destroy(&self, id: BatchId) {
        let batch = self.batches().registry().1.remove(&id);
        if let Some(batch) = batch {
            cancel(&batch);
            self.stats().add(Counter::BatchDestroy, 1);
        }
    }
}

fn cancel(batch: &Batch) {
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
fn run_entries<B: Backend>(batch: &Batch, generation: u64, entries: Vec<(usize, Planned<B>)>, submitted: Option<u64>) {
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
