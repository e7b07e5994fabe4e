//! Stream-ordered I/O (semantics §12): `hipFileReadAsync`/`hipFileWriteAsync` and
//! `hipFileStreamRegister`/`Deregister`.
//!
//! An operation is checked when it is submitted, as a synchronous call would be, and then queued
//! on the caller's stream as two steps:
//! 1. a *signal* that the stream has reached it: by default a host function that only hands the
//!    operation to the library's threads and returns ([`StreamSignal`] lists the others);
//! 2. a *gate*: a stream memory operation that holds the stream until a word of pinned host
//!    memory reaches the operation's number. Nothing else of the context waits.
//!
//! A library thread then reads the size and offsets (those the stream's FIXED flags did not
//! capture at submission), moves the bytes through the same dispatch as `hipFileRead` (the
//! pipelined bounce path, or the p2p path), stores the result where the caller said, and
//! sets the word: the stream goes on. The caller's thread never waits for the I/O.
//!
//! Each stream has one word, and its operations count up on it: they finish in order (each is
//! gated), so the word only grows. When the count would wrap, the stream gets a fresh word (the
//! old one is kept: the stream may still be waiting on it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::backend::Backend;
pub use crate::config::StreamSignal;
use crate::dispatch::Deferred;
use crate::error::{OpError, Result};
use crate::gpu::{Event, GpuRuntime, Stream};
use crate::pool::{Job, WorkerPool};
use crate::sync::lock;

/// `HIPFILE_STREAM_FIXED_BUF_OFFSET`: the buffer offset is read at submission.
pub const STREAM_FIXED_BUF_OFFSET: u32 = 1;
/// `HIPFILE_STREAM_FIXED_FILE_OFFSET`: the file offset is read at submission.
pub const STREAM_FIXED_FILE_OFFSET: u32 = 1 << 1;
/// `HIPFILE_STREAM_FIXED_FILE_SIZE`: the size is read at submission.
pub const STREAM_FIXED_FILE_SIZE: u32 = 1 << 2;
/// `HIPFILE_STREAM_PAGE_ALIGNED_INPUTS`: the caller promises 4 KiB aligned sizes and offsets
/// (a hint; nothing depends on it here).
pub const STREAM_PAGE_ALIGNED_INPUTS: u32 = 1 << 3;
/// `HIPFILE_STREAM_FLAGS_MASK`: every flag.
pub const STREAM_FLAGS_MASK: u32 = 0xf;

/// Threads running stream-ordered operations (each runs one operation at a time; operations
/// of one stream run one after another anyway).
pub(crate) const STREAM_THREADS: usize = 8;

/// Where a stream-ordered operation reads its size and offsets when it runs, and leaves its
/// result: the caller's memory behind C pointers, or a Rust [`StreamIo`](crate::StreamIo).
pub trait AsyncParams: Send + Sync + 'static {
    /// `*size_p`.
    fn size(&self) -> usize;
    /// `*file_offset_p`.
    fn file_offset(&self) -> i64;
    /// `*buffer_offset_p`.
    fn buffer_offset(&self) -> i64;
    /// Stores the result in `*bytes_read_p`/`*bytes_written_p`: the bytes moved, or a
    /// negative number (semantics §12).
    fn complete(&self, result: i64);
}

/// One stream's state: its flags while registered, and its gate word.
pub(crate) struct StreamState {
    pub(crate) flags: Option<u32>,
    /// Address of the stream's word of pinned host memory (0 until its first operation).
    pub(crate) word: usize,
    /// The last operation number queued on the word.
    pub(crate) last: u32,
}

/// The streams a driver knows, the threads that run their operations, and the pinned words
/// their gates wait on.
pub(crate) struct Streams {
    pub(crate) states: Mutex<HashMap<Stream, Arc<Mutex<StreamState>>>>,
    pub(crate) runner: Arc<WorkerPool>,
    pub(crate) words: Mutex<Vec<usize>>,
    pub(crate) poller: Arc<Poller>,
    /// Set once the runtime refused a stream wait: operations then run inline.
    pub(crate) no_wait_value: AtomicBool,
}

