//! `hipfile bench`: timed reads and writes between a file and GPU memory through the driver,
//! on the best platform the machine has, each mode verified afterwards (outside the timing).

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use hipfile::boundary::io::{pread, transfer_loop};
use hipfile::{
    Capability, Declined, DeviceMemory, Direction, DriverGuard, GpuRuntime, RegisteredBuffer, RegisteredFile,
    SystemPlatform, max_rw_count,
};

use crate::args::{BenchArgs, Mode};
use crate::progress::{Step, progress_line};
use crate::sched;

mod calls;

use calls::{probe_other_stream, stream_times, thread_calls};

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

/// The benchmark `args` asks for. `on` is told the report as it grows: once set up (the
/// platform, the backends and the p2p verdict, no outcome yet), then after each mode, so that
/// a table can say what it runs on before it measures, and each mode as it ends.
pub(crate) fn run(args: &BenchArgs, on: &mut dyn FnMut(&Report)) -> Result<Report, String> {
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
    let mut report = Report {
        platform: driver.platform().description().to_owned(),
        backends: driver.backend_names(),
        capabilities: driver.capabilities().map_err(|e| e.to_string())?,
        p2p_for_file: Vec::new(),
        file: path.clone(),
        size: args.size,
        outcomes: Vec::new(),
    };
    let out_path = PathBuf::from(format!("{}.out", path.display()));
    let result =
        ensure_data_file(&path, args.size).and_then(|()| measure_all(args, &guard, &gpu, &out_path, &mut report, on));
    let _ = std::fs::remove_file(&out_path);
    if temp {
        let _ = std::fs::remove_file(&path);
    }
    result.map(|()| report)
}

/// Every mode of `args`, on `report.file` (reads) and `out_path` (writes), each outcome pushed
/// to `report` (see [`run`] for `on`); and whether the direct backends would serve the file.
fn measure_all(
    args: &BenchArgs,
    guard: &DriverGuard<Sys>,
    gpu: &Arc<dyn GpuRuntime>,
    out_path: &Path,
    report: &mut Report,
    on: &mut dyn FnMut(&Report),
) -> Result<(), String> {
    let (size, path) = (args.size as usize, report.file.clone());
    let data = open(&path, false, args.direct)?;
    let out = open(out_path, true, args.direct)?;
    let current = gpu.current_device().map_err(|e| format!("current device: {e}"))?;
    let devices = if args.devices.is_empty() { vec![current] } else { args.devices.clone() };
    let mut buffers = Vec::new();
    for &device in &devices {
        let memory = device_memory(gpu, device, size)?;
        let _step = Step::new(format!("copying the file into GPU {device}'s memory"));
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
    report.p2p_for_file = guard.driver().p2p_verdict(input.id()).map_err(|e| e.to_string())?;
    on(report);
    for &mode in &args.modes {
        let (file, target) = if mode.is_read() { (&input, &data) } else { (&output, &out) };
        let before = guard.driver().backend_counters();
        let mut outcome = measure(args, mode, file, target, &**gpu, &targets)?;
        if args.profile {
            outcome.profile = growth(&before, &guard.driver().backend_counters());
        }
        report.outcomes.push(outcome);
        on(report);
    }
    Ok(())
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
    let _step = Step::new(format!("making the data file ({size} bytes)"));
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
        // The clock runs from the first thread's first call to the last thread's last, once
        // every thread is up: spawning is not part of the transfer (an application has its
        // threads already). Each thread reads the clock itself, so a late main thread does
        // not shorten the measured time.
        let ready = Barrier::new(calls.len() * targets.len());
        let before = sched::Snapshot::now();
        let side = if mode.is_read() { Direction::Read } else { Direction::Write };
        let timed = std::thread::scope(|s| {
            s.spawn(|| progress_line(&done, &stop, total, &label, side));
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
    let _step = Step::new("checking GPU memory against the file".to_owned());
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
