//! Futures (`pread`/`pwrite`) and batches: requests of a burst gathered by one thread and run
//! together through the driver's batches.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hipfile::{BatchEntry, Completion, Driver, HandleId, Submitter, SystemPlatform};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::buffers::{Fitted, Req, fit};
use crate::common::*;

/// Adds this file's calls (and classes) to the native module: a `#[pyfunction]` here is named here.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_BATCH_ENTRIES", hipfile::MAX_BATCH_ENTRIES)?;
    m.add_class::<Future>()?;
    add_functions!(m, submit, batch);
    Ok(())
}

/// A batch entry for `size` bytes at `buffer_offset` of the memory at `addr` (its callers
/// have checked the range against the memory's extent, [`fitted`]).
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

/// The submitter of the package's futures: requests of a burst gathered into one batch of the
/// module's driver (the policy: `hipfile::submit`).
pub(crate) fn submitter() -> &'static Submitter<SystemPlatform, &'static Driver<SystemPlatform>> {
    static SUBMITTER: OnceLock<Submitter<SystemPlatform, &'static Driver<SystemPlatform>>> = OnceLock::new();
    SUBMITTER.get_or_init(|| Submitter::new(driver()))
}

/// A read or write running on the library's threads (`pread`/`pwrite`): `get()` waits for the
/// bytes moved (or raises its error); awaitable from asyncio. A transfer longer than one call
/// may move (`MAX_RW_COUNT`) runs as several requests, ended together.
#[pyclass(module = "hipfile", frozen)]
pub(crate) struct Future {
    pub(crate) parts: Vec<Arc<Completion>>,
}

#[pymethods]
impl Future {
    /// Whether the transfer has ended. Asking starts its round if it is still gathering.
    fn done(&self) -> bool {
        submitter().ended(&self.parts)
    }

    /// Waits (without the GIL) for the transfer, up to `timeout` seconds (`None`: as long as it
    /// takes); the bytes moved, or its error. `TimeoutError` when the time ran out.
    #[pyo3(signature = (timeout = None))]
    fn get(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.max(0.0)));
        let parts = &self.parts;
        // Ended already: without releasing the GIL.
        let result = if parts.iter().all(|p| p.result().is_some()) {
            submitter().wait_all(parts, deadline)
        } else {
            py.detach(|| submitter().wait_all(parts, deadline))
        };
        let Some(result) = result else {
            return Err(pyo3::exceptions::PyTimeoutError::new_err("the transfer has not ended yet"));
        };
        result.map_err(|e| py_err(py, e))
    }

    /// `await future`: `get()` on the running loop's default executor.
    fn __await__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let running = slf.py().import("asyncio")?.call_method0("get_running_loop")?;
        running.call_method1("run_in_executor", (slf.py().None(), slf.getattr("get")?))?.call_method0("__await__")
    }

    fn __repr__(&self) -> String {
        let state = if self.parts.iter().all(|p| p.result().is_some()) { "done" } else { "running" };
        format!("<hipfile.Future {state}>")
    }
}

/// [`transfer`] on the library's threads (through the submitter, as part of a batch): a
/// [`Future`] at once, for the request `(buffer, size, file_offset, buf_offset)` ([`Req`]), in
/// requests of at most `MAX_RW_COUNT`. The buffer's memory is held until the transfer has ended.
#[pyfunction]
pub(crate) fn submit(py: Python<'_>, write: bool, handle: u64, req: Req<'_>) -> PyResult<Future> {
    let Fitted { memory, size, file_offset, buf_offset } = fit(&req, write, false)?;
    let addr = memory.addr;
    let keep = memory.keep(py)?;
    let entry = batch_entry(write, handle, addr, size, file_offset, buf_offset, 0);
    // SAFETY: the entry lies inside the buffer object's memory (`fit`), which the submitter
    // keeps (`keep`, one reference per request) until each request has ended. (The object goes
    // without the GIL: PyO3 queues the reference and drops it at the module's next call.)
    let parts = unsafe { submitter().submit_all(entry, || Box::new(keep.clone_ref(py))) };
    Ok(Future { parts })
}

/// One batch (`hipFileBatchIOSetUp`, `Submit`, `GetStatus` until every entry has ended,
/// `Destroy`) of entries `(write, handle, request)` ([`Req`]), without the GIL: for each entry,
/// the bytes moved or the exception it ended with.
#[pyfunction]
#[pyo3(signature = (entries, timeout = None))]
pub(crate) fn batch<'py>(
    py: Python<'py>,
    entries: Vec<(bool, u64, Req<'py>)>,
    timeout: Option<f64>,
) -> PyResult<Bound<'py, PyList>> {
    let mut held = Vec::with_capacity(entries.len());
    let mut checked = Vec::with_capacity(entries.len());
    for (i, (write, handle, req)) in entries.iter().enumerate() {
        let f = fit(req, *write, false)?;
        checked.push(batch_entry(*write, *handle, f.memory.addr, f.size, f.file_offset, f.buf_offset, i));
        held.push(f.memory);
    }
    let wait = timeout.map(|t| Duration::from_secs_f64(t.max(0.0)));
    let events = detached(py, move || {
        let mut results = vec![None; checked.len()];
        // SAFETY: every entry lies inside its buffer's memory (checked above), held (`held`)
        // until this returns, and the call waits for (or cancels) every entry.
        unsafe { hipfile::submit::run_batch(driver(), &checked, &mut results, wait) }?;
        Ok(results)
    })?;
    drop(held);
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
