//! Writes: device to file through lanes ([`crate::lanes`]), each thread taking chunks in file
//! order with its own lane, the write of one chunk overlapping the copy of the next.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Instant;

use hipfile_core::io::fdatasync;
use hipfile_core::{Error, GpuRuntime, IoRequest, OpError, Result};

use crate::device::Device;
use crate::fileio::DirectIo;
use crate::lanes::Lane;
use crate::profile::charge;
use crate::{Inner, Request, outcomes};

/// Smallest chunk a request alone on its device is cut into.
pub(crate) const MIN_ALONE_CHUNK: usize = 256 << 10;

/// The chunk for a write of `total` bytes alone on a device with `threads` threads: small
/// enough that each thread takes two chunks (so each lane pipelines), at least 256 KiB, at most
/// `chunk`. (Measured on the H200 when reads went through lanes too: a 4 GiB warm file read in
/// 4 MiB calls by one caller ran 8.1 GB/s with a 1 MiB floor, 13.3 with 256 KiB.)
pub(crate) fn alone_chunk(chunk: usize, total: usize, threads: usize) -> usize {
    let fine = (total / (2 * threads.max(1))).next_multiple_of(64 << 10).max(MIN_ALONE_CHUNK);
    chunk.min(fine)
}

/// The chunks of one or more writes (one device), taken in order by the threads working on
/// them. A request that fails (a file error) stops taking chunks; a lane
/// that fails (a GPU error) fails every request.
pub(crate) struct Work {
    /// One or more, all of one device.
    pub(crate) reqs: Vec<Request>,
    /// (request, chunk of that request), in order.
    pub(crate) pieces: Vec<(usize, usize)>,
    next: AtomicUsize,
    moved: Vec<AtomicUsize>,
    finished: AtomicUsize,
    errors: Vec<OnceLock<Error>>,
}

impl Work {
    pub(crate) fn new(reqs: Vec<Request>) -> Work {
        let pieces: Vec<(usize, usize)> =
            reqs.iter().enumerate().flat_map(|(r, req)| (0..req.chunk_count()).map(move |c| (r, c))).collect();
        Work {
            next: AtomicUsize::new(0),
            moved: pieces.iter().map(|_| AtomicUsize::new(0)).collect(),
            finished: AtomicUsize::new(0),
            errors: reqs.iter().map(|_| OnceLock::new()).collect(),
            pieces,
            reqs,
        }
    }

    fn device(&self) -> i32 {
        self.reqs[0].device
    }

    /// Request `r` failed (its first error is kept).
    fn fail(&self, r: usize, e: Error) {
        let _ = self.errors[r].set(e);
    }

    /// Every request failed.
    fn fail_all(&self, e: &Error) {
        (0..self.reqs.len()).for_each(|r| self.fail(r, e.clone()));
    }

    /// The next piece nobody has taken whose request has not failed (the others are counted
    /// done as they are passed).
    fn take(&self) -> Option<usize> {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let &(r, _) = self.pieces.get(i)?;
            if self.errors[r].get().is_none() {
                return Some(i);
            }
            self.done(i, 0);
        }
    }

    /// Piece `i`: its request, offset in the request and length.
    fn piece(&self, i: usize) -> (usize, &Request, usize, usize) {
        let (r, c) = self.pieces[i];
        let (skip, len) = self.reqs[r].chunk_at(c);
        (r, &self.reqs[r], skip, len)
    }

    fn done(&self, i: usize, n: usize) {
        self.moved[i].store(n, Ordering::Relaxed);
        self.finished.fetch_add(1, Ordering::Release);
    }

    /// Each request's outcome: its error, or its bytes up to its first short chunk (end of
    /// file).
    pub(crate) fn results(&self) -> Vec<Result<usize>> {
        let complete = self.finished.load(Ordering::Acquire) == self.pieces.len();
        let parts = self
            .pieces
            .iter()
            .enumerate()
            .map(|(i, &(r, c))| (r, self.moved[i].load(Ordering::Relaxed), self.reqs[r].chunk_at(c).1));
        let mut results = outcomes(self.reqs.len(), parts, &self.errors);
        if !complete {
            // A helper panicked: what has no error of its own failed too.
            results.iter_mut().filter(|r| r.is_ok()).for_each(|r| *r = Err(OpError::InternalError.into()));
        }
        results
    }
}

