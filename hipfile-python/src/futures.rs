//! Futures (`pread`/`pwrite`) and batches: requests of a burst gathered by one thread and run
//! together through the driver's batches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hipfile::boundary::sync::lock;
use hipfile::{BatchEntry, HandleId, OpError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::common::*;

/// A batch entry for `size` bytes at `buffer_offset` of the buffer at `addr` (its callers
/// have checked the range against the buffer's extent, [`fitted`]).
pub(crate) fn batch_entry(
    write: bool,
    handle: u64,
    addr: usize,
    size: usize,
    file_offset: i64,
    buffer_offset: i64,
    cookie: usize,
) -> BatchEntry {
    BatchEntry {
        direction: direction(write),
        handle: HandleId(handle),
        buffer_base: addr,
        buffer_offset,
        file_offset,
        size,
        cookie,
    }
}

/// Where a future's result arrives.
pub(crate) struct FutureState {
    pub(crate) result: Mutex<Option<hipfile::Result<usize>>>,
    pub(crate) ready: Condvar,
    /// Still in the coalescer's queue (not yet part of a round).
    pub(crate) queued: AtomicBool,
}

impl FutureState {
    /// A request's state: ended with `result`, or (`None`) queued.
    fn new(result: Option<hipfile::Result<usize>>) -> Slot {
        let queued = AtomicBool::new(result.is_none());
        Arc::new(FutureState { result: Mutex::new(result), ready: Condvar::new(), queued })
    }
}

pub(crate) type Slot = Arc<FutureState>;

/// A future's request, waiting for the coalescer.
pub(crate) struct Pending {
    pub(crate) entry: BatchEntry,
    pub(crate) slot: Slot,
    /// The buffer object, held until the request has ended whatever becomes of its future.
    pub(crate) _keep: Py<PyAny>,
}

/// Futures go to the driver together: one thread gathers the requests of a burst (`pread` after
/// `pread` from a loop) and runs them as one batch (up to the batch limit), where the bounce path
/// pipelines them across its workers (`Backend::transfer_many`). A round starts once the queue
/// has not grown for [`Coalescer::GAP`], has reached the batch limit, has waited
/// [`Coalescer::LINGER`], or someone waits for one of its requests (`get`, `done`, `await`):
/// a future waited for at once starts at once. While a round runs, the next one fills.
pub(crate) struct Coalescer {
    pub(crate) queue: Mutex<Queue>,
    pub(crate) ready: Condvar,
}

pub(crate) struct Queue {
    pub(crate) pending: Vec<Pending>,
    /// The process whose thread serves the queue (a forked child has none of its parent's).
    pub(crate) pid: u32,
    /// Someone waits for a queued request: start the round now.
    pub(crate) flush: bool,
}

pub(crate) fn coalescer() -> &'static Coalescer {
    static COALESCER: OnceLock<Coalescer> = OnceLock::new();
    COALESCER.get_or_init(|| Coalescer {
        queue: Mutex::new(Queue { pending: Vec::new(), pid: 0, flush: false }),
        ready: Condvar::new(),
    })
}

impl Coalescer {
    /// How long a quiet queue waits for the next request of a burst. One `pread` costs
    /// 1-4 µs of Python; the gap leaves room for a collector or a scheduler's hiccup.
    const GAP: Duration = Duration::from_micros(50);
    /// The longest a request waits for others.
    const LINGER: Duration = Duration::from_millis(1);

    /// Queues a request; starts the thread in this process if it has none.
    fn push(&'static self, entry: BatchEntry, slot: Slot, keep: Py<PyAny>) {
        let mut queue = lock(&self.queue);
        queue.pending.push(Pending { entry, slot, _keep: keep });
        let pid = std::process::id();
        if queue.pid != pid {
            queue.pid = pid;
            let started = std::thread::Builder::new().name("hipfile-py-futures".into()).spawn(move || self.run());
            if started.is_err() {
                queue.pid = 0;
                let pending = std::mem::take(&mut queue.pending);
                drop(queue);
                for p in &pending {
                    finish(&p.slot, Err(OpError::InternalError.into()));
                }
                return;
            }
        }
        // The first request of a round wakes the thread; the others it finds when it looks.
        if queue.pending.len() == 1 {
            self.ready.notify_one();
        }
    }

    /// Someone waits for `slot`: if it is still queued, its round starts now.
    fn hurry(&self, slot: &FutureState) {
        if slot.queued.load(Ordering::Acquire) {
            lock(&self.queue).flush = true;
            self.ready.notify_one();
        }
    }