/// Waits (on a host function's thread) until the gate word reaches `number`.
///
/// # Safety
/// `word` must be a 4-byte aligned word that stays allocated for the call, and that is only
/// accessed atomically: a stream's gate word ([`Streams::word`], pinned and never freed).
pub(crate) unsafe fn wait_for_word(word: usize, number: u32) {
    // SAFETY: the caller's contract.
    let word = unsafe { AtomicU32::from_ptr(word as *mut u32) };
    while (word.load(Ordering::Acquire).wrapping_sub(number) as i32) < 0 {
        std::thread::sleep(Duration::from_micros(20));
    }
}

impl Streams {
    pub(crate) fn new() -> Self {
        Streams {
            states: Mutex::new(HashMap::new()),
            runner: Arc::new(WorkerPool::new(STREAM_THREADS, "hipfile-stream".into(), Arc::new(|| {}))),
            words: Mutex::new(Vec::new()),
            poller: Arc::new(Poller::default()),
            no_wait_value: AtomicBool::new(false),
        }
    }

    /// Ends the stream threads (idle once the driver has closed); the next operation starts them.
    pub(crate) fn stop_threads(&self) {
        self.runner.stop();
    }

    pub(crate) fn state(&self, stream: Stream) -> Arc<Mutex<StreamState>> {
        let mut states = lock(&self.states);
        Arc::clone(
            states.entry(stream).or_insert_with(|| Arc::new(Mutex::new(StreamState { flags: None, word: 0, last: 0 }))),
        )
    }

    /// A fresh word of pinned host memory, zero (allocated a page at a time, never freed: a
    /// stream may wait on it until the process ends).
    pub(crate) fn word(&self, gpu: &dyn GpuRuntime) -> Result<usize> {
        let mut words = lock(&self.words);
        if words.is_empty() {
            const PAGE: usize = 4096;
            let page = gpu.host_alloc(PAGE)? as usize;
            words.extend((0..PAGE / 4).rev().map(|i| page + 4 * i));
        }
        let word = words.pop().expect("filled above");
        // SAFETY: an aligned word of the page allocated above, handed out once.
        unsafe { AtomicU32::from_ptr(word as *mut u32) }.store(0, Ordering::Release);
        Ok(word)
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        self.poller.stop.store(true, Ordering::Release);
    }
}

/// What the event signal's thread watches: events recorded on streams, and the operation each
/// starts.
#[derive(Default)]
pub(crate) struct Poller {
    pub(crate) pending: Mutex<PollerState>,
    pub(crate) stop: AtomicBool,
}

#[derive(Default)]
pub(crate) struct PollerState {
    pub(crate) events: Vec<(Event, Job)>,
    /// Whether a thread is polling them.
    pub(crate) polling: bool,
    /// The fork generation of that thread ([`crate::fork`]): a forked child has none.
    pub(crate) fork: u64,
}

impl Poller {
    /// Watches `event`; `job` goes to `runner` once the stream has reached it.
    pub(crate) fn watch(self: &Arc<Self>, gpu: Arc<dyn GpuRuntime>, runner: &Arc<WorkerPool>, event: Event, job: Job) {
        let mut state = lock(&self.pending);
        let fork = crate::fork::generation();
        if state.fork != fork {
            // A forked child: the parent's events and poller are not its own.
            std::mem::forget(std::mem::take(&mut state.events));
            (state.fork, state.polling) = (fork, false);
        }
        state.events.push((event, job));
        if !std::mem::replace(&mut state.polling, true) {
            let (me, pool) = (Arc::clone(self), Arc::clone(runner));
            let spawned =
                std::thread::Builder::new().name("hipfile-stream-events".into()).spawn(move || me.poll(&*gpu, &pool));
            // Without a thread now, the next operation's watch tries again.
            state.polling = spawned.is_ok();
        }
    }

