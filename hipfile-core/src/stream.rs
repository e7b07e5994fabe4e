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
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::backend::{Backend, Direction};
use crate::driver::{Deferred, Driver, HandleId, Platform};
use crate::error::{OpError, Result};
use crate::gpu::{Event, GpuRuntime, Stream};
use crate::pool::{Job, WorkerPool};
use crate::sync::{lock, wait};

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
const STREAM_THREADS: usize = 8;

/// How an operation learns that its stream has reached it (`HIPFILE_STREAM_SIGNAL`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StreamSignal {
    /// A host function queued on the stream hands the operation to a library thread and
    /// returns at once; the gate holds the stream until the operation is done. The default:
    /// measured against the others on the H200 machine (docs/performance.md).
    #[default]
    HostFn,
    /// An event recorded on the stream, polled by a library thread; the same gate.
    Event,
    /// A host function that waits for the operation (no gate). It holds the runtime's callback
    /// thread, which every stream of the context shares, for the whole I/O: what the other
    /// two avoid. Used where the runtime has no stream memory operations.
    Inline,
}

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
struct StreamState {
    flags: Option<u32>,
    /// Address of the stream's word of pinned host memory (0 until its first operation).
    word: usize,
    /// The last operation number queued on the word.
    last: u32,
}

/// The streams a driver knows, the threads that run their operations, and the pinned words
/// their gates wait on.
pub(crate) struct Streams {
    states: Mutex<HashMap<Stream, Arc<Mutex<StreamState>>>>,
    runner: Arc<WorkerPool>,
    words: Mutex<Vec<usize>>,
    poller: Arc<Poller>,
    /// Set once the runtime refused a stream wait: operations then run inline.
    no_wait_value: AtomicBool,
}

