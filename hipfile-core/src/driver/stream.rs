//! The driver's stream-ordered calls (semantics §12): streams registered, operations queued.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::{Driver, HandleId, Platform};
use crate::backend::Direction;
use crate::error::{OpError, Result};
use crate::gpu::Stream;
use crate::stream::*;
use crate::sync::{lock, wait};

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
            state.word = self.streams().word(&**self.gpu()).unwrap_or(0);
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
                    state.word = streams.word(&**self.gpu())?;
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
        self.queue(signal, stream, op)?;
        queued.store(true, Ordering::Release);
        let Some((word, number)) = gate else { return Ok(()) };
        self.gate(stream, word, number, &abandoned)
    }

    /// Puts `op` on `stream` the way `signal` says: a host function that hands it to a library
    /// thread, an event a library thread polls, or a host function that runs it and waits.
    fn queue(&self, signal: StreamSignal, stream: Stream, op: Operation<P::Backend>) -> Result<()> {
        let streams = self.streams();
        let gpu = self.gpu();
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
                streams.poller.watch(Arc::clone(self.gpu()), &runner, event, Box::new(move || op.run()));
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
        Ok(())
    }

    /// Holds `stream` at the operation's gate until its `word` reaches `number` (the
    /// operation's end): a stream memory wait, else a host function that waits (and every
    /// later operation runs inline). A gate that cannot be queued abandons the operation.
    fn gate(&self, stream: Stream, word: usize, number: u32, abandoned: &AtomicBool) -> Result<()> {
        let (streams, gpu) = (self.streams(), self.gpu());
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
