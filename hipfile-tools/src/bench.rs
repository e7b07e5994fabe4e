//! `hipfile bench`: timed reads and writes between a file and GPU memory through the driver,
//! on the best platform the machine has, each mode verified afterwards (outside the timing).

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use hipfile::boundary::io::{pread, transfer_loop};
use hipfile::boundary::sync::lock;
use hipfile::{
    BatchEntry, Capability, Declined, DeviceMemory, Direction, Driver, DriverGuard, GpuRuntime, RegisteredBuffer,
    RegisteredFile, Stream, SystemPlatform, max_rw_count,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::args::{BenchArgs, Mode};
use crate::sched;

/// One mode's measurement.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    pub(crate) mode: Mode,
    /// The GPUs the mode ran on at once.
    pub(crate) devices: Vec<i32>,
    /// Application threads per GPU.
    pub(crate) threads: usize,
    pub(crate) io_size: u64,
    pub(crate) bytes_per_run: u64,
    pub(crate) runs: usize,
    pub(crate) cold: bool,
    pub(crate) best_gbps: f64,
    pub(crate) mean_gbps: f64,
    /// Each run's GB/s, in order (the first is the first call of the mode).
    pub(crate) run_gbps: Vec<f64>,
    /// Each run's time its threads (the callers and the library's) waited runnable for a CPU,
    /// in ms, and how often they were switched out so; see [`crate::sched`].
    pub(crate) run_cpu_wait_ms: Vec<f64>,
    pub(crate) run_preempted: Vec<u64>,
    /// The process's CPU time (user and system, every thread's) over the runs, per GB moved.
    pub(crate) cpu_s_per_gb: f64,
    pub(crate) verified: Option<bool>,
    /// Per backend, how its counters grew over this mode's runs (with `--profile`).
    pub(crate) profile: Vec<(&'static str, Vec<(&'static str, u64)>)>,
    /// With `--stream` or `--probe`: what queueing cost and what other streams saw.
    pub(crate) stream: Option<StreamTimes>,
}

/// Times of stream-ordered runs (`--stream`, `--probe`), in microseconds: over every call of
/// every run.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamTimes {
    /// Stream-ordered calls timed (0 without `--stream`).
    pub(crate) queued_calls: usize,
    /// The slowest first call of a stream's run (each run queues on a stream afresh).
    pub(crate) enqueue_first_worst_us: f64,
    /// Time each later `hipFileReadAsync`/`WriteAsync` call took to return: median and worst.
    pub(crate) enqueue_median_us: f64,
    pub(crate) enqueue_worst_us: f64,
    /// Meanwhile, a host function queued on an idle stream every millisecond: how long each
    /// waited to run (what the library's own stream work costs other streams of the context).
    pub(crate) other_stream_median_us: f64,
    pub(crate) other_stream_worst_us: f64,
    pub(crate) other_stream_probes: usize,
}

/// Median and largest of `samples` (microseconds), 0 for none.
fn median_and_worst(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (samples.get(samples.len() / 2).copied().unwrap_or(0.0), samples.last().copied().unwrap_or(0.0))
}

/// What the benchmark ran on and what it measured.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) platform: String,
    pub(crate) backends: Vec<&'static str>,
    /// Every backend the platform knows of, available or not and why not.
    pub(crate) capabilities: Vec<Capability>,
    /// Whether each open p2p backend would serve the benchmark's file, and why not.
    pub(crate) p2p_for_file: Verdicts,
    pub(crate) file: PathBuf,
    pub(crate) size: u64,
    pub(crate) outcomes: Vec<Outcome>,
}

type Sys = SystemPlatform;

