//! Reads: file to device through stripes ([`crate::stripes`]), the caller's thread and the
//! device's workers filling each stripe's slot in pieces, the thread that ends a stripe queuing
//! its copy.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hipfile_core::{Error, GpuRuntime, IoRequest, Result};

use crate::device::Device;
use crate::fileio::{DirectIo, FileSide};
use crate::profile::charge;
use crate::stripes::{self, Setup, Stripe, Stripes};
use crate::{Inner, Request, outcomes};

/// The first of `list`'s stripes that lie in its last `tail` bytes (a stripe partly there
/// counts): 0 when the whole list does.
fn first_of_tail(list: &[Stripe], tail: usize) -> usize {
    let mut bytes = 0;
    for (s, stripe) in list.iter().enumerate().rev() {
        bytes += stripe.len;
        if bytes >= tail {
            return s;
        }
    }
    0
}

/// A read (one or more requests of one device) through stripes ([`stripes`]).
struct ReadWork {
    reqs: Vec<Request>,
    stripes: Stripes,
    /// Each request's first error.
    errors: Vec<OnceLock<Error>>,
    /// Where its copies are queued, in order.
    stream: hipfile_core::Stream,
    /// The piece each thread reads of a stripe the page cache holds.
    piece: usize,
    /// The first stripe of the read's tail, whose pieces read from the page cache are demoted
    /// ([`demote`]); the stripes' count where none is.
    demote_from: usize,
    /// When the call began, and whether a copy has been queued yet (for the profile).
    started: Instant,
    shipped: AtomicBool,
}

impl ReadWork {
    /// Each request's outcome, once every stripe has ended and its copies run: its error, or
    /// its bytes up to its first short part (end of file).
    fn results(&self) -> Vec<Result<usize>> {
        let parts = self.stripes.list.iter().flat_map(|s| &s.parts);
        // A part whose request has not failed was copied whole up to its valid bytes (`ship`).
        let parts = parts.map(|p| (p.req, p.valid(), p.len));
        outcomes(self.reqs.len(), parts, &self.errors)
    }
}

