//! hipfile-backend-bounce: the bounce data path (upstream's "fallback", cuFile's "compat mode"), built to be the
//! fastest of its kind.
//!
//! A request moves in chunks through pinned host staging buffers, pinned once and reused
//! (created on first use and bounded per device by a memory limit):
//! - reads go through stripes (the `stripes` module): a read is cut into stripes that the
//!   caller's thread and, for a large read, workers of a pool fill together in file order, each
//!   thread reading a piece of the stripe at the front into its pinned slot; the thread that
//!   ends a stripe queues one copy of it to the device, and the threads go on filling the next
//!   stripes meanwhile. Reads are page-cache aware: a stripe the page cache holds is read in
//!   pieces, buffered; one it holds none of is read whole with `O_DIRECT` where aligned;
//! - writes go through lanes (the `lanes` module): a lane is a stream and two buffers (and an
//!   io_uring with them registered, for direct I/O, where the kernel allows); the threads take
//!   chunks in file order, each with its own lane, and each lane pipelines: while one chunk is
//!   written to the file, the next is copied from the device into the other buffer;
//! - writes are durable when the call returns: one `fdatasync` per call, not per chunk
//!   (`HIPFILE_DURABLE_WRITES=false` turns it off); durable writes send the aligned interior
//!   through `O_DIRECT`;
//! - several GPUs: each device has its own staging and its own workers (set up for it once:
//!   current device, and on a machine with several NUMA nodes the CPUs and memory of its
//!   node, see the `topology` module), so requests for different GPUs share no lock or
//!   thread; devices busy at once share the staging budget of one (smaller chunks); the
//!   caller's current device is left as it was;
//! - staging is set up ahead of use: when the driver opens (for the opening thread's device)
//!   and when a buffer is registered (for its device), a background thread pins the slots
//!   reads use, so the first read does not pay for pinning (a write's lanes are pinned when
//!   the first write needs them); the driver's open does not wait for it.
//!
//! Errors: a failure anywhere fails the call; a write never reports bytes it did not write,
//! and a read reports bytes only up to end of file.
//!
//! Files: this one holds the backend and how a call is run; `read` and `write` the two
//! pipelines, `device` what is kept per device, `profile` where the threads' time goes;
//! `stripes` and `lanes` the staging each pipeline uses, `fileio` and `uring` the file side,
//! `demote` and `streaming` how a read's tail leaves the readers' caches, `topology` placement.

mod bounded;
mod demote;
mod device;
mod fileio;
mod gather;
mod lanes;
mod profile;
mod read;
mod slots;
mod streaming;
mod stripes;
#[cfg(test)]
mod test_file;
mod topology;
mod uring;
mod write;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

use hipfile_core::sync::{lock, read, write};
use hipfile_core::{Backend, BackendKind, BounceSettings, DeviceSpan, Direction, Error, GpuRuntime, IoRequest, Result};

use demote::Demoter;
use device::Device;
use fileio::{FileSide, PAGE, ReadPolicy};
use profile::Profile;
use topology::{Placement, Topology};
use uring::UringState;

/// The bounce backend over the runtime `G`.
pub struct Bounce<G: GpuRuntime + ?Sized + 'static> {
    inner: Arc<Inner<G>>,
    /// Threads setting staging up ahead of use; stopped and joined when the backend goes.
    warmers: Mutex<Vec<JoinHandle<()>>>,
}

struct Inner<G: GpuRuntime + ?Sized + 'static> {
    gpu: Arc<G>,
    settings: BounceSettings,
    /// Threads one request uses at most (the caller's included), before placement.
    threads: usize,
    uring: Arc<UringState>,
    reads: ReadPolicy,
    profile: Profile,
    /// How the last bytes of a read leave the reading cores' caches (`None`: they stay).
    demote: Option<Demoter>,
    /// Small reads from several threads are copied together ([`gather`]): the settings allow
    /// it and the runtime gathers in one operation.
    gather: bool,
    topology: Topology,
    /// Where the topology was read (`/sys`), for the devices' PCI addresses.
    sysfs: PathBuf,
    devices: RwLock<HashMap<i32, Arc<Device<G>>>>,
    /// Devices with requests in flight.
    busy: AtomicUsize,
    /// The backend is going: warmers stop.
    closing: AtomicBool,
}