/// The p2p backends' verdicts on a file.
pub(crate) type Verdicts = Vec<(&'static str, Result<(), Declined>)>;

/// Copies between host memory and the device in pieces of this size (setup and checks).
const PIECE: usize = 64 << 20;

pub(crate) fn run(args: &BenchArgs) -> Result<Report, String> {
    // The mock GPU gets as many devices as --devices names.
    let mock_devices = args.devices.iter().map(|&d| d + 1).max().unwrap_or(1);
    let (platform, why_mock) = crate::open::platform(args.backend.name.as_deref(), mock_devices);
    if let Some(why) = why_mock {
        eprintln!("hipfile: no GPU runtime found; using the mock GPU (HIPFILE_LOG=debug says why)");
        tracing::debug!(target: "hipfile", "{why}");
    }
    let driver = crate::open::driver(platform, args.backend.name.clone());
    let guard = DriverGuard::open(Arc::clone(&driver)).map_err(|e| format!("cannot open the driver: {e}"))?;
    let gpu = Arc::clone(driver.gpu());

    let temp = args.file.is_none();
    let path = args
        .file
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("hipfile-bench-{}.dat", std::process::id())));
    ensure_data_file(&path, args.size)?;
    let out_path = PathBuf::from(format!("{}.out", path.display()));
    let result = measure_all(args, &guard, &gpu, &path, &out_path);
    let _ = std::fs::remove_file(&out_path);
    if temp {
        let _ = std::fs::remove_file(&path);
    }
    let (outcomes, p2p_for_file) = result?;
    Ok(Report {
        platform: driver.platform().description().to_owned(),
        backends: driver.backend_names(),
        capabilities: driver.capabilities().map_err(|e| e.to_string())?,
        p2p_for_file,
        file: path,
        size: args.size,
        outcomes,
    })
}

/// Every mode of `args`, on `path` (reads) and `out_path` (writes); and whether the direct
/// backends would serve `path`.
fn measure_all(
    args: &BenchArgs,
    guard: &DriverGuard<Sys>,
    gpu: &Arc<dyn GpuRuntime>,
    path: &Path,
    out_path: &Path,
) -> Result<(Vec<Outcome>, Verdicts), String> {
    let size = args.size as usize;
    let data = open(path, false, args.direct)?;
    let out = open(out_path, true, args.direct)?;
    let current = gpu.current_device().map_err(|e| format!("current device: {e}"))?;
    let devices = if args.devices.is_empty() { vec![current] } else { args.devices.clone() };
    let mut buffers = Vec::new();
    for &device in &devices {
        let memory = device_memory(gpu, device, size)?;
        fill_device(&memory, &data)?;
        buffers.push((device, memory));
    }
    // Registrations are dropped before the memory and files they name (reverse order).
    // Registered, so that the calls below use the registered-buffer path.
    let registered = buffers
        .iter()
        .map(|(_, memory)| guard.register_memory(memory))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("buffer registration: {e}"))?;
    let targets: Vec<Target<'_>> = buffers.iter().zip(&registered).map(|((d, memory), r)| (*d, memory, r)).collect();
    let input = guard.register_file(&data).map_err(|e| format!("registering {}: {e}", path.display()))?;
    let output = guard.register_file(&out).map_err(|e| format!("registering {}: {e}", out_path.display()))?;
    let verdicts = guard.driver().p2p_verdict(input.id()).map_err(|e| e.to_string())?;
    let mut outcomes = Vec::new();
    for &mode in &args.modes {
        let (file, target) = if mode.is_read() { (&input, &data) } else { (&output, &out) };
        let before = guard.driver().backend_counters();
        let mut outcome = measure(args, mode, file, target, &**gpu, &targets)?;
        if args.profile {
            outcome.profile = growth(&before, &guard.driver().backend_counters());
        }
        outcomes.push(outcome);
    }
    Ok((outcomes, verdicts))
}

/// How each backend's counters grew from `before` to `after`.
fn growth(
    before: &[(&'static str, Vec<(&'static str, u64)>)],
    after: &[(&'static str, Vec<(&'static str, u64)>)],
) -> Vec<(&'static str, Vec<(&'static str, u64)>)> {
    after
        .iter()
        .zip(before)
        .map(|((name, now), (_, then))| {
            (*name, now.iter().zip(then).map(|((key, n), (_, t))| (*key, n.saturating_sub(*t))).collect())
        })
        .collect()
}

