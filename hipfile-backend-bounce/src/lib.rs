//! hipfile-backend-bounce: the staged (fallback, "compat mode") data path, built to be the
//! fastest of its kind.
//!
//! A request moves in chunks through pinned host staging buffers:
//! - staging memory is pinned once and reused ([`lanes`]): a lane is a stream and two
//!   buffers, created on first use and bounded per device by a memory limit;
//! - a large request is split into contiguous parts, one per lane, run by a worker pool and the
//!   caller's thread; a small one runs on the caller's thread alone;
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

use std::sync::Arc;
use std::sync::mpsc;

use hipfile_core::io::fdatasync;
use hipfile_core::{Backend, BackendKind, BounceSettings, Direction, GpuRuntime, IoRequest, OpError, Result};

use fileio::{CacheProbe, FileSide};
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
    cache: CacheProbe,
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
                cache: CacheProbe::new(),
                workers: WorkerPool::new(threads.saturating_sub(1)),
            }),
        }
    }

    /// Threads one large request uses (the caller's included).
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Splits a request into parts: one per `2 * chunk` bytes at least, at most one per thread
    /// and per lane; inner boundaries at chunk multiples of the file offset.
    fn split(&self, whole: Part) -> Vec<Part> {
        let chunk = self.inner.lanes.chunk() as u64;
        let most = self.inner.threads.min(self.inner.lanes.max_per_device()).max(1);
        let count = whole.len.div_ceil(2 * chunk as usize).clamp(1, most);
        let (start, end) = (whole.file_offset, whole.file_offset + whole.len as u64);
        let mut cuts = vec![start];
        for k in 1..count {
            let cut = (start + (whole.len / count * k) as u64) / chunk * chunk;
            if cut > *cuts.last().expect("starts with `start`") && cut < end {
                cuts.push(cut);
            }
        }
        cuts.push(end);
        cuts.windows(2)
            .map(|w| Part {
                device_addr: whole.device_addr + (w[0] - start) as usize,
                file_offset: w[0],
                len: (w[1] - w[0]) as usize,
                ..whole
            })
            .collect()
    }
}

impl<G: GpuRuntime + ?Sized + 'static> Inner<G> {
    /// Moves one part on the calling thread, on the part's device (restored afterwards).
    fn run(&self, part: Part) -> Result<usize> {
        let gpu = self.lanes.gpu();
        let previous = gpu.current_device()?;
        if previous != part.device {
            gpu.set_device(part.device)?;
        }
        let result = self.lanes.take(part.device).map_err(Into::into).and_then(|mut lane| {
            let moved = match part.direction {
                Direction::Read => self.read(&mut lane, part),
                Direction::Write => self.write(&mut lane, part),
            };
            // The lane's buffers are reused by its next user: nothing may still be copying.
            let drained = gpu.stream_synchronize(lane.stream);
            self.lanes.put(part.device, lane);
            let moved = moved?;
            drained?;
            Ok(moved)
        });
        if previous != part.device {
            gpu.set_device(previous)?;
        }
        result
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
            let n = unsafe { part.file.read(&self.cache, stage.at(offset), len, offset) }?;
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
        let (first, rest) = parts.split_first().expect("a request has at least one part");
        let (tx, rx) = mpsc::channel();
        for (i, &part) in rest.iter().enumerate() {
            let inner = Arc::clone(&self.inner);
            let tx = tx.clone();
            // The descriptors and device range stay valid: this call waits for every part.
            self.inner.workers.submit(Box::new(move || {
                let _ = tx.send((i + 1, inner.run(part)));
            }));
        }
        drop(tx);
        let mut results = vec![None; parts.len()];
        results[0] = Some(self.inner.run(*first));
        for (i, result) in rx {
            results[i] = Some(result);
        }
        // Bytes count up to the first short part (end of file); any error fails the call.
        let mut total = 0;
        let mut short = false;
        for (part, result) in parts.iter().zip(results) {
            // A part that reported nothing panicked on its worker.
            let n = result.unwrap_or(Err(OpError::InternalError.into()))?;
            if !short {
                total += n;
                short = n < part.len;
            }
        }
        if req.direction() == Direction::Write && self.inner.durable_writes {
            fdatasync(whole.file.buffered_fd())?;
        }
        Ok(total)
    }
}
