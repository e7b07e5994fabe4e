//! hipfile-backend-bounce: the staged (fallback, "compat mode") data path, built to be the
//! fastest of its kind.
//!
//! A request moves in chunks through pinned host staging buffers:
//! - staging memory is pinned once and reused ([`lanes`]): a lane is a stream and two
//!   buffers, created on first use and bounded per device by a memory limit;
//! - a large request is split into contiguous parts that the caller's thread and workers of a
//!   pool take in turn, each with its own lane; a small one runs on the caller's thread alone;
//! - each lane pipelines: while chunk `i` is copied to the device asynchronously on the lane's
//!   stream, the file read of chunk `i + 1` fills the other buffer (writes mirror this);
//! - reads are page-cache aware: cached chunks are read buffered, uncached ones with
//!   `O_DIRECT` where aligned ([`fileio`]);
//! - writes are durable when the call returns: one `fdatasync` per call, not per chunk
//!   (`HIPFILE_DURABLE_WRITES=false` turns it off); durable writes send the aligned interior
//!   through `O_DIRECT`;
//! - several GPUs: lanes belong to the device of the buffer; the caller's current device is
//!   left as it was.
//!
//! Errors: a failure anywhere fails the call; a write never reports bytes it did not write,
//! and a read reports bytes only up to end of file.

mod fileio;
mod lanes;
mod pool;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use hipfile_core::io::fdatasync;
use hipfile_core::{Backend, BackendKind, BounceSettings, Direction, Error, GpuRuntime, IoRequest, OpError, Result};

use fileio::{FileSide, ReadPolicy};
use lanes::{Lane, LanePool};
use pool::WorkerPool;

/// Most threads a request uses by default (what the H200 machine's measurements favour).
const DEFAULT_MAX_THREADS: usize = 16;

/// The staged backend over the runtime `G`.
pub struct Bounce<G: GpuRuntime + ?Sized + 'static> {
    inner: Arc<Inner<G>>,
}

struct Inner<G: GpuRuntime + ?Sized + 'static> {
    lanes: LanePool<G>,
    threads: usize,
    durable_writes: bool,
    reads: ReadPolicy,
    workers: WorkerPool,
}

/// One contiguous piece of a request, moved by one lane.
#[derive(Clone, Copy, Debug)]
struct Part {
    direction: Direction,
    file: FileSide,
    device: i32,
    device_addr: usize,
    file_offset: u64,
    len: usize,
}

impl<G: GpuRuntime + ?Sized + 'static> Bounce<G> {
    /// A staged backend over `gpu` with `settings`.
    pub fn new(gpu: Arc<G>, settings: &BounceSettings) -> Self {
        let threads = match settings.threads {
            0 => std::thread::available_parallelism().map_or(4, |n| n.get()).min(DEFAULT_MAX_THREADS),
            n => n,
        };
        Bounce {
            inner: Arc::new(Inner {
                lanes: LanePool::new(gpu, settings.chunk, settings.memory_limit),
                threads,
                durable_writes: settings.durable_writes,
                reads: ReadPolicy::new(),
                workers: WorkerPool::new(threads.saturating_sub(1)),
            }),
        }
    }

    /// Threads one large request uses (the caller's included).
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Splits a request into parts of whole chunks: about four per thread, so threads that
    /// finish early take more (the page cache and the copy engine do not serve all threads
    /// equally), and at least two chunks each, so every part pipelines.
    fn split(&self, whole: Part) -> Vec<Part> {
        let chunk = self.inner.lanes.chunk() as u64;
        let target = (whole.len / (4 * self.inner.threads)).max(2 * chunk as usize) as u64;
        let (start, end) = (whole.file_offset, whole.file_offset + whole.len as u64);
        let mut parts = Vec::new();
        let mut at = start;
        while at < end {
            let next = ((at + target) / chunk * chunk).max(at + 1).min(end);
            let next = if end - next < chunk { end } else { next };
            parts.push(Part {
                device_addr: whole.device_addr + (at - start) as usize,
                file_offset: at,
                len: (next - at) as usize,
                ..whole
            });
            at = next;
        }
        parts
    }
}

/// The parts of one request, taken in order by the threads working on it.
struct Work {
    parts: Vec<Part>,
    next: AtomicUsize,
    moved: Vec<AtomicUsize>,
    finished: AtomicUsize,
    error: Mutex<Option<Error>>,
}

impl Work {
    fn fail(&self, e: Error) {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
    }

    fn failed(&self) -> bool {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }
}

