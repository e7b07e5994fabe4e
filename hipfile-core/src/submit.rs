//! Futures for callers that make many small calls (semantics §11): each request is queued and
//! returns at once with a [`Completion`]; one thread of the library gathers the requests of a
//! burst and runs them as one batch, where the bounce path pipelines them across its workers
//! (`Backend::transfer_many`). Python's `pread`/`pwrite` run on it; Rust callers use it as
//! they would KvikIO's futures.
//!
//! The policy: a round starts once the queue has not grown for [`Submitter::GAP`], has reached
//! the driver's batch limit, has waited [`Submitter::LINGER`], or someone asks whether one of its
//! requests has ended ([`Submitter::ended`]), or waits for one. Someone who waits (without a
//! deadline, [`Submitter::wait_all`]) for a request queued alone runs it on the waiting thread
//! as one call of the driver: a request waited for at once costs what a call costs, with no
//! hand-over to the library's thread and back. Rounds the library's thread runs are batches (the
//! driver's batch counters count them). While a round runs, the next one fills.

use std::any::Any;
use std::borrow::Borrow;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::batch::{BatchEntry, MAX_BATCH_ENTRIES};
use crate::driver::{Driver, Platform};
use crate::error::{OpError, Result};
use crate::sync::{lock, wait};

/// Where one queued request's result arrives.
#[derive(Debug)]
pub struct Completion {
    result: Mutex<Option<Result<usize>>>,
    ready: Condvar,
    /// Still in the queue (not yet part of a round).
    queued: AtomicBool,
}

impl Completion {
    /// A completion that has ended with `result`, or (`None`) is queued.
    pub fn new(result: Option<Result<usize>>) -> Arc<Completion> {
        let queued = AtomicBool::new(result.is_none());
        Arc::new(Completion { result: Mutex::new(result), ready: Condvar::new(), queued })
    }

    /// The result, once the request has ended.
    pub fn result(&self) -> Option<Result<usize>> {
        lock(&self.result).clone()
    }

    /// Waits for the result until `deadline` (`None`: as long as it takes); `None` when the
    /// time ran out first.
    pub fn wait(&self, deadline: Option<Instant>) -> Option<Result<usize>> {
        let mut done = lock(&self.result);
        while done.is_none() {
            match deadline {
                None => done = wait(&self.ready, done),
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    done = self.ready.wait_timeout(done, left).unwrap_or_else(|p| p.into_inner()).0;
                }
            }
        }
        done.clone()
    }

    fn finish(&self, result: Result<usize>) {
        *lock(&self.result) = Some(result);
        self.ready.notify_all();
    }
}

/// A queued request: its entry, its completion, and what the caller keeps alive until it ends.
struct Pending {
    entry: BatchEntry,
    completion: Arc<Completion>,
    _keep: Box<dyn Any + Send>,
}

struct Queue {
    pending: Vec<Pending>,
    /// The process whose thread serves the queue (a forked child has none of its parent's).
    pid: u32,
    /// Someone waits for a queued request: start the round now.
    flush: bool,
}

/// Gathers requests into batches of the driver `D` (a `&'static Driver` or an `Arc` of one).
pub struct Submitter<P: Platform, D: Borrow<Driver<P>> + Send + Sync + 'static> {
    driver: D,
    queue: Mutex<Queue>,
    ready: Condvar,
    _platform: PhantomData<fn() -> P>,
}

impl<P: Platform + 'static, D: Borrow<Driver<P>> + Send + Sync + 'static> Submitter<P, D> {
    /// How long a quiet queue waits for the next request of a burst. One Python `pread` costs
    /// 1-4 µs; the gap leaves room for a collector or a scheduler's hiccup.
    pub const GAP: Duration = Duration::from_micros(50);
    /// The longest a request waits for others.
    pub const LINGER: Duration = Duration::from_millis(1);

    /// A submitter over `driver`; its thread starts with the first request.
    pub fn new(driver: D) -> Submitter<P, D> {
        Submitter {
            driver,
            queue: Mutex::new(Queue { pending: Vec::new(), pid: 0, flush: false }),
            ready: Condvar::new(),
            _platform: PhantomData,
        }
    }

    /// The driver the requests go to.
    pub fn driver(&self) -> &Driver<P> {
        self.driver.borrow()
    }