impl<G: GpuRuntime + ?Sized + 'static> Inner<G> {
    /// File to device through stripes ([`stripes`]), on the requests' device (the caller's
    /// thread is given its own device back afterwards).
    pub(crate) fn run_read(self: &Arc<Self>, dev: &Arc<Device<G>>, reqs: &[&IoRequest<'_>]) -> Vec<Result<usize>> {
        let device = reqs[0].device();
        let all = |e: Error| reqs.iter().map(|_| Err(e.clone())).collect();
        let previous = match self.gpu.current_device() {
            Ok(d) => d,
            Err(e) => return all(e.into()),
        };
        if previous != device
            && let Err(e) = self.gpu.set_device(device)
        {
            return all(e.into());
        }
        let results = self.read_here(dev, reqs);
        if previous != device
            && let Err(e) = self.gpu.set_device(previous)
        {
            return all(e.into());
        }
        results
    }

    /// [`Inner::run_read`] on the calling thread's current device, the requests'. The caller's
    /// thread and, when there are enough pieces, the device's workers take pieces in order;
    /// each stripe's last piece queues its copy on the read's stream, which is waited for once
    /// every stripe has ended.
    fn read_here(self: &Arc<Self>, dev: &Arc<Device<G>>, reqs: &[&IoRequest<'_>]) -> Vec<Result<usize>> {
        // (A slot holds its chunk: at least 64 KiB from the environment, maybe less in code.)
        if let [req] = reqs
            && req.size() <= stripes::MIN_PIECE.min(self.settings.chunk)
        {
            let req = Request::new(req, stripes::MIN_PIECE);
            let end = req.file_offset + req.len() as u64;
            if req.len() > 0 && !req.file.reads_direct(&self.reads, req.file_offset, end) {
                return vec![self.read_small(dev, &req)];
            }
        }
        let started = Instant::now();
        let stream = match dev.slots.stream() {
            Ok(stream) => stream,
            Err(e) => return reqs.iter().map(|_| Err(e.into())).collect(),
        };
        let mut stripe = self.chunk();
        if dev.in_flight.load(Ordering::Relaxed) == 1 {
            stripe = stripes::alone_stripe(stripe, reqs.iter().map(|r| r.size()).sum());
        }
        let reqs: Vec<Request> = reqs.iter().map(|req| Request::new(req, stripe)).collect();
        // Each request's chunks (an empty request moves nothing, and ends at once), small ones
        // packed into shared stripes.
        let chunks = reqs.iter().enumerate().flat_map(|(r, req)| {
            (0..req.chunk_count()).map(move |c| {
                let (skip, len) = req.chunk_at(c);
                (r, skip, len, req.file_offset + skip as u64)
            })
        });
        let (stripes, ended) = Stripes::new(stripes::pack(chunks, stripe));
        // The device's threads shared among the requests in flight on it (each caller's own
        // thread works too), each reading a piece of a stripe the page cache holds.
        let threads = (dev.threads / dev.in_flight.load(Ordering::Relaxed).max(1)).max(1);
        let piece = stripes::piece_for(stripe, threads);
        let parts = stripes.list.iter().flat_map(|s| &s.parts);
        let (parts, pieces) = parts.fold((0, 0), |(n, p), part| (n + 1, p + part.len.div_ceil(piece)));
        // The last bytes the read's threads write are still in their own caches when their
        // copies run: those are demoted ([`demote`]).
        let demote_from = match &self.demote {
            Some(d) => first_of_tail(&stripes.list, d.tail(threads.min(pieces))),
            None => stripes.list.len(),
        };
        let work = Arc::new(ReadWork {
            errors: reqs.iter().map(|_| OnceLock::new()).collect(),
            reqs,
            stripes,
            stream,
            piece,
            demote_from,
            started,
            shipped: AtomicBool::new(false),
        });
        for _ in 1..threads.min(pieces) {
            let (inner, d, work) = (Arc::clone(self), Arc::clone(dev), Arc::clone(&work));
            // The descriptors and device range stay valid: this call waits for every stripe to
            // end, and a worker that comes after that finds no piece left. (A worker may hold
            // the backend when it goes: a pool never joins its own thread.)
            dev.workers.submit(Box::new(move || inner.fill(&d, &work)));
        }
        self.fill(dev, &work);
        while let Ok(()) = hipfile_core::pool::recv_soon(&ended) {}
        charge(&self.profile.last_copy_wall_ns, started);
        // The requests' device memory is the callers' again when their calls return: nothing
        // may still be copying.
        let waited = Instant::now();
        let synced = self.gpu.stream_synchronize(stream);
        charge(&self.profile.copy_wait_ns, waited);
        dev.slots.put_stream(stream);
        self.profile.chunks.fetch_add(parts, Ordering::Relaxed);
        match synced {
            Ok(()) => work.results(),
            Err(e) => work.reqs.iter().map(|_| Err(e.into())).collect(),
        }
    }

    /// One request of one piece at most ([`stripes::MIN_PIECE`]), read through the page cache
    /// on the caller's thread: into a slot, copied, and the copy waited for before the slot goes
    /// back, so that no event is recorded or asked about (each runtime call counts in a 4 KiB
    /// read's time, and more when threads call at once: docs/performance.md, "Small reads and many
    /// callers"). On a busy device the copy may be gathered with other threads' ([`gather`]).
    fn read_small(&self, dev: &Device<G>, req: &Request) -> Result<usize> {
        let stream = dev.slots.stream()?;
        let waited = Instant::now();
        let slot = dev.slots.take();
        charge(&self.profile.lane_wait_ns, waited);
        let mut slot = match slot {
            Ok(slot) => slot,
            Err(e) => {
                dev.slots.put_stream(stream);
                return Err(e.into());
            }
        };
        self.reads.cached_chunks.fetch_add(1, Ordering::Relaxed);
        self.profile.chunks.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let buf = slot.window(req.file_offset, req.len());
        let read = self.read_cached(&req.file, buf, req.file_offset, demote_small(dev, req.len()));
        charge(&self.profile.file_ns, started);
        let copied = read.and_then(|n| {
            if n == 0 {
                return Ok(0);
            }
            if self.gathers(dev, n) {
                let piece = slot.piece(req.file_offset, req.memory.part(0, n));
                let waited = Instant::now();
                // SAFETY: the window holds the `n` bytes just read and stays untouched until the
                // gathered copy has run (or, should it fail, until the slot's next taker has
                // waited for its stream); the request's device memory is valid until its caller
                // returns.
                let gathered = unsafe { dev.slots.gatherer.copy(&*self.gpu, piece, stream, &self.profile) };
                charge(&self.profile.copy_wait_ns, waited);
                return gathered.map(|()| n).map_err(|(e, on)| {
                    slot.queued_behind(&*self.gpu, on);
                    e.into()
                });
            }
            let shipping = Instant::now();
            // SAFETY: the window holds the `n` bytes just read and stays untouched until the
            // copy has run (waited for below, or the slot marked queued); the request's device
            // memory is valid until its caller returns.
            let queued = unsafe { slot.copy(&*self.gpu, req.file_offset, req.memory.part(0, n), stream) };
            charge(&self.profile.ship_ns, shipping);
            queued?;
            let waited = Instant::now();
            let synced = slot.wait(&*self.gpu, stream);
            charge(&self.profile.copy_wait_ns, waited);
            synced.map(|()| n).map_err(Into::into)
        });
        dev.slots.put(slot);
        dev.slots.put_stream(stream);
        copied
    }

    /// `buf.len()` bytes at `offset` of `file` through the page cache, into a slot: out of the
    /// reading core's cache where `tail` and the machine demotes ([`demote`]), counted.
    fn read_cached(&self, file: &FileSide, buf: &mut [u8], offset: u64, tail: bool) -> Result<usize> {
        let Some(demote) = self.demote.as_ref().filter(|_| tail) else { return file.read_buffered(buf, offset) };
        let read = demote.read(file, buf, offset);
        if let Ok(n) = &read {
            self.profile.demoted_bytes.fetch_add(*n as u64, Ordering::Relaxed);
        }
        read
    }

    /// Takes pieces of `work` until none is left, reading each into its stripe's slot; the
    /// piece that ends a stripe queues the stripe's copies. The thread's current device is the
    /// read's.
    fn fill(&self, dev: &Device<G>, work: &ReadWork) {
        loop {
            let (taking, own) = (Instant::now(), std::cell::Cell::new(Duration::ZERO));
            let taken = work.stripes.take(|stripe| {
                let started = Instant::now();
                let how = self.set_up(dev, work, stripe);
                own.set(own.get() + started.elapsed());
                how
            });
            let waited = taking.elapsed().saturating_sub(own.get());
            self.profile.setup_wait_ns.fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
            let Some((s, i)) = taken else { break };
            let stripe = &work.stripes.list[s];
            let done = match stripe.setup() {
                Setup::Read { at, pieces } => {
                    let piece = &pieces[i];
                    let part = &stripe.parts[piece.part];
                    let (r, req) = (part.req, &work.reqs[part.req]);
                    if work.errors[r].get().is_none() {
                        let offset = req.file_offset + (part.skip + piece.from) as u64;
                        let started = Instant::now();
                        // SAFETY: the stripe is set up to read at `at`, and `take` handed this
                        // piece to this thread alone.
                        let buf = unsafe { stripe.piece(*at, piece) };
                        let read = if piece.direct {
                            req.file.read(&self.reads, &mut DirectIo { ring: None, state: &self.uring }, buf, offset)
                        } else {
                            self.read_cached(&req.file, buf, offset, s >= work.demote_from)
                        };
                        charge(&self.profile.file_ns, started);
                        match read {
                            Ok(n) if n < piece.len => part.short(piece.from, n), // end of file
                            Ok(_) => {}
                            Err(e) => {
                                let _ = work.errors[r].set(e);
                                part.short(piece.from, 0);
                            }
                        }
                    } else {
                        part.short(piece.from, 0); // the request has failed: nothing more is read
                    }
                    piece.len
                }
                Setup::Failed => {
                    stripe.parts.iter().for_each(|part| part.short(0, 0));
                    stripe.len
                }
            };
            if stripe.filled(done) {
                self.ship(dev, work, s);
            }
        }
    }

    /// How `stripe` is read, for the first thread that reaches it: a slot to read into (waiting
    /// for one if need be), each part in pieces where the page cache holds any of it, whole
    /// with `O_DIRECT` where it holds none.
    fn set_up(&self, dev: &Device<G>, work: &ReadWork, stripe: &Stripe) -> Setup {
        let failed = |part: &stripes::Part| work.errors[part.req].get().is_some();
        if stripe.parts.iter().all(failed) {
            return Setup::Failed;
        }
        let probing = Instant::now();
        let pieces = stripe.pieces(work.piece, |part| {
            let req = &work.reqs[part.req];
            let offset = req.file_offset + part.skip as u64;
            let direct = !failed(part) && req.file.reads_direct(&self.reads, offset, offset + part.len as u64);
            if !direct {
                self.reads.cached_chunks.fetch_add(1, Ordering::Relaxed); // a direct one counts as it reads
            }
            direct
        });
        charge(&self.profile.probe_ns, probing);
        let waited = Instant::now();
        let slot = dev.slots.take();
        charge(&self.profile.lane_wait_ns, waited);
        match slot {
            Ok(slot) => stripe.hold(slot, pieces),
            Err(e) => {
                let e: Error = e.into();
                stripe.parts.iter().for_each(|part| drop(work.errors[part.req].set(e.clone())));
                Setup::Failed
            }
        }
    }

    /// Queues the copies of stripe `s` of `work`, whose pieces have all been read, and gives its
    /// slot back; the stripe has ended.
    fn ship(&self, dev: &Device<G>, work: &ReadWork, s: usize) {
        let stripe = &work.stripes.list[s];
        if let Some(mut slot) = stripe.release() {
            if let Setup::Read { at, .. } = stripe.setup() {
                let parts = &stripe.parts;
                let valid = parts.iter().enumerate().map(|(k, part)| (k, part.valid()));
                let valid = valid.filter(|&(k, n)| n > 0 && work.errors[parts[k].req].get().is_none());
                let dst = |part: &stripes::Part, n| work.reqs[part.req].memory.part(part.skip, n);
                let copies = stripes::copies(parts, valid, *at, dst);
                let shipping = Instant::now();
                // SAFETY: each part's first bytes lie in the slot at its position from `at`
                // (`hold`); the requests' device memory stays valid until their caller
                // returns, after waiting for the stream.
                let shipped = unsafe {
                    crate::slots::ship(&*self.gpu, &mut slot, copies.iter().map(|c| (c.1, c.2)), work.stream)
                };
                charge(&self.profile.ship_ns, shipping);
                if !work.shipped.swap(true, Ordering::Relaxed) {
                    charge(&self.profile.first_copy_wall_ns, work.started);
                }
                if let Err(e) = shipped {
                    for part in copies.iter().flat_map(|(ks, _, _)| &parts[ks.clone()]) {
                        let _ = work.errors[part.req].set(e.clone());
                    }
                }
            }
            dev.slots.put(slot);
        }
        work.stripes.end();
    }
}

/// The small reads whose copies are gathered with other threads' ([`crate::gather`]) when
/// their device is busy.
const GATHERED: std::ops::Range<usize> = (16 << 10)..(64 << 10);

impl<G: GpuRuntime + ?Sized + 'static> Inner<G> {
    /// Whether a small read of `len` bytes on `dev` has its copy gathered with other threads'
    /// ([`crate::gather`]): where the runtime gathers, from 16 KiB and under 64 KiB, with other
    /// requests in flight on the device. Measured on the H200 (docs/bench/2026-12-02-h200-gather),
    /// sixteen threads' reads gathered against a copy each: 16 KiB -2 to +16% (calls 3 and 4),
    /// 32 KiB +8 to +24%, 64 KiB -4 to +6% (no gain: its copies, demoted, are fast already);
    /// by hand, 4 KiB 2.3 GB/s gathered against 2.6 (call1).
    fn gathers(&self, dev: &Device<G>, len: usize) -> bool {
        self.gather && GATHERED.contains(&len) && dev.in_flight.load(Ordering::Relaxed) > 1
    }
}