/// Smallest chunk a request is cut into when devices share the staging budget.
const MIN_SHARED_CHUNK: usize = 1 << 20;

/// The chunk of a request while `busy` devices share the staging budget of one (`base`).
fn shared_chunk(base: usize, busy: usize) -> usize {
    (base / busy.max(1)).next_multiple_of(PAGE as usize).clamp(MIN_SHARED_CHUNK.min(base), base)
}

/// A request in flight on a device, counted while it lasts: the devices busy at once share
/// the staging budget (see [`Inner::chunk`]).
struct Busy<'a> {
    device: &'a AtomicUsize,
    busy: &'a AtomicUsize,
}

impl<'a> Busy<'a> {
    fn new(device: &'a AtomicUsize, busy: &'a AtomicUsize) -> Self {
        if device.fetch_add(1, Ordering::Relaxed) == 0 {
            busy.fetch_add(1, Ordering::Relaxed);
        }
        Busy { device, busy }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if self.device.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.busy.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// One request: what it moves, and the chunks it is cut into (at chunk multiples of the file
/// offset, so all but the first start aligned).
#[derive(Clone, Copy, Debug)]
struct Request {
    file: FileSide,
    /// A write ends with the file's `fdatasync` (semantics §5).
    durable: bool,
    device: i32,
    memory: DeviceSpan,
    file_offset: u64,
    chunk: usize,
}

impl Request {
    /// `req` as the bounce path runs it, cut into `chunk`-byte chunks.
    fn new(req: &IoRequest<'_>, chunk: usize) -> Request {
        Request {
            file: FileSide::new(req.file(), req.cache()),
            durable: req.durable(),
            device: req.device(),
            memory: req.memory(),
            file_offset: req.file_offset(),
            chunk,
        }
    }

    fn len(&self) -> usize {
        self.memory.len()
    }

    fn first_len(&self) -> usize {
        (self.chunk - (self.file_offset % self.chunk as u64) as usize).min(self.len())
    }

    fn chunk_count(&self) -> usize {
        1 + (self.len() - self.first_len()).div_ceil(self.chunk)
    }

    /// Chunk `i`: its offset in the request and its length.
    fn chunk_at(&self, i: usize) -> (usize, usize) {
        match i {
            0 => (0, self.first_len()),
            _ => {
                let skip = self.first_len() + (i - 1) * self.chunk;
                (skip, self.chunk.min(self.len() - skip))
            }
        }
    }
}

/// What `settings` do with reads' tails on this machine, in words (for `hipfile check`).
pub fn reads_tails(settings: &BounceSettings) -> String {
    demote::describe(std::path::Path::new("/sys"), settings.demote)
}

impl<G: GpuRuntime + ?Sized + 'static> Bounce<G> {
    /// A bounce backend over `gpu` with `settings`; staging for the calling thread's current
    /// device is set up in the background.
    pub fn new(gpu: Arc<G>, settings: &BounceSettings) -> Self {
        Self::with_sysfs(gpu, settings, PathBuf::from("/sys"))
    }

    /// As [`Bounce::new`], reading the machine's topology under `sysfs` instead of `/sys` (a
    /// directory laid out the same way: tests of placement).
    pub fn with_sysfs(gpu: Arc<G>, settings: &BounceSettings, sysfs: PathBuf) -> Self {
        Self::with_demote(gpu, settings, sysfs, Demoter::detect)
    }

    /// As [`Bounce::with_sysfs`], with `detect` saying what the settings' way of demoting
    /// reads' tails does on this machine (tests: a processor that has `cldemote`, on one that
    /// has not).
    fn with_demote(
        gpu: Arc<G>,
        settings: &BounceSettings,
        sysfs: PathBuf,
        detect: impl FnOnce(&std::path::Path, hipfile_core::Demote) -> Option<Demoter>,
    ) -> Self {
        let demote = detect(&sysfs, settings.demote);
        let threads = match settings.threads {
            0 => std::thread::available_parallelism().map_or(4, |n| n.get()).min(device::DEFAULT_MAX_THREADS),
            n => n,
        };
        let current = gpu.current_device();
        let gather = settings.gather && gpu.gathers();
        let bounce = Bounce {
            inner: Arc::new(Inner {
                gpu,
                settings: settings.clone(),
                threads,
                uring: Arc::new(UringState::new(settings.io_uring)),
                reads: ReadPolicy::new(settings.direct_streams),
                profile: Profile::default(),
                demote,
                gather,
                topology: Topology::read(&sysfs),
                sysfs,
                devices: RwLock::new(HashMap::new()),
                busy: AtomicUsize::new(0),
                closing: AtomicBool::new(false),
            }),
            warmers: Mutex::new(Vec::new()),
        };
        if let Ok(device) = current {
            bounce.warm(device);
        }
        bounce
    }

    /// Threads one large request uses (the caller's included).
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Direct transfers served through io_uring with registered buffers so far.
    pub fn io_uring_ops(&self) -> u64 {
        self.inner.uring.ops.load(Ordering::Relaxed)
    }

    /// Where staging memory and workers of `device` go (a NUMA node and its CPUs, or nowhere
    /// in particular).
    pub fn placement(&self, device: i32) -> (Option<u32>, Vec<usize>) {
        let p = self.inner.placement(device);
        (p.node, p.cpus)
    }

    /// Waits until the staging being set up ahead of use is ready (tests and benchmarks that
    /// want to know).
    pub fn wait_warm(&self) {
        for warmer in std::mem::take(&mut *lock(&self.warmers)) {
            let _ = warmer.join();
        }
    }

    /// Sets up the staging reads of `device` use (its slots) in the background, once.
    fn warm(&self, device: i32) {
        let Ok(dev) = self.inner.device(device) else { return };
        if dev.warming.swap(true, Ordering::Relaxed) {
            return;
        }
        let inner = Arc::clone(&self.inner);
        let warmer = std::thread::Builder::new().name(format!("hipfile-warm{device}")).spawn(move || {
            let started = Instant::now();
            // One thread is enough: on an H200 machine, 16 workers pinning side by side took
            // as long as one thread alone (130-145 ms for 16 lanes), something in pinning is
            // serial there.
            let stop = || inner.closing.load(Ordering::Relaxed);
            let ready = inner.gpu.set_device(device).and_then(|()| dev.slots.prefill(usize::MAX, &stop));
            let ms = started.elapsed().as_secs_f64() * 1e3;
            match ready {
                Ok(()) => tracing::debug!(target: "hipfile", "bounce: staging of device {device} ready in {ms:.1} ms"),
                Err(e) => {
                    tracing::debug!(target: "hipfile", "bounce: staging of device {device} not set up ahead: {e}")
                }
            }
        });
        if let Ok(warmer) = warmer {
            lock(&self.warmers).push(warmer);
        }
    }
}

impl<G: GpuRuntime + ?Sized + 'static> Drop for Bounce<G> {
    fn drop(&mut self) {
        // Warmers hold the backend: they stop after the slot they are making, and end before
        // it is dropped here.
        self.inner.closing.store(true, Ordering::Relaxed);
        self.wait_warm();
    }
}