/// A device of the run, its memory, and that memory's registration.
type Target<'a> = (i32, &'a DeviceMemory, &'a RegisteredBuffer<'a, Sys>);

/// `len` bytes of device memory on `device` for the benchmark.
pub(crate) fn device_memory(gpu: &Arc<dyn GpuRuntime>, device: i32, len: usize) -> Result<DeviceMemory, String> {
    DeviceMemory::alloc(gpu, device, len).map_err(|e| format!("cannot allocate {len} bytes on device {device}: {e}"))
}

fn open(path: &Path, write: bool, direct: bool) -> Result<File, String> {
    let mut options = OpenOptions::new();
    options.read(true);
    if write {
        options.write(true).create(true).truncate(false);
    }
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    options.open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// Makes `path` a file of `size` bytes, keeping one that already has that size (so a peer
/// benchmark and this one read the same file).
fn ensure_data_file(path: &Path, size: u64) -> Result<(), String> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == size) {
        return Ok(());
    }
    let mut file = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    for (i, at) in (0..size as usize).step_by(PIECE).enumerate() {
        let block = hipfile::mock::pattern(PIECE.min(size as usize - at), i as u64);
        file.write_all(&block).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    file.sync_all().map_err(|e| format!("cannot sync {}: {e}", path.display()))
}

/// Host-side read of a file range (for setup and verification, never timed).
fn host_read(file: &File, offset: u64, len: usize) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; len];
    let done = transfer_loop(len, true, |done, rest| {
        pread(file.as_raw_fd(), &mut buf[done..done + rest], offset + done as u64)
    })
    .map_err(|e| format!("host read: {e}"))?;
    buf.truncate(done);
    Ok(buf)
}

/// A buffered descriptor of the same file, for host-side reads into unaligned memory (the
/// benchmark's own may be `O_DIRECT`).
fn host_view(file: &File) -> Result<File, String> {
    open(Path::new(&format!("/proc/self/fd/{}", file.as_raw_fd())), false, false)
}

/// Fills `memory` with the start of `file`.
fn fill_device(memory: &DeviceMemory, file: &File) -> Result<(), String> {
    let reader = host_view(file)?;
    for at in (0..memory.len()).step_by(PIECE) {
        let host = host_read(&reader, at as u64, PIECE.min(memory.len() - at))?;
        memory.copy_from_host(at, &host).map_err(|e| format!("fill: {e}"))?;
    }
    Ok(())
}

/// Whether `len` bytes of `memory` at `at` equal the file (read through `reader`) at `offset`.
fn same(memory: &DeviceMemory, at: usize, len: usize, reader: &File, offset: u64) -> Result<bool, String> {
    for piece in (0..len).step_by(PIECE) {
        let n = PIECE.min(len - piece);
        let mut host = vec![0u8; n];
        memory.copy_to_host(at + piece, &mut host).map_err(|e| format!("verify: {e}"))?;
        if host_read(reader, offset + piece as u64, n)? != host {
            return Ok(false);
        }
    }
    Ok(true)
}

fn drop_caches() -> Result<(), String> {
    // SAFETY: no arguments.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .map_err(|e| format!("--cold needs root to drop the page cache: {e}"))
}

/// One call's arguments: file offset, buffer offset, length.
type Call = (u64, usize, usize);