/// Waits (on a host function's thread) until the gate word reaches `number`.
///
/// # Safety
/// `word` must be a 4-byte aligned word that stays allocated for the call, and that is only
/// accessed atomically: a stream's gate word ([`Streams::word`], pinned and never freed).
unsafe fn wait_for_word(word: usize, number: u32) {
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

    fn state(&self, stream: Stream) -> Arc<Mutex<StreamState>> {
        let mut states = lock(&self.states);
        Arc::clone(
            states.entry(stream).or_insert_with(|| Arc::new(Mutex::new(StreamState { flags: None, word: 0, last: 0 }))),
        )
    }

    /// A fresh word of pinned host memory, zero (allocated a page at a time, never freed: a
    /// stream may wait on it until the process ends).
    fn word(&self, gpu: &dyn GpuRuntime) -> Result<usize> {
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
struct Poller {
    pending: Mutex<PollerState>,
    stop: AtomicBool,
}

#[derive(Default)]
struct PollerState {
    events: Vec<(Event, Job)>,
    /// Whether a thread is polling them.
    polling: bool,
    /// The fork generation of that thread ([`crate::fork`]): a forked child has none.
    fork: u64,
}

impl Poller {
    /// Watches `event`; `job` goes to `runner` once the stream has reached it.
    fn watch(self: &Arc<Self>, gpu: Arc<dyn GpuRuntime>, runner: &Arc<WorkerPool>, event: Event, job: Job) {
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
    fn poll(&self, gpu: &dyn GpuRuntime, runner: &WorkerPool) {
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
struct Operation<B> {
    /// Taken when the operation ends: the file and backends are let go before the stream goes
    /// on.
    deferred: Option<Deferred<B>>,
    params: Arc<dyn AsyncParams>,
    size: Option<usize>,
    file_offset: Option<i64>,
    buffer_offset: Option<i64>,
    /// The size at submission: the size read when it runs may be smaller, not larger.
    submitted: usize,
    /// The gate: the word, and the number that opens it (`None` without a gate).
    gate: Option<(usize, u32)>,
    /// Set when queueing the gate failed: the operation must not run then (the call failed).
    abandoned: Arc<AtomicBool>,
    /// Set once the operation is on its stream: an operation dropped before (the runtime
    /// refused it, and the call fails) leaves the caller's values untouched.
    queued: Arc<AtomicBool>,
    /// Whether its result was stored.
    completed: bool,
}

impl<B: Backend> Operation<B> {
    /// Runs the operation and stores its result; dropping it then opens the gate.
    fn run(mut self) {
        if !self.abandoned.load(Ordering::Acquire) {
            // A fault inside the library still completes the operation.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.execute()))
                .unwrap_or(-i64::from(OpError::InternalError.code()));
            self.params.complete(result);
            self.completed = true;
        }
    }

    fn execute(&self) -> i64 {
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

impl<P: Platform> Driver<P> {
    /// `hipFileStreamRegister`: `flags` (a mask of `HIPFILE_STREAM_*`, within 0xf) say which
    /// values of the stream's operations are read at submission. Registering a stream twice is
    /// `hipFileInvalidValue`. Needs no open driver.
    pub fn stream_register(&self, stream: Stream, flags: u32) -> Result<()> {
        if flags & !STREAM_FLAGS_MASK != 0 {
            return Err(OpError::InvalidValue.into());
        }
        let state = self.streams().state(stream);
        let mut state = lock(&state);
        if state.flags.is_some() {
            return Err(OpError::InvalidValue.into());
        }
        state.flags = Some(flags);
        if state.word == 0 {
            // The gate's word now, so the first operation does not pay for pinning it (it
            // tries again if this fails).
            state.word = self.streams().word(self.platform().gpu()).unwrap_or(0);
        }
        Ok(())
    }

    /// `hipFileStreamDeregister`: forgets the stream's flags; a stream not registered is
    /// `hipFileInvalidValue`. Operations already queued keep theirs.
    pub fn stream_deregister(&self, stream: Stream) -> Result<()> {
        let state = lock(&self.streams().states).get(&stream).cloned().ok_or(OpError::InvalidValue)?;
        lock(&state).flags.take().map(drop).ok_or_else(|| OpError::InvalidValue.into())
    }

    /// `hipFileReadAsync`/`hipFileWriteAsync`: checks the operation as `hipFileRead` would, with
    /// the values `params` holds now, and queues it on `stream` (any stream, the null stream
    /// too; an unregistered one has no FIXED flags). Returns once it is queued; the result
    /// arrives through [`AsyncParams::complete`] when the stream has run it. A size of zero
    /// completes with 0 at once.
    ///
    /// # Safety
    /// If `buffer_base` is not device memory of the runtime (host memory, where the
    /// configuration allows it, semantics §4), the bytes the operation names from it must be
    /// valid host memory, for writes when reading and for reads when writing, and untouched by
    /// anything else until the stream has run the operation.
    pub unsafe fn submit_async(
        &self,
        direction: Direction,
        handle: HandleId,
        buffer_base: usize,
        params: Arc<dyn AsyncParams>,
        stream: Stream,
    ) -> Result<()> {
        let size = params.size();
        if size == 0 {
            params.complete(0);
            return Ok(());
        }
        let (file_offset, buffer_offset) = (params.file_offset(), params.buffer_offset());
        if file_offset < 0 || buffer_offset < 0 {
            return Err(OpError::InvalidValue.into()); // upstream's answer here (not `EINVAL`)
        }
        let deferred = self.deferred(direction, handle, buffer_base)?;
        drop(deferred.plan(size, file_offset, buffer_offset)?); // checked as a synchronous call
        let streams = self.streams();
        let signal = match deferred.signal() {
            _ if streams.no_wait_value.load(Ordering::Acquire) => StreamSignal::Inline,
            signal => signal,
        };
        let state = streams.state(stream);
        let mut state = lock(&state); // operations of one stream are queued in order
        let flags = state.flags.unwrap_or(0);
        let fixed = |flag: u32| flags & flag != 0;
        let gate = match signal {
            StreamSignal::Inline => None,
            _ => {
                if state.word == 0 || state.last == u32::MAX {
                    state.word = streams.word(self.platform().gpu())?;
                    state.last = 0;
                }
                state.last += 1;
                Some((state.word, state.last))
            }
        };
        let (abandoned, queued) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let op = Operation {
            deferred: Some(deferred),
            params,
            size: fixed(STREAM_FIXED_FILE_SIZE).then_some(size),
            file_offset: fixed(STREAM_FIXED_FILE_OFFSET).then_some(file_offset),
            buffer_offset: fixed(STREAM_FIXED_BUF_OFFSET).then_some(buffer_offset),
            submitted: size,
            gate,
            abandoned: Arc::clone(&abandoned),
            queued: Arc::clone(&queued),
            completed: false,
        };
        let gpu = self.platform().gpu();
        let runner = Arc::clone(&streams.runner);
        match signal {
            StreamSignal::HostFn => {
                gpu.launch_host_func(stream, Box::new(move || runner.submit(Box::new(move || op.run()))))?
            }
            StreamSignal::Event => {
                let event = gpu.event_create()?;
                if let Err(e) = gpu.event_record(event, stream) {
                    let _ = gpu.event_destroy(event);
                    return Err(e.into());
                }
                streams.poller.watch(self.platform().shared_gpu(), &runner, event, Box::new(move || op.run()));
            }
            StreamSignal::Inline => {
                gpu.launch_host_func(
                    stream,
                    Box::new(move || {
                        let done = Arc::new((Mutex::new(false), Condvar::new()));
                        let d = Arc::clone(&done);
                        runner.submit(Box::new(move || {
                            op.run();
                            *lock(&d.0) = true;
                            d.1.notify_all();
                        }));
                        let mut finished = lock(&done.0);
                        while !*finished {
                            finished = wait(&done.1, finished);
                        }
                    }),
                )?;
            }
        }
        queued.store(true, Ordering::Release);
        let Some((word, number)) = gate else { return Ok(()) };
        // SAFETY: the stream's word, pinned and never freed.
        let Err(e) = (unsafe { gpu.stream_wait_value32(stream, word, number) }) else { return Ok(()) };
        // No stream memory operations here: this operation's gate becomes a host function
        // that waits for the word, and later operations run inline (the same effect).
        if !streams.no_wait_value.swap(true, Ordering::AcqRel) {
            crate::log::log_once(&format!(
                "{e} for a stream wait: stream-ordered I/O holds the runtime's callback thread instead"
            ));
        }
        // SAFETY: `word` is the stream's gate word, pinned and never freed.
        let waited = gpu.launch_host_func(stream, Box::new(move || unsafe { wait_for_word(word, number) }));
        if waited.is_err() {
            // The operation is signalled but must not run: this call fails.
            abandoned.store(true, Ordering::Release);
        }
        Ok(waited?)
    }
}