impl<G: GpuRuntime + ?Sized + 'static> Inner<G> {
    /// Writes chunks of `work` until none is left, with one lane of `dev`, the requests'
    /// device (the thread's own device is restored afterwards).
    pub(crate) fn work(&self, dev: &Device<G>, work: &Work) {
        let device = work.device();
        let gpu = &self.gpu;
        let previous = match gpu.current_device() {
            Ok(d) => d,
            Err(e) => return work.fail_all(&e.into()),
        };
        if previous != device
            && let Err(e) = gpu.set_device(device)
        {
            return work.fail_all(&e.into());
        }
        let waited = Instant::now();
        let lane = dev.lanes.take();
        charge(&self.profile.lane_wait_ns, waited);
        match lane {
            Err(e) => work.fail_all(&e.into()),
            Ok(mut lane) => {
                let moved = self.write(&mut lane, work);
                // The request's device memory is the caller's again when the call returns:
                // nothing may still be copying.
                let waited = Instant::now();
                let drained = lane.synchronize(&**gpu);
                charge(&self.profile.copy_wait_ns, waited);
                dev.lanes.put(lane);
                if let Err(e) = moved.and_then(|()| drained.map_err(Error::from)) {
                    work.fail_all(&e);
                }
            }
        }
        if previous != device
            && let Err(e) = gpu.set_device(previous)
        {
            work.fail_all(&e.into());
        }
    }

    /// Device to file: the write of each chunk this lane takes overlaps the copy of the next.
    fn write(&self, lane: &mut Lane, work: &Work) -> Result<()> {
        let gpu = &*self.gpu;
        let mut staged: Option<(usize, usize)> = None; // (stage, piece)
        let mut k = 0;
        while let Some(i) = work.take() {
            let (_, req, skip, len) = work.piece(i);
            lane.download(gpu, k % 2, req.file_offset + skip as u64, req.memory.part(skip, len))?;
            if let Some((s, j)) = staged.take() {
                self.put(lane, work, s, j)?;
            }
            let waited = Instant::now();
            lane.synchronize(gpu)?;
            charge(&self.profile.copy_wait_ns, waited);
            staged = Some((k % 2, i));
            k += 1;
        }
        if let Some((s, j)) = staged {
            self.put(lane, work, s, j)?;
        }
        Ok(())
    }

    /// Writes piece `i` of `work` to the file from stage `k` of `lane`, where it was copied. A
    /// file error fails the piece's request; a GPU error is returned.
    fn put(&self, lane: &mut Lane, work: &Work, k: usize, i: usize) -> Result<()> {
        let (r, req, skip, len) = work.piece(i);
        let offset = req.file_offset + skip as u64;
        let started = Instant::now();
        let (staged, ring) = lane.host_side(&*self.gpu, k, offset, len)?;
        let mut io = DirectIo { ring, state: &self.uring };
        let written = req.file.write(&mut io, staged, offset, req.durable);
        charge(&self.profile.file_ns, started);
        match written {
            Ok(()) => work.done(i, len),
            Err(e) => {
                work.fail(r, e);
                work.done(i, 0);
            }
        }
        Ok(())
    }

    /// Device to file with `dev`'s lanes: the caller's thread and, for more than two chunks,
    /// the device's workers each take chunks with a lane of their own; one `fdatasync` per
    /// file written when writes are durable.
    pub(crate) fn run_write(self: &Arc<Self>, dev: &Arc<Device<G>>, reqs: &[&IoRequest<'_>]) -> Vec<Result<usize>> {
        let mut chunk = self.chunk();
        if dev.in_flight.load(Ordering::Relaxed) == 1 {
            // Alone on the device, a request too small for two chunks per thread is cut finer
            // (measured for reads through lanes on the H200, 64 MiB calls of one caller: 4 MiB
            // chunks 31.5 GB/s, 2 MiB 33.1, 1 MiB 33.1).
            let total = reqs.iter().map(|r| r.size()).sum();
            chunk = alone_chunk(chunk, total, dev.threads.min(dev.lanes.max()));
        }
        let work = Arc::new(Work::new(reqs.iter().map(|req| Request::new(req, chunk)).collect()));
        let chunks = work.pieces.len();
        // A thread per two chunks at most, so every lane pipelines. (Cutting a small request
        // into pieces so that the caller's lane pipelines too was measured on the H200: with
        // 16 callers of 1 MiB reads it lost 10-35%, each extra copy costing more than the
        // overlap gained.)
        let threads = dev.threads.min(dev.lanes.max()).min(chunks.div_ceil(2)).max(1);
        let (tx, rx) = mpsc::channel::<()>();
        for _ in 1..threads {
            let (inner, d, work, tx) = (Arc::clone(self), Arc::clone(dev), Arc::clone(&work), tx.clone());
            // The descriptors and device range stay valid: this call waits for every helper
            // (a helper that panics drops `tx`, which ends the wait too). The helper lets go
            // of the backend before it says it is done, so the backend is never dropped on a
            // worker (which could not join itself).
            dev.workers.submit(Box::new(move || {
                inner.work(&d, &work);
                drop((inner, d, work));
                drop(tx);
            }));
        }
        drop(tx);
        self.work(dev, &work);
        while let Ok(()) = hipfile_core::pool::recv_soon(&rx) {}
        let mut results = work.results();
        if work.reqs.iter().any(|req| req.durable) {
            // One fdatasync per file that was written durably.
            let started = Instant::now();
            let mut synced: HashMap<i32, Result<()>> = HashMap::new();
            let durable = work.reqs.iter().zip(results.iter_mut()).filter(|(req, r)| req.durable && r.is_ok());
            for (req, result) in durable {
                let fd = req.file.buffered_fd();
                if let Err(e) = synced.entry(fd).or_insert_with(|| fdatasync(fd)) {
                    *result = Err(e.clone());
                }
            }
            charge(&self.profile.file_ns, started);
        }
        self.profile.chunks.fetch_add(chunks as u64, Ordering::Relaxed);
        results
    }
}