/// Each of `count` requests' outcome from its parts `(request, bytes moved, bytes asked)`, in
/// order: its error, or its bytes up to its first short part (end of file).
fn outcomes(
    count: usize,
    parts: impl Iterator<Item = (usize, usize, usize)>,
    errors: &[OnceLock<Error>],
) -> Vec<Result<usize>> {
    let mut results: Vec<Result<usize>> = (0..count).map(|_| Ok(0)).collect();
    let mut short = vec![false; count];
    for (r, moved, asked) in parts {
        if let (Ok(total), false) = (&mut results[r], short[r]) {
            *total += moved;
            short[r] = moved < asked;
        }
    }
    for (result, error) in results.iter_mut().zip(errors) {
        if let Some(e) = error.get() {
            *result = Err(e.clone());
        }
    }
    results
}

impl<G: GpuRuntime + ?Sized + 'static> Inner<G> {
    /// The chunk a request is cut into: the configured one while one device is busy; with
    /// several busy at once, a share of it (at least 1 MiB), so that the staging all of them
    /// keep in flight stays what one device alone keeps. Measured on two H200s (warm 2 GiB
    /// reads into both at once, 16 threads each): 4 MiB chunks 64 GB/s together, 2 MiB 95,
    /// 1 MiB 80; one GPU alone is fastest with 4 MiB (51 against 44 with 1 MiB).
    fn chunk(&self) -> usize {
        shared_chunk(self.settings.chunk, self.busy.load(Ordering::Relaxed))
    }

    fn placement(&self, device: i32) -> Placement {
        let bus_id = self.gpu.pci_bus_id(device).ok();
        self.topology.placement(&self.sysfs, bus_id.as_deref())
    }

    /// The state of `device`, made on first use.
    fn device(&self, id: i32) -> Result<Arc<Device<G>>> {
        if let Some(device) = read(&self.devices).get(&id) {
            return Ok(Arc::clone(device));
        }
        if !(0..self.gpu.device_count()?).contains(&id) {
            return Err(hipfile_core::HipError::INVALID_DEVICE.into());
        }
        let mut devices = write(&self.devices);
        let device = devices.entry(id).or_insert_with(|| {
            Arc::new(Device::new(&self.gpu, id, self.placement(id), self.threads, &self.settings, &self.uring))
        });
        Ok(Arc::clone(device))
    }

    /// Runs requests of one device and one direction together: reads through stripes
    /// ([`Inner::run_read`]); writes' chunks taken in order by the caller's thread and, when
    /// there are enough, the device's workers, each pipelining on its own lane.
    fn run(self: &Arc<Self>, reqs: &[&IoRequest<'_>]) -> Vec<Result<usize>> {
        let dev = match self.device(reqs[0].device()) {
            Ok(dev) => dev,
            Err(e) => return reqs.iter().map(|_| Err(e.clone())).collect(),
        };
        // Counted busy first, so that the chunk reflects this device too.
        let _busy = Busy::new(&dev.in_flight, &self.busy);
        if reqs[0].direction() == Direction::Read {
            return self.run_read(&dev, reqs);
        }
        self.run_write(&dev, reqs)
    }
}

