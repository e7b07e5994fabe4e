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
mod tests;