    fn run(&self) {
        loop {
            let round: Vec<Pending> = {
                let mut queue = lock(&self.queue);
                while queue.pending.is_empty() {
                    queue = self.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
                }
                // The batch limit of the driver as it is now (a reopened driver may have another).
                let limit = (driver().properties().max_batch_io_count as usize).clamp(1, hipfile::MAX_BATCH_ENTRIES);
                let since = Instant::now();
                while !queue.flush && queue.pending.len() < limit && since.elapsed() < Self::LINGER {
                    let before = queue.pending.len();
                    queue = self.ready.wait_timeout(queue, Self::GAP).unwrap_or_else(|p| p.into_inner()).0;
                    if queue.pending.len() == before {
                        break;
                    }
                }
                queue.flush = false;
                let take = queue.pending.len().min(limit);
                let round: Vec<Pending> = queue.pending.drain(..take).collect();
                round.iter().for_each(|p| p.slot.queued.store(false, Ordering::Release));
                round
            };
            let entries: Vec<BatchEntry> =
                round.iter().enumerate().map(|(i, p)| BatchEntry { cookie: i, ..p.entry }).collect();
            let mut results: Vec<Option<hipfile::Result<usize>>> = vec![None; round.len()];
            // SAFETY: each entry lies inside its buffer object's memory (checked when it was
            // made), which `round` holds until after the batch has ended.
            if let Err(e) = unsafe { run_batch(&entries, &mut results, None) } {
                results.iter_mut().filter(|r| r.is_none()).for_each(|r| *r = Some(Err(e.clone())));
            }
            for (p, r) in round.iter().zip(results) {
                finish(&p.slot, r.unwrap_or(Err(OpError::InternalError.into())));
            }
            // The ended requests' buffer objects go without taking the GIL (a thread holding
            // it may be waiting for this one): PyO3 queues the references and drops them at
            // the module's next call.
            drop(round);
        }
    }
}

pub(crate) fn finish(slot: &FutureState, result: hipfile::Result<usize>) {
    *lock(&slot.result) = Some(result);
    slot.ready.notify_all();
}

/// One batch of `entries` (cookies their indices) run to its end, or until `wait` has passed
/// (what has not run then is cancelled): each entry's result in `results`.
///
/// # Safety
/// Each entry lies inside memory that stays valid until this returns (it waits for every
/// entry, or cancels it).
pub(crate) unsafe fn run_batch(
    entries: &[BatchEntry],
    results: &mut [Option<hipfile::Result<usize>>],
    wait: Option<Duration>,
) -> hipfile::Result<()> {
    let d = driver();
    let id = d.batch_setup(entries.len().max(1))?;
    // SAFETY: the caller's contract.
    let submitted = unsafe { d.batch_submit(id, entries) };
    let mut left = if submitted.is_ok() { entries.len() } else { 0 };
    while left > 0 {
        match d.batch_status(id, left, left, wait) {
            Ok(events) if events.is_empty() => break, // timed out: the rest are cancelled
            Ok(events) => {
                for e in events {
                    results[e.cookie] = Some(e.result);
                    left -= 1;
                }
            }
            Err(e) => {
                d.batch_destroy(id);
                return Err(e);
            }
        }
    }
    d.batch_destroy(id);
    submitted
}

/// A read or write running on the library's threads (`pread`/`pwrite`): `get()` waits for the
/// bytes moved (or raises its error); awaitable from asyncio. A transfer longer than one call
/// may move (`MAX_RW_COUNT`) runs as several requests, ended together.
#[pyclass(module = "hipfile", frozen)]
pub(crate) struct Future {
    pub(crate) parts: Vec<Slot>,
}

impl Future {
    /// Waits (the GIL released) for every part up to `deadline`; `None` when time ran out.
    fn wait(&self, py: Python<'_>, deadline: Option<Instant>) -> Option<Vec<hipfile::Result<usize>>> {
        let mut ended: Vec<hipfile::Result<usize>> = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            match lock(&part.result).clone() {
                Some(result) => ended.push(result),
                None => break,
            }
        }
        if ended.len() == self.parts.len() {
            return Some(ended); // without releasing the GIL
        }
        self.parts[ended.len()..].iter().for_each(|p| coalescer().hurry(p));
        let rest: Vec<Slot> = self.parts[ended.len()..].to_vec();
        let rest = py.detach(move || {
            rest.iter()
                .map(|state| {
                    let mut done = lock(&state.result);
                    while done.is_none() {
                        match deadline {
                            None => done = state.ready.wait(done).unwrap_or_else(|p| p.into_inner()),
                            Some(at) => {
                                let left = at.saturating_duration_since(Instant::now());
                                if left.is_zero() {
                                    return None;
                                }
                                done = state.ready.wait_timeout(done, left).unwrap_or_else(|p| p.into_inner()).0;
                            }
                        }
                    }
                    done.clone()
                })
                .collect::<Option<Vec<_>>>()
        })?;
        ended.extend(rest);
        Some(ended)
    }
}

#[pymethods]
impl Future {
    /// Whether the transfer has ended. Asking starts its round if it is still gathering.
    fn done(&self) -> bool {
        let mut done = true;
        for part in &self.parts {
            if lock(&part.result).is_none() {
                coalescer().hurry(part);
                done = false;
            }
        }
        done
    }

