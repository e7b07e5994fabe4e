//! The driver's batch calls (semantics §11): set up, submit, status, cancel, destroy.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{Driver, Platform};
use crate::backend::Direction;
use crate::batch::*;
use crate::dispatch::Planned;
use crate::error::{OpError, Result};
use crate::stats::Counter;
use crate::sync::{lock, wait};

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
        let _primary = crate::gpu::PrimaryContext::enter(&*self.gpu);
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
                let p = self.deferred(e.direction, e.handle, e.buffer_base)?.plan(
                    e.size,
                    e.file_offset,
                    e.buffer_offset,
                )?;
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