/// The calls of one run, dealt to threads: sequential ranges split into contiguous parts, or
/// random `io`-aligned offsets.
fn plan(args: &BenchArgs, mode: Mode, size: usize) -> (usize, Vec<Vec<Call>>) {
    let threads = args.threads;
    let mut per_thread = vec![Vec::new(); threads];
    if mode.is_random() {
        let io = args.io_size.unwrap_or(1 << 20) as usize;
        let slots = (size / io).max(1);
        // Distinct offsets while there are enough, so each call's data can be checked.
        let mut used = std::collections::HashSet::new();
        let mut x: u64 = 11;
        for i in 0..args.count {
            let offset = loop {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let offset = (x % slots as u64) * io as u64;
                if used.insert(offset) || used.len() >= slots {
                    break offset;
                }
            };
            per_thread[i % threads].push((offset, (i % slots) * io, io));
        }
        return (io, per_thread);
    }
    let io = (args.io_size.unwrap_or(size as u64) as usize).min(max_rw_count());
    let part = size.div_ceil(threads).next_multiple_of(4096);
    for (t, calls) in per_thread.iter_mut().enumerate() {
        let (start, end) = ((t * part).min(size), ((t + 1) * part).min(size));
        let mut at = start;
        while at < end {
            let len = io.min(end - at);
            calls.push((at as u64, at, len));
            at += len;
        }
    }
    (io, per_thread)
}