impl<G: GpuRuntime + ?Sized + 'static> Inner<G> {
    /// Takes parts of `work` until none is left, with one lane, on the parts' device (the
    /// thread's own device is restored afterwards).
    fn work(&self, work: &Work) {
        let device = work.parts[0].device;
        let gpu = self.lanes.gpu();
        let previous = match gpu.current_device() {
            Ok(d) => d,
            Err(e) => return work.fail(e.into()),
        };
        if previous != device
            && let Err(e) = gpu.set_device(device)
        {
            return work.fail(e.into());
        }
        match self.lanes.take(device) {
            Err(e) => work.fail(e.into()),
            Ok(mut lane) => {
                while !work.failed() {
                    let i = work.next.fetch_add(1, Ordering::Relaxed);
                    let Some(&part) = work.parts.get(i) else { break };
                    let moved = match part.direction {
                        Direction::Read => self.read(&mut lane, part),
                        Direction::Write => self.write(&mut lane, part),
                    };
                    // The next part starts with the first stage again: its last copy must be
                    // done, whatever happened.
                    let drained = gpu.stream_synchronize(lane.stream).map_err(Error::from);
                    match moved.and_then(|n| drained.map(|()| n)) {
                        Ok(n) => {
                            work.moved[i].store(n, Ordering::Relaxed);
                            work.finished.fetch_add(1, Ordering::Release);
                        }
                        Err(e) => work.fail(e),
                    }
                }
                self.lanes.put(device, lane);
            }
        }
        if previous != device
            && let Err(e) = gpu.set_device(previous)
        {
            work.fail(e.into());
        }
    }

    /// Chunks of a part: `(offset in the part, length)`, ending at chunk multiples of the file
    /// offset.
    fn chunks(&self, part: Part) -> impl Iterator<Item = (usize, usize)> {
        let chunk = self.lanes.chunk() as u64;
        let mut done = 0usize;
        std::iter::from_fn(move || {
            (done < part.len).then(|| {
                let at = part.file_offset + done as u64;
                let len = ((chunk - at % chunk) as usize).min(part.len - done);
                let item = (done, len);
                done += len;
                item
            })
        })
    }

    /// File to device: the read of each chunk overlaps the copy of the one before it.
    fn read(&self, lane: &mut Lane, part: Part) -> Result<usize> {
        let gpu = self.lanes.gpu();
        let mut done = 0;
        for (i, (skip, len)) in self.chunks(part).enumerate() {
            let offset = part.file_offset + skip as u64;
            let stage = &lane.stages[i % 2];
            // SAFETY: the stage holds `chunk + PAGE` bytes past its page-aligned base, enough
            // for `len <= chunk` at the layout rule's position; the copy that last used this
            // stage finished at the previous synchronisation.
            let n = unsafe { part.file.read(&self.reads, stage.at(offset), len, offset) }?;
            if i > 0 {
                gpu.stream_synchronize(lane.stream)?;
            }
            if n > 0 {
                // SAFETY: the device range lies inside the request's checked range; the stage
                // stays untouched until the copy is synchronised (next iteration or `run`).
                unsafe { gpu.copy_to_device_async(part.device_addr + skip, stage.at(offset), n, lane.stream) }?;
            }
            done += n;
            if n < len {
                break; // end of file
            }
        }
        Ok(done)
    }

    /// Device to file: the write of each chunk overlaps the copy of the next one.
    fn write(&self, lane: &mut Lane, part: Part) -> Result<usize> {
        let gpu = self.lanes.gpu();
        let direct = self.durable_writes;
        let mut staged: Option<(usize, u64, usize)> = None; // (stage, file offset, len)
        for (i, (skip, len)) in self.chunks(part).enumerate() {
            let offset = part.file_offset + skip as u64;
            let stage = &lane.stages[i % 2];
            // SAFETY: as in `read`; this stage's previous chunk was written to the file
            // (synchronously) in the previous iteration.
            unsafe { gpu.copy_from_device_async(stage.at(offset), part.device_addr + skip, len, lane.stream) }?;
            if let Some((s, at, n)) = staged.take() {
                // SAFETY: the copy into stage `s` finished at the last synchronisation.
                unsafe { part.file.write(lane.stages[s].at(at), n, at, direct) }?;
            }
            gpu.stream_synchronize(lane.stream)?;
            staged = Some((i % 2, offset, len));
        }
        if let Some((s, at, n)) = staged {
            // SAFETY: synchronised above.
            unsafe { part.file.write(lane.stages[s].at(at), n, at, direct) }?;
        }
        Ok(part.len)
    }
}

impl<G: GpuRuntime + ?Sized + 'static> Backend for Bounce<G> {
    fn name(&self) -> &'static str {
        "bounce"
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Fallback
    }

    fn score(&self, _req: &IoRequest<'_>) -> Option<u32> {
        Some(0)
    }

    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize> {
        let whole = Part {
            direction: req.direction(),
            file: FileSide::new(req.file()),
            device: req.device(),
            device_addr: req.device_addr(),
            file_offset: req.file_offset(),
            len: req.size(),
        };
        let parts = self.split(whole);
        let helpers = self.inner.threads.min(self.inner.lanes.max_per_device()).min(parts.len()) - 1;
        let work = Arc::new(Work {
            moved: parts.iter().map(|_| AtomicUsize::new(0)).collect(),
            parts,
            next: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            error: Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel::<()>();
        for _ in 0..helpers {
            let (inner, work, tx) = (Arc::clone(&self.inner), Arc::clone(&work), tx.clone());
            // The descriptors and device range stay valid: this call waits for every helper
            // (a helper that panics drops `tx`, which ends the wait too).
            self.inner.workers.submit(Box::new(move || {
                inner.work(&work);
                drop(tx);
            }));
        }
        drop(tx);
        self.inner.work(&work);
        for () in rx {}
        if let Some(e) = work.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        if work.finished.load(Ordering::Acquire) < work.parts.len() {
            return Err(OpError::InternalError.into()); // a helper panicked
        }
        // Bytes count up to the first short part (end of file).
        let mut total = 0;
        for (part, moved) in work.parts.iter().zip(&work.moved) {
            let n = moved.load(Ordering::Relaxed);
            total += n;
            if n < part.len {
                break;
            }
        }
        if req.direction() == Direction::Write && self.inner.durable_writes {
            fdatasync(whole.file.buffered_fd())?;
        }
        Ok(total)
    }
}