    /// Polls until nothing is left to watch (or the driver is gone).
    pub(crate) fn poll(&self, gpu: &dyn GpuRuntime, runner: &WorkerPool) {
        let mut idle = 0;
        loop {
            let ready: Vec<(Event, Job)> = {
                let mut state = lock(&self.pending);
                if state.events.is_empty() || self.stop.load(Ordering::Acquire) {
                    state.polling = false;
                    return;
                }
                let (ready, waiting) = std::mem::take(&mut state.events)
                    .into_iter()
                    .partition(|(e, _)| gpu.event_query(*e).unwrap_or(true));
                state.events = waiting;
                ready
            };
            if ready.is_empty() {
                // Spin briefly, then back off to 20 µs between looks.
                idle += 1;
                if idle < 64 {
                    std::thread::yield_now()
                } else {
                    std::thread::sleep(Duration::from_micros(20))
                }
                continue;
            }
            idle = 0;
            for (event, job) in ready {
                let _ = gpu.event_destroy(event);
                runner.submit(job);
            }
        }
    }
}

/// One operation, from submission until its result is stored. However it ends (run, or dropped
/// unrun: a driver going away with events still watched), dropping it opens its gate, so a
/// stream never waits forever on it.
pub(crate) struct Operation<B> {
    /// Taken when the operation ends: the file and backends are let go before the stream goes
    /// on.
    pub(crate) deferred: Option<Deferred<B>>,
    pub(crate) params: Arc<dyn AsyncParams>,
    pub(crate) size: Option<usize>,
    pub(crate) file_offset: Option<i64>,
    pub(crate) buffer_offset: Option<i64>,
    /// The size at submission: the size read when it runs may be smaller, not larger.
    pub(crate) submitted: usize,
    /// The gate: the word, and the number that opens it (`None` without a gate).
    pub(crate) gate: Option<(usize, u32)>,
    /// Set when queueing the gate failed: the operation must not run then (the call failed).
    pub(crate) abandoned: Arc<AtomicBool>,
    /// Set once the operation is on its stream: an operation dropped before (the runtime
    /// refused it, and the call fails) leaves the caller's values untouched.
    pub(crate) queued: Arc<AtomicBool>,
    /// Whether its result was stored.
    pub(crate) completed: bool,
}

impl<B: Backend> Operation<B> {
    /// Runs the operation and stores its result; dropping it then opens the gate.
    pub(crate) fn run(mut self) {
        if !self.abandoned.load(Ordering::Acquire) {
            // A fault inside the library still completes the operation.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.execute()))
                .unwrap_or(-i64::from(OpError::InternalError.code()));
            self.params.complete(result);
            self.completed = true;
        }
    }

    pub(crate) fn execute(&self) -> i64 {
        let size = self.size.unwrap_or_else(|| self.params.size());
        if size > self.submitted {
            return -i64::from(OpError::InvalidValue.code());
        }
        if size == 0 {
            return 0;
        }
        let file_offset = self.file_offset.unwrap_or_else(|| self.params.file_offset());
        let buffer_offset = self.buffer_offset.unwrap_or_else(|| self.params.buffer_offset());
        if file_offset < 0 || buffer_offset < 0 {
            return -i64::from(OpError::InvalidValue.code());
        }
        let Some(deferred) = &self.deferred else { return -i64::from(OpError::InternalError.code()) };
        crate::error::negative_ret(&deferred.plan(size, file_offset, buffer_offset).and_then(|p| p.run()))
    }
}

impl<B> Drop for Operation<B> {
    fn drop(&mut self) {
        let queued = self.queued.load(Ordering::Acquire);
        if queued && !self.completed && !self.abandoned.load(Ordering::Acquire) {
            self.params.complete(-i64::from(OpError::InternalError.code())); // never ran
        }
        drop(self.deferred.take());
        if let Some((word, number)) = self.gate {
            // SAFETY: the stream's word (pinned, never freed); the gate only reads it.
            unsafe { AtomicU32::from_ptr(word as *mut u32) }.store(number, Ordering::Release);
        }
    }
}