/// The smallest small read whose bytes are demoted when its device is busy.
const DEMOTE_SMALL_FROM: usize = 32 << 10;

/// Whether a small read of `len` bytes on `dev` is demoted out of the reading core's cache
/// before its copy, as a larger read's tail is. Only where that pays, measured on the H200
/// (docs/bench/2026-12-02-h200-review/call4): with other requests in flight on the device, from
/// 32 KiB (sixteen threads' 32 and 64 KiB reads 35-55% faster; at 4 and 8 KiB 4% slower, 16 KiB
/// even). A read alone on its device copies its bytes faster from the core's cache at every
/// size (demoting cost 16 KiB to 64 KiB reads 2-6 us).
fn demote_small<G: GpuRuntime + ?Sized>(dev: &Device<G>, len: usize) -> bool {
    len >= DEMOTE_SMALL_FROM && dev.in_flight.load(Ordering::Relaxed) > 1
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use hipfile_core::{Backend, BounceSettings, DeviceSpan, Direction, IoRequest};

    use crate::Bounce;
    use crate::test_file::TestFile;

    /// A read of one piece at most through the page cache waits for its one copy and records
    /// no event. Bytes right, short at the end of the file, nothing copied past it.
    #[test]
    fn a_small_read_copies_once_and_records_no_event() {
        use hipfile_backend_mock::MockGpu;
        let gpu = MockGpu::new(1);
        let settings = BounceSettings { threads: 4, chunk: 1 << 20, io_uring: false, ..BounceSettings::default() };
        let bounce = Bounce::new(Arc::clone(&gpu), &settings);
        let data: Vec<u8> = (0..(1usize << 20) + 100).map(|i| (i * 13 % 247) as u8).collect();
        let file = TestFile::new(&data);
        let dev = gpu.malloc(64 << 10).unwrap();
        // SAFETY: the allocation above.
        let read = |len, at| IoRequest::new(Direction::Read, &file.handle, unsafe { DeviceSpan::new(dev, len) }, 0, at);
        bounce.wait_warm();
        let (copies, events) = (gpu.faults().copy_count(), gpu.faults().events_recorded());
        let mut back = vec![0u8; 64 << 10];
        for (len, at, moved) in
            [(4096, 8192, 4096), (64 << 10, 12345, 64 << 10), (4096, 1 << 20, 100), (10, 5 << 20, 0)]
        {
            assert_eq!(bounce.transfer(&read(len, at)), Ok(moved));
            gpu.read_device(dev, &mut back[..moved]).unwrap();
            let at = (at as usize).min(data.len());
            assert!(back[..moved] == data[at..at + moved]);
        }
        assert_eq!(gpu.faults().copy_count() - copies, 3, "one copy a read, none past the end");
        assert_eq!(gpu.faults().events_recorded(), events);
        assert_eq!(bounce.inner.profile.chunks.load(Ordering::Relaxed), 4);
    }

    /// A small read's bytes are demoted out of the reading core's cache only from 32 KiB and
    /// with another request in flight on its device; the bytes are the file's either way.
    #[test]
    fn a_small_read_is_demoted_only_from_32_kib_on_a_busy_device() {
        use hipfile_backend_mock::MockGpu;
        let gpu = MockGpu::new(1);
        let settings = BounceSettings { threads: 4, chunk: 1 << 20, io_uring: false, ..BounceSettings::default() };
        let can = |_: &std::path::Path, mode| crate::demote::Demoter::with_cache(mode, 1 << 20);
        let bounce = Bounce::with_demote(Arc::clone(&gpu), &settings, "/sys".into(), can);
        let data: Vec<u8> = (0..1usize << 20).map(|i| (i * 7 % 251) as u8).collect();
        let file = TestFile::new(&data);
        let dev = gpu.malloc(64 << 10).unwrap();
        let demoted = || bounce.inner.profile.demoted_bytes.load(Ordering::Relaxed);
        let mut back = vec![0u8; 64 << 10];
        let mut read = |len: usize, at: usize| {
            // SAFETY: the allocation above.
            let req = IoRequest::new(Direction::Read, &file.handle, unsafe { DeviceSpan::new(dev, len) }, 0, at as u64);
            assert_eq!(bounce.transfer(&req), Ok(len));
            gpu.read_device(dev, &mut back[..len]).unwrap();
            assert!(back[..len] == data[at..at + len]);
        };
        for len in [4 << 10, 32 << 10, 64 << 10] {
            read(len, 4096 + len);
        }
        assert_eq!(demoted(), 0, "alone on the device");
        let device = bounce.inner.device(0).unwrap();
        device.in_flight.fetch_add(1, Ordering::Relaxed);
        for len in [4 << 10, 16 << 10, 32 << 10, 64 << 10] {
            read(len, 8192 + 3 * len);
        }
        device.in_flight.fetch_sub(1, Ordering::Relaxed);
        assert_eq!(demoted(), (32 << 10) + (64 << 10), "from 32 KiB, another request in flight");
    }

    /// Small reads from many threads at once: every read's bytes land where it asked, and a
    /// copy that fails fails its own read alone.
    #[test]
    fn small_reads_from_many_threads_each_get_their_bytes() {
        let (gathered, failed) = small_reads_from_threads(4096);
        assert_eq!(gathered, 0, "under 16 KiB, a copy each");
        assert_eq!(failed, 1, "one copy failed, one read");
    }

    /// From 16 KiB on a busy device, small reads' copies are gathered ([`crate::gather`]): each
    /// thread still gets its own bytes, and a failed copy fails the reads gathered with it
    /// (each thread has one in flight), no more.
    #[test]
    fn small_reads_gathered_from_many_threads_each_get_their_bytes() {
        let (gathered, failed) = small_reads_from_threads(64 << 10);
        assert!(gathered > 0, "gathered copies");
        assert!((1..=THREADS).contains(&failed), "{failed} reads failed");
    }

    const THREADS: usize = 8;

    /// [`THREADS`] threads' small reads of up to `longest` bytes, each into its own device
    /// range: every read's bytes checked; then again with one copy failing. The gathered copies
    /// of the first run, and the failed reads of the second.
    fn small_reads_from_threads(longest: usize) -> (u64, usize) {
        use hipfile_backend_mock::MockGpu;
        const READS: usize = 100;
        let gpu = MockGpu::new(1);
        let settings = BounceSettings { threads: 4, chunk: 1 << 20, io_uring: false, ..BounceSettings::default() };
        let bounce = Bounce::new(Arc::clone(&gpu), &settings);
        let data: Vec<u8> = (0..8usize << 20).map(|i| (i * 31 % 251) as u8).collect();
        let file = TestFile::new(&data);
        let dev = gpu.malloc(THREADS * READS * longest).unwrap();
        bounce.wait_warm();
        let run = || {
            std::thread::scope(|s| {
                let threads: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let (bounce, file) = (&bounce, &file);
                        s.spawn(move || {
                            (0..READS)
                                .map(|i| {
                                    let (slot, len) = (t * READS + i, longest / 8 + (i * 97) % (longest * 7 / 8));
                                    // SAFETY: inside the allocation above; each read its own slot.
                                    let memory = unsafe { DeviceSpan::new(dev + slot * longest, len) };
                                    let at = ((slot * 7919) % 1000 * 4099) as u64;
                                    let read = IoRequest::new(Direction::Read, &file.handle, memory, 0, at);
                                    (slot, at, len, bounce.transfer(&read))
                                })
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                threads.into_iter().flat_map(|t| t.join().unwrap()).collect::<Vec<_>>()
            })
        };
        let mut back = vec![0u8; longest];
        for (slot, at, len, moved) in run() {
            assert_eq!(moved, Ok(len));
            gpu.read_device(dev + slot * longest, &mut back[..len]).unwrap();
            assert!(back[..len] == data[at as usize..at as usize + len], "read {slot}");
        }
        let gathered = gpu.faults().gather_count();
        gpu.faults().fail_copy((THREADS * READS / 2) as u64, hipfile_core::HipError::INVALID_VALUE);
        (gathered, run().into_iter().filter(|r| r.3.is_err()).count())
    }
}