    /// Waits (without the GIL) for the transfer, up to `timeout` seconds (`None`: as long as it
    /// takes); the bytes moved, or its error. `TimeoutError` when the time ran out.
    #[pyo3(signature = (timeout = None))]
    fn get(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.max(0.0)));
        let Some(results) = self.wait(py, deadline) else {
            return Err(pyo3::exceptions::PyTimeoutError::new_err("the transfer has not ended yet"));
        };
        let mut total = 0;
        for result in results {
            total += result.map_err(|e| py_err(py, e))?;
        }
        Ok(total)
    }

    /// `await future`: `get()` on the running loop's default executor.
    fn __await__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let running = slf.py().import("asyncio")?.call_method0("get_running_loop")?;
        running.call_method1("run_in_executor", (slf.py().None(), slf.getattr("get")?))?.call_method0("__await__")
    }

    fn __repr__(&self) -> String {
        let state = if self.parts.iter().all(|p| lock(&p.result).is_some()) { "done" } else { "running" };
        format!("<hipfile.Future {state}>")
    }
}

/// The size of a request (`None`: what the buffer holds past `buf_offset`), checked to lie
/// inside a buffer of `extent` bytes.
pub(crate) fn fitted(extent: usize, size: Option<i64>, buf_offset: i64) -> PyResult<usize> {
    let size = size.unwrap_or_else(|| (extent as i64).saturating_sub(buf_offset).max(0));
    let (Ok(size), true) = (usize::try_from(size), buf_offset >= 0) else {
        return Err(PyValueError::new_err("size and offsets must not be negative"));
    };
    check_extent(extent, size, buf_offset)?;
    Ok(size)
}

/// [`transfer`] on the library's threads (through the coalescer, as part of a batch): a
/// [`Future`] at once, for `size` bytes (`None`: the rest of the buffer), in requests of at
/// most `MAX_RW_COUNT`. `keep` (the buffer object) stays alive until the transfer has ended.
#[pyfunction]
#[pyo3(signature = (write, handle, addr, extent, size, file_offset, buf_offset, keep))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn submit(
    py: Python<'_>,
    write: bool,
    handle: u64,
    addr: usize,
    extent: usize,
    size: Option<i64>,
    file_offset: i64,
    buf_offset: i64,
    keep: Py<PyAny>,
) -> PyResult<Future> {
    let size = fitted(extent, size, buf_offset)?;
    if size == 0 {
        return Ok(Future { parts: vec![FutureState::new(Some(Ok(0)))] });
    }
    let cap = hipfile::max_rw_count();
    let mut parts = Vec::with_capacity(size.div_ceil(cap).max(1));
    let mut done = 0;
    loop {
        let n = (size - done).min(cap);
        let (at, buf_at) = (file_offset.saturating_add(done as i64), buf_offset + done as i64);
        let entry = batch_entry(write, handle, addr, n, at, buf_at, 0);
        let state = FutureState::new(None);
        coalescer().push(entry, Arc::clone(&state), keep.clone_ref(py));
        parts.push(state);
        done += n;
        if done >= size {
            return Ok(Future { parts });
        }
    }
}

/// One batch (`hipFileBatchIOSetUp`, `Submit`, `GetStatus` until every entry has ended,
/// `Destroy`) of entries `(write, handle, addr, extent, size, file_offset, buf_offset)` (`size`
/// as [`fitted`] takes it), without the GIL: for each entry, the bytes moved or the exception
/// it ended with.
#[pyfunction]
#[pyo3(signature = (entries, timeout = None))]
pub(crate) fn batch<'py>(
    py: Python<'py>,
    entries: Vec<NativeEntry>,
    timeout: Option<f64>,
) -> PyResult<Bound<'py, PyList>> {
    let checked: Vec<BatchEntry> = entries
        .iter()
        .enumerate()
        .map(|(i, &(write, handle, addr, extent, size, file_offset, buf_offset))| {
            let size = fitted(extent, size, buf_offset)?;
            Ok(batch_entry(write, handle, addr, size, file_offset, buf_offset, i))
        })
        .collect::<PyResult<_>>()?;
    let wait = timeout.map(|t| Duration::from_secs_f64(t.max(0.0)));
    let events = detached(py, move || {
        let mut results = vec![None; checked.len()];
        // SAFETY: every entry lies inside its buffer object's memory (checked above), which the
        // caller keeps alive for this call, and the call waits for (or cancels) every entry.
        unsafe { run_batch(&checked, &mut results, wait) }?;
        Ok(results)
    })?;
    let out = PyList::empty(py);
    for result in events {
        match result {
            Some(Ok(n)) => out.append(n)?,
            Some(Err(e)) => out.append(py_err(py, e).into_value(py))?,
            None => out.append(pyo3::exceptions::PyTimeoutError::new_err("the batch timed out").into_value(py))?,
        }
    }
    Ok(out)
}

/// A batch entry from Python: `(write, handle, addr, extent, size, file_offset, buf_offset)`.
pub(crate) type NativeEntry = (bool, u64, usize, usize, Option<i64>, i64, i64);