/// One mode, `--runs` times, on every target (a device and its buffer) at once: each target
/// gets the same calls from its own `--threads` threads, which make its device current.
fn measure(
    args: &BenchArgs,
    mode: Mode,
    file: &RegisteredFile<'_, Sys>,
    target: &File,
    gpu: &dyn GpuRuntime,
    targets: &[Target<'_>],
) -> Result<Outcome, String> {
    let size = targets[0].1.len();
    let (io, calls) = plan(args, mode, size);
    let total: u64 = calls.iter().flatten().map(|c| c.2 as u64).sum::<u64>() * targets.len() as u64;
    let cold = args.cold && mode.is_read();
    let (mut rates, mut scheduled) = (Vec::new(), Vec::new());
    let (enqueued, probes) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
    let cpu_before = cpu_seconds();
    for run in 0..args.runs {
        if cold {
            drop_caches()?;
        }
        if !mode.is_read() && !mode.is_random() {
            target.set_len(0).map_err(|e| format!("truncate: {e}"))?;
        }
        let (done, stop) = (AtomicU64::new(0), AtomicBool::new(false));
        let label = format!("{} run {}/{}", mode.name(), run + 1, args.runs);
        // SAFETY: isatty has no preconditions.
        let terminal = unsafe { libc::isatty(2) } == 1;
        // The clock runs from the first thread's first call to the last thread's last, once
        // every thread is up: spawning is not part of the transfer (an application has its
        // threads already). Each thread reads the clock itself, so a late main thread does
        // not shorten the measured time.
        let ready = Barrier::new(calls.len() * targets.len());
        let before = sched::Snapshot::now();
        let timed = std::thread::scope(|s| {
            if terminal {
                s.spawn(|| progress_line(&done, &stop, total, &label));
            }
            if args.stream || args.probe {
                s.spawn(|| probe_other_stream(gpu, &stop, &probes));
            }
            let workers: Vec<_> = targets
                .iter()
                .flat_map(|t| calls.iter().map(move |mine| (t, mine)))
                .map(|(&(device, _, buffer), mine)| {
                    let (done, ready, enqueued) = (&done, &ready, &enqueued);
                    s.spawn(move || thread_calls(args, file, mode, (device, buffer), mine, gpu, ready, done, enqueued))
                })
                .collect();
            // Scoped threads not joined here are joined when the scope ends.
            let spans: Result<Vec<_>, String> =
                workers.into_iter().map(|w| w.join().unwrap_or(Err("a worker panicked".into()))).collect();
            stop.store(true, Ordering::Relaxed);
            spans
        })?;
        let (first, last) = (timed.iter().map(|t| t.0).min(), timed.iter().map(|t| t.1).max());
        rates.push(total as f64 / (last.expect("a thread") - first.expect("a thread")).as_secs_f64() / 1e9);
        scheduled.push(before.since(timed.iter().map(|t| t.2).sum()));
    }
    let cpu = cpu_seconds() - cpu_before;
    let verified = if args.verify { verify(targets, &calls, target)? } else { None };
    let (run_cpu_wait_ms, run_preempted) = scheduled.into_iter().unzip();
    Ok(Outcome {
        mode,
        devices: targets.iter().map(|t| t.0).collect(),
        threads: args.threads,
        io_size: io as u64,
        bytes_per_run: total,
        runs: args.runs,
        cold,
        best_gbps: rates.iter().copied().fold(0.0, f64::max),
        mean_gbps: rates.iter().sum::<f64>() / rates.len() as f64,
        run_gbps: rates,
        run_cpu_wait_ms,
        run_preempted,
        cpu_s_per_gb: cpu / (total as f64 * args.runs as f64 / 1e9),
        verified,
        profile: Vec::new(),
        stream: (args.stream || args.probe)
            .then(|| stream_times(probes.into_inner().unwrap_or_default(), enqueued.into_inner().unwrap_or_default())),
    })
}

/// The CPU time this process has used so far, user and system, every thread's, in seconds.
fn cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Whether each call of the run that no other call shares a file range or buffer slot with left
/// the same bytes in device memory as in the file (`None` when there is none).
fn verify(targets: &[Target<'_>], calls: &[Vec<Call>], target: &File) -> Result<Option<bool>, String> {
    // Calls that share a file range or a buffer slot with another (random runs longer than
    // the file has slots) race with it: only the others have a defined outcome to check.
    // Writes from several devices go to the same file ranges: those are checked against
    // the file whichever device wrote last, which is any of them (they hold the same bytes).
    let all: Vec<Call> = calls.iter().flatten().copied().collect();
    let unique = |c: &Call| all.iter().filter(|o| o.0 == c.0 || o.1 == c.1).count() == 1;
    let reader = host_view(target)?;
    let mut checked = 0;
    let mut ok = true;
    for &(_, memory, _) in targets {
        for &(offset, at, len) in all.iter().filter(|c| unique(c)) {
            ok &= same(memory, at, len, &reader, offset)?;
            checked += 1;
        }
    }
    Ok((checked > 0).then_some(ok))
}

/// One thread's calls of a run into or from `buffer` on `device`, timed from when every thread
/// is ready (`ready`): a batch, stream-ordered calls, or one synchronous call after another;
/// `done` counts the bytes moved.
#[allow(clippy::too_many_arguments)]
fn thread_calls(
    args: &BenchArgs,
    file: &RegisteredFile<'_, Sys>,
    mode: Mode,
    (device, buffer): (i32, &RegisteredBuffer<'_, Sys>),
    mine: &[Call],
    gpu: &dyn GpuRuntime,
    ready: &Barrier,
    done: &AtomicU64,
    enqueued: &Mutex<Vec<Vec<f64>>>,
) -> Result<(Instant, Instant, u64), String> {
    let made_current = gpu.set_device(device).map_err(|e| format!("device {device}: {e}"));
    // A stream of this thread's, registered (which pins its gate word) before the clock
    // starts, as an application sets its streams up.
    let stream = match (args.stream, &made_current) {
        (true, Ok(())) => Some(StreamOfMine::new(file.driver(), gpu)),
        _ => None,
    }
    .transpose();
    ready.wait();
    made_current?;
    let stream = stream?;
    // The thread's CPU wait so far is read before its clock starts (a file read, not timed).
    let waited = sched::my_wait_ns();
    let start = Instant::now();
    if args.batch > 0 {
        batched(file, mode, buffer, mine, args.batch, done)?;
    } else if let Some(stream) = &stream {
        let took = streamed(file, mode, buffer, mine, gpu, stream.0, done)?;
        lock(enqueued).push(took);
    }
    for &(offset, at, len) in mine.iter().filter(|_| args.batch == 0 && !args.stream) {
        let n = if mode.is_read() {
            file.read(buffer, len, offset, at as u64)
        } else {
            file.write(buffer, len, offset, at as u64)
        }
        .map_err(|e| format!("{} of {len} bytes at {offset}: {e}", mode.name()))?;
        if n != len {
            return Err(format!("{} of {len} bytes at {offset} moved {n}", mode.name()));
        }
        done.fetch_add(n as u64, Ordering::Relaxed);
    }
    let end = Instant::now();
    Ok((start, end, sched::my_wait_ns().zip(waited).map_or(0, |(now, then)| now.saturating_sub(then))))
}

/// What the stream-ordered runs measured: each thread's enqueue times (µs, its first call
/// apart) and the other stream's probes.
fn stream_times(probes: Vec<f64>, enqueued: Vec<Vec<f64>>) -> StreamTimes {
    let other_stream_probes = probes.len();
    let queued_calls = enqueued.iter().map(Vec::len).sum();
    let first_calls = enqueued.iter().filter_map(|t| t.first().copied()).collect();
    let (_, enqueue_first_worst_us) = median_and_worst(first_calls);
    let later = enqueued.iter().flat_map(|t| t.iter().skip(1).copied()).collect();
    let (enqueue_median_us, enqueue_worst_us) = median_and_worst(later);
    let (other_stream_median_us, other_stream_worst_us) = median_and_worst(probes);
    StreamTimes {
        queued_calls,
        enqueue_first_worst_us,
        enqueue_median_us,
        enqueue_worst_us,
        other_stream_median_us,
        other_stream_worst_us,
        other_stream_probes,
    }
}

/// A stream created and registered with the driver (no FIXED flags) for one thread's runs;
/// deregistered and destroyed on drop.
struct StreamOfMine<'a>(Stream, &'a Driver<Sys>, &'a dyn GpuRuntime);

impl<'a> StreamOfMine<'a> {
    fn new(driver: &'a Driver<Sys>, gpu: &'a dyn GpuRuntime) -> Result<Self, String> {
        let stream = gpu.stream_create().map_err(|e| format!("stream: {e}"))?;
        let mine = StreamOfMine(stream, driver, gpu);
        driver.stream_register(stream, 0).map_err(|e| format!("stream register: {e}"))?;
        Ok(mine)
    }
}

impl Drop for StreamOfMine<'_> {
    fn drop(&mut self) {
        let _ = self.1.stream_deregister(self.0);
        let _ = self.2.stream_destroy(self.0);
    }
}

/// `calls` as stream-ordered operations on `stream`, then the stream synchronized and every
/// result checked; returns how long each call took to queue (µs).
fn streamed(
    file: &RegisteredFile<'_, Sys>,
    mode: Mode,
    buffer: &RegisteredBuffer<'_, Sys>,
    calls: &[Call],
    gpu: &dyn GpuRuntime,
    stream: Stream,
    done: &AtomicU64,
) -> Result<Vec<f64>, String> {
    let mut took = Vec::with_capacity(calls.len());
    let mut ios = Vec::with_capacity(calls.len());
    let queued = calls.iter().try_for_each(|&(offset, at, len)| {
        let t = Instant::now();
        let io = if mode.is_read() {
            file.read_async(buffer, len, offset, at as u64, stream)
        } else {
            file.write_async(buffer, len, offset, at as u64, stream)
        };
        took.push(t.elapsed().as_secs_f64() * 1e6);
        ios.push((io.map_err(|e| format!("{} of {len} bytes at {offset}: {e}", mode.name()))?, len, offset));
        Ok::<(), String>(())
    });
    let synchronized = gpu.stream_synchronize(stream).map_err(|e| format!("stream: {e}"));
    queued?;
    synchronized?;
    for (io, len, offset) in ios {
        match io.result() {
            Some(n) if n == len as i64 => done.fetch_add(len as u64, Ordering::Relaxed),
            other => return Err(format!("{} of {len} bytes at {offset}: {other:?}", mode.name())),
        };
    }
    Ok(took)
}

/// Until `stop`: every millisecond, a host function on a stream of its own, timed from being
/// queued to running (µs each, into `probes`).
fn probe_other_stream(gpu: &dyn GpuRuntime, stop: &AtomicBool, probes: &Mutex<Vec<f64>>) {
    let Ok(stream) = gpu.stream_create() else { return };
    while !stop.load(Ordering::Relaxed) {
        let (tx, rx) = std::sync::mpsc::channel();
        let queued = Instant::now();
        let ran = move || {
            let _ = tx.send(queued.elapsed());
        };
        if gpu.launch_host_func(stream, Box::new(ran)).is_err() {
            break;
        }
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(waited) => lock(probes).push(waited.as_secs_f64() * 1e6),
            Err(_) => break,
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = gpu.stream_synchronize(stream);
    let _ = gpu.stream_destroy(stream);
}

/// `calls` as batches of up to `size` entries (`hipFileBatchIO*`): each batch submitted whole
/// and waited for before the next.
fn batched(
    file: &RegisteredFile<'_, Sys>,
    mode: Mode,
    buffer: &RegisteredBuffer<'_, Sys>,
    calls: &[Call],
    size: usize,
    done: &AtomicU64,
) -> Result<(), String> {
    let batch = file.driver().batch_setup(size).map_err(|e| format!("batch setup: {e}"))?;
    let direction = if mode.is_read() { Direction::Read } else { Direction::Write };
    let result = calls.chunks(size).try_for_each(|group| {
        let entries: Vec<BatchEntry> = group
            .iter()
            .enumerate()
            .map(|(i, &(offset, at, len))| BatchEntry {
                direction,
                handle: file.id(),
                buffer_base: buffer.addr(),
                buffer_offset: at as i64,
                file_offset: offset as i64,
                size: len,
                cookie: i,
            })
            .collect();
        // SAFETY: every entry names the registered device memory `buffer`, no host memory.
        unsafe { file.driver().batch_submit(batch, &entries) }.map_err(|e| format!("batch submit: {e}"))?;
        let events = file.driver().batch_status(batch, entries.len(), entries.len(), None);
        let events = events.map_err(|e| format!("batch status: {e}"))?;
        for e in &events {
            match e.result {
                Ok(n) if n == entries[e.cookie].size => {
                    done.fetch_add(n as u64, Ordering::Relaxed);
                }
                ref other => return Err(format!("{} entry {}: {other:?}", mode.name(), e.cookie)),
            }
        }
        Ok(())
    });
    file.driver().batch_destroy(batch);
    result
}

/// A progress bar on stderr, when it is a terminal, while a run lasts more than a second,
/// until `stop`.
pub(crate) fn progress_line(done: &AtomicU64, stop: &AtomicBool, total: u64, label: &str) {
    let start = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        if start.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template = "{msg} [{bar:30}] {decimal_bytes}/{decimal_total_bytes} ({decimal_bytes_per_sec})";
            let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style.progress_chars("#>."));
            bar.set_message(label.to_owned());
            bar
        });
        bar.set_position(done.load(Ordering::Relaxed));
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_plans_cover_the_file_once() {
        let args = BenchArgs { threads: 3, io_size: Some(1 << 20), ..BenchArgs::default() };
        let (io, calls) = plan(&args, Mode::Read, 10 << 20);
        assert_eq!(io, 1 << 20);
        let mut all: Vec<_> = calls.into_iter().flatten().collect();
        all.sort();
        let mut at = 0;
        for (offset, buf, len) in all {
            assert_eq!((offset as usize, buf), (at, at));
            at += len;
        }
        assert_eq!(at, 10 << 20);
    }

    #[test]
    fn random_plans_stay_aligned_inside_the_file() {
        let args = BenchArgs { threads: 4, count: 100, ..BenchArgs::default() };
        let (io, calls) = plan(&args, Mode::RandRead, 64 << 20);
        assert_eq!(calls.iter().map(Vec::len).sum::<usize>(), 100);
        for (offset, buf, len) in calls.into_iter().flatten() {
            assert_eq!((offset % io as u64, len), (0, io));
            assert!(offset as usize + len <= 64 << 20 && buf + len <= 64 << 20);
        }
    }
}