    /// Queues `entry` (its cookie is replaced) and returns at once; `keep` is dropped once the
    /// request has ended, on the library's thread.
    ///
    /// # Safety
    /// As [`Driver::batch_submit`]: memory named by address that is not device memory must
    /// stay valid until the completion has ended (`keep` may be what keeps it).
    pub unsafe fn submit(&'static self, entry: BatchEntry, keep: Box<dyn Any + Send>) -> Arc<Completion> {
        let completion = Completion::new(None);
        let mut queue = lock(&self.queue);
        queue.pending.push(Pending { entry, completion: Arc::clone(&completion), _keep: keep });
        let pid = std::process::id();
        if queue.pid != pid {
            queue.pid = pid;
            let started = std::thread::Builder::new().name("hipfile-submitter".into()).spawn(move || self.run());
            if started.is_err() {
                queue.pid = 0;
                let pending = std::mem::take(&mut queue.pending);
                drop(queue);
                pending.iter().for_each(|p| p.completion.finish(Err(OpError::InternalError.into())));
                return completion;
            }
        }
        // The first request of a round wakes the thread; the others it finds when it looks.
        if queue.pending.len() == 1 {
            self.ready.notify_one();
        }
        drop(queue);
        completion
    }

    /// Queues a transfer of `entry.size` bytes as requests of at most
    /// [`max_rw_count`](crate::max_rw_count) bytes (the most one call moves), each keeping what
    /// `keep` gives until it ends; their completions, in order (one that has ended for 0 bytes).
    ///
    /// # Safety
    /// As [`submit`](Self::submit), for the whole range of `entry`.
    pub unsafe fn submit_all(
        &'static self,
        entry: BatchEntry,
        keep: impl Fn() -> Box<dyn Any + Send>,
    ) -> Vec<Arc<Completion>> {
        if entry.size == 0 {
            return vec![Completion::new(Some(Ok(0)))];
        }
        let cap = crate::io::max_rw_count();
        (0..entry.size)
            .step_by(cap)
            .map(|done| {
                let part = BatchEntry {
                    size: (entry.size - done).min(cap),
                    file_offset: entry.file_offset.saturating_add(done as i64),
                    buffer_offset: entry.buffer_offset.saturating_add(done as i64),
                    ..entry
                };
                // SAFETY: a part of `entry`, under the caller's contract.
                unsafe { self.submit(part, keep()) }
            })
            .collect()
    }

    /// Whether every one of `parts` has ended; asking starts the rounds of those still queued.
    pub fn ended(&self, parts: &[Arc<Completion>]) -> bool {
        let mut ended = true;
        for part in parts.iter().filter(|p| p.result().is_none()) {
            self.hurry(part);
            ended = false;
        }
        ended
    }

    /// Waits for every one of `parts` until `deadline` (`None`: as long as it takes): the bytes
    /// they moved together, or the first error in order, once all have ended (so that memory
    /// the caller frees on an error is no longer in use); `None` when the time ran out first.
    pub fn wait_all(&self, parts: &[Arc<Completion>], deadline: Option<Instant>) -> Option<Result<usize>> {
        // With a deadline the library's thread runs the rounds, so that the wait can end in time.
        match deadline {
            None => parts.iter().for_each(|part| self.run_now(part)),
            Some(_) => parts.iter().for_each(|part| self.hurry(part)),
        }
        let mut total = Ok(0);
        for part in parts {
            match (part.wait(deadline)?, &mut total) {
                (Ok(n), Ok(sum)) => *sum += n,
                (Err(e), Ok(_)) => total = Err(e),
                (_, Err(_)) => {}
            }
        }
        Some(total)
    }

    /// Someone asks about `completion`: if it is still queued, its round starts now, on the
    /// library's thread.
    pub fn hurry(&self, completion: &Completion) {
        if completion.queued.load(Ordering::Acquire) {
            lock(&self.queue).flush = true;
            self.ready.notify_one();
        }
    }

    /// Someone waits for `completion`: if it is still queued alone, it runs now, on this
    /// thread, as one call; queued with others, their round starts now on the library's thread
    /// (a burst's batch is the library's, as before).
    fn run_now(&self, completion: &Completion) {
        if !completion.queued.load(Ordering::Acquire) {
            return;
        }
        let round = {
            let mut queue = lock(&self.queue);
            if !completion.queued.load(Ordering::Acquire) {
                return; // taken by a round meanwhile
            }
            if queue.pending.len() > 1 {
                queue.flush = true;
                self.ready.notify_one();
                return;
            }
            self.take(&mut queue)
        };
        self.run_round(round, true);
    }

    fn run(&self) {
        loop {
            let round = self.next_round();
            self.run_round(round, false);
        }
    }

