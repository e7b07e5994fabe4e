//! How one thread of `hipfile bench` issues its calls: one synchronous call after another, as
//! stream-ordered operations on a stream of its own, or as batches; and what the stream-ordered
//! runs cost other streams.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use hipfile::boundary::sync::lock;
use hipfile::{BatchEntry, Direction, Driver, GpuRuntime, RegisteredBuffer, RegisteredFile, Stream};

use super::{Call, StreamTimes, Sys};
use crate::args::{BenchArgs, Mode};
use crate::sched;

/// Median and largest of `samples` (microseconds), 0 for none.
fn median_and_worst(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (samples.get(samples.len() / 2).copied().unwrap_or(0.0), samples.last().copied().unwrap_or(0.0))
}

/// One thread's calls of a run into or from `buffer` on `device`, timed from when every thread
/// is ready (`ready`): a batch, stream-ordered calls, or one synchronous call after another;
/// `done` counts the bytes moved.
#[allow(clippy::too_many_arguments)]
pub(super) fn thread_calls(
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
pub(super) fn stream_times(probes: Vec<f64>, enqueued: Vec<Vec<f64>>) -> StreamTimes {
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
pub(super) fn probe_other_stream(gpu: &dyn GpuRuntime, stop: &AtomicBool, probes: &Mutex<Vec<f64>>) {
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