impl<G: GpuRuntime + ?Sized + 'static> Backend for Bounce<G> {
    fn name(&self) -> &'static str {
        "bounce"
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Bounce
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.profile.counters(&self.inner.reads, self.io_uring_ops())
    }

    fn buffer_registered(&self, _base: usize, _len: usize, device: i32) {
        self.warm(device);
    }

    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize> {
        self.inner.run(&[req]).pop().expect("one result per request")
    }

    fn transfer_many(&self, reqs: &[&IoRequest<'_>]) -> Vec<Result<usize>> {
        // Requests of one device and one direction run together, group after group.
        let mut results: Vec<Option<Result<usize>>> = reqs.iter().map(|_| None).collect();
        let mut left: Vec<usize> = (0..reqs.len()).collect();
        while let Some(&first) = left.first() {
            let key = (reqs[first].device(), reqs[first].direction());
            let (group, rest): (Vec<usize>, Vec<usize>) =
                left.iter().partition(|&&i| (reqs[i].device(), reqs[i].direction()) == key);
            let requests: Vec<&IoRequest<'_>> = group.iter().map(|&i| reqs[i]).collect();
            for (i, result) in group.into_iter().zip(self.inner.run(&requests)) {
                results[i] = Some(result);
            }
            left = rest;
        }
        results.into_iter().map(|r| r.expect("every request ran")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_file::TestFile;
    use crate::write::alone_chunk;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_request_alone_is_cut_into_two_chunks_per_thread_within_bounds() {
        const MIB: usize = 1 << 20;
        assert_eq!(alone_chunk(4 * MIB, 64 * MIB, 16), 2 * MIB);
        assert_eq!(alone_chunk(4 * MIB, 2048 * MIB, 16), 4 * MIB, "large requests keep the chunk");
        assert_eq!(alone_chunk(4 * MIB, 4 * MIB, 16), 256 << 10, "never below 256 KiB");
        assert_eq!(alone_chunk(4 * MIB, MIB, 16), 256 << 10);
        assert_eq!(alone_chunk(256 << 10, 64 * MIB, 16), 256 << 10, "nor above the configured chunk");
        assert_eq!(alone_chunk(4 * MIB, 40 * MIB, 8), 2560 << 10);
    }

    #[test]
    fn a_request_counts_its_device_busy_before_choosing_its_chunk() {
        use hipfile_backend_mock::MockGpu;
        let gpu = MockGpu::new(2);
        let settings = BounceSettings { threads: 2, chunk: 4 << 20, io_uring: false, ..BounceSettings::default() };
        let bounce = Bounce::new(Arc::clone(&gpu), &settings);
        let file = TestFile::new(&vec![7u8; 32 << 20]);
        let handle = &file.handle;
        gpu.set_device(1).unwrap();
        let dev = gpu.malloc(32 << 20).unwrap();
        gpu.set_device(0).unwrap();
        // SAFETY: the allocation above.
        let memory = unsafe { DeviceSpan::new(dev, 32 << 20) };
        let req = IoRequest::new(Direction::Read, handle, memory, 1, 0);
        let chunks = || bounce.inner.profile.chunks.load(Ordering::Relaxed);
        assert_eq!(bounce.transfer(&req), Ok(32 << 20));
        assert_eq!(chunks(), 8, "alone: 4 MiB chunks");
        // Device 0 busy with another request: device 1's request shares the budget.
        let dev0 = bounce.inner.device(0).unwrap();
        let _elsewhere = Busy::new(&dev0.in_flight, &bounce.inner.busy);
        assert_eq!(bounce.transfer(&req), Ok(32 << 20));
        assert_eq!(chunks(), 8 + 16, "two devices busy: 2 MiB chunks");
    }

    #[test]
    fn a_read_through_stripes_copies_once_per_stripe() {
        use hipfile_backend_mock::MockGpu;
        let gpu = MockGpu::new(1);
        let settings = BounceSettings { threads: 4, chunk: 4 << 20, io_uring: false, ..BounceSettings::default() };
        let bounce = Bounce::new(Arc::clone(&gpu), &settings);
        let data: Vec<u8> = (0..8usize << 20).map(|i| (i % 251) as u8).collect();
        let file = TestFile::new(&data);
        let handle = &file.handle;
        let dev = gpu.malloc(8 << 20).unwrap();
        // SAFETY: the allocation above.
        let memory = unsafe { DeviceSpan::new(dev, 8 << 20) };
        let req = IoRequest::new(Direction::Read, handle, memory, 0, 0);
        bounce.wait_warm();
        let copies = gpu.faults().copy_count();
        assert_eq!(bounce.transfer(&req), Ok(8 << 20));
        // Alone, 8 MiB is cut into eight stripes of 1 MiB, each read in pieces of 256 KiB (a
        // quarter, one per thread) and copied once.
        assert_eq!(gpu.faults().copy_count() - copies, 8);
        assert_eq!(bounce.inner.profile.chunks.load(Ordering::Relaxed), 8);
        let mut back = vec![0u8; 8 << 20];
        gpu.read_device(dev, &mut back).unwrap();
        assert!(back == data);
        // An empty request (the driver answers those itself; the backend too, at once).
        // SAFETY: the allocation above.
        let empty = IoRequest::new(Direction::Read, handle, unsafe { DeviceSpan::new(dev, 0) }, 0, 0);
        assert_eq!(bounce.transfer_many(&[&empty, &req]), vec![Ok(0), Ok(8 << 20)]);
    }

    /// The last `threads x cache` bytes of a read are demoted out of the readers' caches, and
    /// nothing else; the bytes are the file's. Both ways: `cldemote` (where the processor has
    /// none, the instruction does nothing: the test runs the same path) and streaming stores.
    #[test]
    fn a_reads_tail_is_demoted() {
        a_reads_tail_is_demoted_by(hipfile_core::Demote::Auto);
        if cfg!(target_arch = "x86_64") {
            a_reads_tail_is_demoted_by(hipfile_core::Demote::Stream);
        }
    }

    fn a_reads_tail_is_demoted_by(mode: hipfile_core::Demote) {
        use hipfile_backend_mock::MockGpu;
        let gpu = MockGpu::new(1);
        let settings =
            BounceSettings { threads: 4, chunk: 4 << 20, io_uring: false, demote: mode, ..BounceSettings::default() };
        let can = |_: &std::path::Path, mode| Demoter::with_cache(mode, 1 << 20);
        let bounce = Bounce::with_demote(Arc::clone(&gpu), &settings, PathBuf::from("/sys"), can);
        let data: Vec<u8> = (0..8usize << 20).map(|i| (i % 241) as u8).collect();
        let file = TestFile::new(&data);
        let handle = &file.handle;
        let dev = gpu.malloc(8 << 20).unwrap();
        let demoted = || bounce.inner.profile.demoted_bytes.load(Ordering::Relaxed);
        // SAFETY: the allocation above.
        let read =
            |len: usize, at: u64| IoRequest::new(Direction::Read, handle, unsafe { DeviceSpan::new(dev, len) }, 0, at);
        // Eight stripes of 1 MiB read by 4 threads: what their caches hold (4 x 1 MiB) is the
        // last four stripes.
        assert_eq!(bounce.transfer(&read(8 << 20, 0)), Ok(8 << 20));
        assert_eq!(demoted(), 4 << 20);
        let mut back = vec![0u8; 8 << 20];
        gpu.read_device(dev, &mut back).unwrap();
        assert!(back == data);
        // A read shorter than the tail is demoted whole, up to the end of the file.
        assert_eq!(bounce.transfer(&read(2 << 20, (7 << 20) + 5)), Ok((1 << 20) - 5));
        assert_eq!(demoted(), (5 << 20) - 5);
        gpu.read_device(dev, &mut back[..(1 << 20) - 5]).unwrap();
        assert!(back[..(1 << 20) - 5] == data[(7 << 20) + 5..]);
        // `HIPFILE_BOUNCE_DEMOTE=false`: nothing is, though the processor could.
        let off = BounceSettings { demote: hipfile_core::Demote::Off, ..settings };
        let bounce = Bounce::with_demote(Arc::clone(&gpu), &off, PathBuf::from("/sys"), can);
        assert_eq!(bounce.transfer(&read(8 << 20, 0)), Ok(8 << 20));
        assert_eq!(bounce.inner.profile.demoted_bytes.load(Ordering::Relaxed), 0);
    }

    /// A batch of small reads shares slots, and the reads whose memory meets on the device
    /// share copies: 32 random 64 KiB blocks into one buffer's consecutive 64 KiB, 8 into
    /// another allocation's every other 64 KiB, and one cut short by the end of the file.
    #[test]
    fn a_batch_of_small_reads_shares_stripes_and_copies() {
        use hipfile_backend_mock::MockGpu;
        const BLOCK: usize = 64 << 10;
        let gpu = MockGpu::new(1);
        let settings = BounceSettings { threads: 4, chunk: 1 << 20, io_uring: false, ..BounceSettings::default() };
        let bounce = Bounce::new(Arc::clone(&gpu), &settings);
        let len = 64 * BLOCK + 1000;
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
        let file = TestFile::new(&data);
        let handle = &file.handle;
        let (one, other) = (gpu.malloc(33 * BLOCK).unwrap(), gpu.malloc(16 * BLOCK).unwrap());
        // SAFETY: the allocations above, alive until `gpu` goes.
        let one_span = unsafe { DeviceSpan::within(one, 33 * BLOCK, one + 33 * BLOCK) };
        // SAFETY: as above.
        let other_span = unsafe { DeviceSpan::new(other, 16 * BLOCK) };
        let block = |i: usize| (i * 37 + 5) % 64; // a file block for each request
        let mut reqs: Vec<IoRequest<'_>> = (0..32)
            .map(|i| {
                IoRequest::new(Direction::Read, handle, one_span.part(i * BLOCK, BLOCK), 0, (block(i) * BLOCK) as u64)
            })
            .collect();
        reqs.extend((0..8).map(|i| {
            let memory = other_span.part(2 * i * BLOCK, BLOCK);
            IoRequest::new(Direction::Read, handle, memory, 0, (block(40 + i) * BLOCK) as u64)
        }));
        // The last block of the file and its 1000 bytes past the blocks: 1000 bytes moved.
        reqs.push(IoRequest::new(Direction::Read, handle, one_span.part(32 * BLOCK, BLOCK), 0, (64 * BLOCK) as u64));
        bounce.wait_warm();
        let refs: Vec<&IoRequest<'_>> = reqs.iter().collect();
        let mut expected = vec![Ok(BLOCK); 40];
        expected.push(Ok(1000));
        // Warm (buffered pieces), then cold (each part whole with O_DIRECT, where the file
        // system allows it: each lies in its slot congruent to its file offset).
        for cold in [false, true] {
            if cold {
                file.file.sync_all().unwrap();
                // SAFETY: a plain advice call on an open descriptor.
                assert_eq!(unsafe { libc::posix_fadvise(file.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) }, 0);
            }
            gpu.memset(one, 0, 33 * BLOCK).unwrap();
            gpu.memset(other, 0, 16 * BLOCK).unwrap();
            let (copies, chunks) = (gpu.faults().copy_count(), bounce.inner.profile.chunks.load(Ordering::Relaxed));
            assert_eq!(bounce.transfer_many(&refs), expected, "cold {cold}");
            // 2.6 MiB alone on the device: stripes of 1 MiB (the chunk), 16 blocks each. The
            // first two hold 16 of `one`'s blocks each, a copy apiece; the third 8 blocks of
            // `other` (8 copies) and the short one (1 copy).
            assert_eq!(gpu.faults().copy_count() - copies, 2 + 8 + 1, "cold {cold}");
            let parts = bounce.inner.profile.chunks.load(Ordering::Relaxed) - chunks;
            assert_eq!(parts, 41, "a part per request");
            let mut back = vec![0u8; 33 * BLOCK];
            gpu.read_device(one, &mut back).unwrap();
            for i in 0..32 {
                assert!(back[i * BLOCK..][..BLOCK] == data[block(i) * BLOCK..][..BLOCK], "cold {cold} block {i}");
            }
            assert!(back[32 * BLOCK..][..1000] == data[64 * BLOCK..], "cold {cold}");
            let mut back = vec![0u8; 16 * BLOCK];
            gpu.read_device(other, &mut back).unwrap();
            for i in 0..8 {
                let j = 40 + i;
                assert!(back[2 * i * BLOCK..][..BLOCK] == data[block(j) * BLOCK..][..BLOCK], "cold {cold} block {j}");
            }
        }
        let direct = bounce.inner.reads.direct_chunks.load(Ordering::Relaxed);
        assert!(direct == 0 || direct >= 40, "cold parts read whole with O_DIRECT where it works: {direct}");
    }

    #[test]
    fn busy_devices_share_the_staging_of_one() {
        assert_eq!(
            [1, 2, 3, 4, 8].map(|busy| shared_chunk(4 << 20, busy)),
            [4 << 20, 2 << 20, 1400832, 1 << 20, 1 << 20]
        );
        assert_eq!(shared_chunk(4 << 20, 0), 4 << 20);
        assert_eq!(shared_chunk(64 << 10, 2), 64 << 10, "never below a small configured chunk");
        let (a, b, busy) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
        {
            let (_x, _y) = (Busy::new(&a, &busy), Busy::new(&a, &busy));
            assert_eq!(busy.load(Ordering::Relaxed), 1, "one device, two requests");
            let _z = Busy::new(&b, &busy);
            assert_eq!(busy.load(Ordering::Relaxed), 2);
        }
        assert_eq!((a.load(Ordering::Relaxed), busy.load(Ordering::Relaxed)), (0, 0));
    }

    #[test]
    fn chunks_tile_the_request_at_chunk_multiples_of_the_file_offset() {
        for (file_offset, len) in [(0u64, 10usize), (1, 5), (1, 300), (99, 100), (100, 250), (5, 95), (0, 300)] {
            let file = FileSide::for_tests();
            // SAFETY: the span is only cut into chunks here, never copied to or from.
            let memory = unsafe { DeviceSpan::new(0x1000, len) };
            let req = Request { file, durable: false, device: 0, memory, file_offset, chunk: 100 };
            let mut at = 0;
            for i in 0..req.chunk_count() {
                let (skip, n) = req.chunk_at(i);
                assert_eq!(skip, at, "{file_offset} {len} chunk {i}");
                assert!(n > 0 && n <= 100);
                if i + 1 < req.chunk_count() {
                    assert_eq!((file_offset + (skip + n) as u64) % 100, 0, "chunks end at multiples");
                }
                at += n;
            }
            assert_eq!(at, len, "{file_offset} {len}");
        }
    }
}