    /// Runs `round` and ends its requests' completions: as a batch, or (`waited`: one request,
    /// run by its waiting caller) as one call of the driver.
    fn run_round(&self, round: Vec<Pending>, waited: bool) {
        let mut results: Vec<Option<Result<usize>>> = vec![None; round.len()];
        if let ([one], true) = (round.as_slice(), waited) {
            let e = &one.entry;
            // SAFETY: the request's memory stays valid until its completion ends (`submit`'s
            // contract), which is after this call.
            let moved = unsafe {
                self.driver().transfer(e.direction, e.handle, e.buffer_base, e.size, e.file_offset, e.buffer_offset)
            };
            results[0] = Some(moved);
        } else {
            let entries: Vec<BatchEntry> =
                round.iter().enumerate().map(|(i, p)| BatchEntry { cookie: i, ..p.entry }).collect();
            // SAFETY: as above, for every entry: each completion ends after these batches.
            match unsafe { run_batch(self.driver(), &entries, &mut results, None) } {
                // Refused as a whole (the driver checks every entry first): each request on its
                // own, so that only the ones at fault fail.
                Err(_) if results.iter().all(Option::is_none) => {
                    for (entry, result) in entries.iter().zip(results.iter_mut()) {
                        let (mut one, alone) = ([None], [BatchEntry { cookie: 0, ..*entry }]);
                        // SAFETY: as the round's.
                        let alone = unsafe { run_batch(self.driver(), &alone, &mut one, None) };
                        *result = one[0].take().or(alone.err().map(Err));
                    }
                }
                Err(e) => results.iter_mut().filter(|r| r.is_none()).for_each(|r| *r = Some(Err(e.clone()))),
                Ok(()) => {}
            }
        }
        for (p, r) in round.iter().zip(results) {
            p.completion.finish(r.unwrap_or(Err(OpError::InternalError.into())));
        }
        drop(round); // what the callers kept, after their requests ended
    }

    /// The driver's batch limit as it is now (a reopened driver may have another).
    fn limit(&self) -> usize {
        (self.driver().properties().max_batch_io_count as usize).clamp(1, MAX_BATCH_ENTRIES)
    }

    /// The next round from `queue`: what it holds, up to the batch limit, no longer queued.
    fn take(&self, queue: &mut Queue) -> Vec<Pending> {
        let take = queue.pending.len().min(self.limit());
        let round: Vec<Pending> = queue.pending.drain(..take).collect();
        round.iter().for_each(|p| p.completion.queued.store(false, Ordering::Release));
        round
    }

    /// Waits for requests, then gathers a round (see the module docs).
    fn next_round(&self) -> Vec<Pending> {
        let mut queue = lock(&self.queue);
        loop {
            while queue.pending.is_empty() {
                queue = wait(&self.ready, queue);
            }
            let (since, limit) = (Instant::now(), self.limit());
            while !queue.flush && queue.pending.len() < limit && since.elapsed() < Self::LINGER {
                let before = queue.pending.len();
                queue = self.ready.wait_timeout(queue, Self::GAP).unwrap_or_else(|p| p.into_inner()).0;
                if queue.pending.len() <= before {
                    break; // quiet, or a waiting caller took the queue
                }
            }
            queue.flush = false;
            let round = self.take(&mut queue);
            if !round.is_empty() {
                return round;
            }
        }
    }
}

/// One batch of `entries` (cookies their indices) on `driver`, run to its end or until `wait`
/// has passed (what has not run then is cancelled): each entry's result in `results`.
///
/// # Safety
/// As [`Driver::batch_submit`]: memory that is not device memory stays valid until this returns
/// (it waits for every entry, or cancels it).
pub unsafe fn run_batch<P: Platform>(
    driver: &Driver<P>,
    entries: &[BatchEntry],
    results: &mut [Option<Result<usize>>],
    wait: Option<Duration>,
) -> Result<()> {
    let id = driver.batch_setup(entries.len().max(1))?;
    // SAFETY: the caller's contract.
    let submitted = unsafe { driver.batch_submit(id, entries) };
    let mut left = if submitted.is_ok() { entries.len() } else { 0 };
    while left > 0 {
        match driver.batch_status(id, left, left, wait) {
            Ok(events) if events.is_empty() => break, // timed out: the rest are cancelled
            Ok(events) => {
                for e in events {
                    results[e.cookie] = Some(e.result);
                    left -= 1;
                }
            }
            Err(e) => {
                driver.batch_destroy(id);
                return Err(e);
            }
        }
    }
    driver.batch_destroy(id);
    submitted
}
