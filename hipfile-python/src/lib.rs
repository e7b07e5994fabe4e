//! hipfile-python: the Python boundary, the native module `hipfile._hipfile`. It converts
//! Python's values into the Rust API's and back and holds no rule of its own: the package's
//! Python code (`python/hipfile/`) turns buffer objects (CUDA array interface, DLPack, the
//! buffer protocol) into an address and the extent of the memory behind it, and every call
//! here checks the request against that extent before any I/O (a buffer too small is a
//! `ValueError`, never a write past its end).
//!
//! The driver is the C API's process-wide one (`hipfile_capi::driver`), so Python and C calls
//! in one process share its use count, registries and statistics. Where the process has no GPU
//! runtime at all, that driver cannot open; the module then drives one of its own over the
//! mock GPU (a GPU emulated in host memory), so the package works on any machine.
//!
//! Every call that can block releases the GIL; errors are `OSError` (with `errno`) or the
//! package's `HipFileException` (with hipFile's code and the HIP error).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hipfile::boundary::Vendor;
use hipfile::boundary::sync::lock;
use hipfile::stats::{Counter, Path};
use hipfile::{
    AsyncParams, BatchEntry, BoolParam, DeviceCopy, DeviceMemory, DeviceSpan, Direction, Driver, Error, GpuRuntime,
    HandleId, HipError, OpError, SizeParam, Stream, StreamIo, StringParam, SystemPlatform,
};
use hipfile_safetensors::Header;
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The driver this module uses (see the crate docs).
fn driver() -> &'static Driver<SystemPlatform> {
    static CHOSEN: OnceLock<&'static Driver<SystemPlatform>> = OnceLock::new();
    static OWN: OnceLock<Driver<SystemPlatform>> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        let shared = hipfile_capi::driver();
        if shared.platform().missing_runtime().is_none() {
            return shared;
        }
        let devices = std::env::var("HIPFILE_MOCK_DEVICES").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        OWN.get_or_init(|| {
            let platform = SystemPlatform::over_mock(hipfile::mock::MockGpu::new(devices));
            Driver::new(platform)
                .with_stats(hipfile::stats::published())
                .with_log_parameters(hipfile::boundary::ProcessLog)
        })
    })
}

fn gpu() -> &'static Arc<dyn GpuRuntime> {
    driver().platform().runtime()
}

/// A Rust error as the Python exception the package raises for it.
fn py_err(py: Python<'_>, e: Error) -> PyErr {
    if let Some(errno) = e.errno() {
        let text = std::io::Error::from_raw_os_error(errno).to_string();
        return PyOSError::new_err((errno, text));
    }
    let (code, hip) = e.to_c_pair();
    let class = py.import("hipfile._errors").and_then(|m| m.getattr("HipFileException"));
    match class.and_then(|c| c.call1((code, hip))) {
        Ok(exception) => PyErr::from_value(exception),
        Err(failed) => failed,
    }
}

/// Runs `body` without the GIL and turns its error into the package's exception.
fn detached<T: Send>(py: Python<'_>, body: impl FnOnce() -> hipfile::Result<T> + Send) -> PyResult<T> {
    py.detach(body).map_err(|e| py_err(py, e))
}

/// `size` bytes at `offset` must lie inside a buffer of `extent` bytes (what the buffer object
/// holds from the address given).
fn check_extent(extent: usize, size: usize, offset: i64) -> PyResult<()> {
    let end = u64::try_from(offset).ok().and_then(|o| o.checked_add(size as u64));
    if end.is_some_and(|end| end <= extent as u64) {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "{size} bytes at buffer offset {offset} do not fit in a buffer of {extent} bytes"
    )))
}

/// A batch entry for `size` bytes at `buffer_offset` of the buffer at `addr` (its callers
/// have checked the range against the buffer's extent, [`fitted`]).
fn batch_entry(
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

fn direction(write: bool) -> Direction {
    if write { Direction::Write } else { Direction::Read }
}

/// Opens the driver (`hipFileDriverOpen`): the use count goes up.
#[pyfunction]
fn driver_open(py: Python<'_>) -> PyResult<()> {
    detached(py, || driver().open())
}

/// Closes the driver once (`hipFileDriverClose`).
#[pyfunction]
fn driver_close(py: Python<'_>) -> PyResult<()> {
    detached(py, || driver().close())
}

/// `hipFileUseCount`.
#[pyfunction]
fn use_count() -> i64 {
    driver().use_count()
}

/// The API version the library implements, `(major, minor, patch)`.
#[pyfunction]
fn version() -> (u32, u32, u32) {
    hipfile::API_VERSION
}

/// What the module runs on: the runtime's description, whether the GPU is emulated, whether
/// the driver is the C API's, and the devices.
#[pyfunction]
fn runtime_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let platform = driver().platform();
    d.set_item("description", platform.description())?;
    d.set_item("shared_with_c", std::ptr::eq(driver(), hipfile_capi::driver()))?;
    d.set_item("mock", platform.is_mock())?;
    let vendor = platform.vendor().map(|v| if v == Vendor::Cuda { "cuda" } else { "hip" });
    d.set_item("vendor", vendor)?;
    d.set_item("devices", gpu().device_count().unwrap_or(0))?;
    Ok(d)
}

/// `hipFileDriverGetProperties`, as a dict.
#[pyfunction]
fn properties(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let p = driver().properties();
    let d = PyDict::new(py);
    d.set_item("version", p.version)?;
    d.set_item("poll_threshold_kb", p.poll_threshold_kb)?;
    d.set_item("max_direct_io_kb", p.max_direct_io_kb)?;
    d.set_item("status_flags", p.status_flags)?;
    d.set_item("control_flags", p.control_flags)?;
    d.set_item("feature_flags", p.feature_flags)?;
    d.set_item("max_device_cache_kb", p.max_device_cache_kb)?;
    d.set_item("per_buffer_cache_kb", p.per_buffer_cache_kb)?;
    d.set_item("max_pinned_kb", p.max_pinned_kb)?;
    d.set_item("max_batch_io_count", p.max_batch_io_count)?;
    d.set_item("max_batch_io_timeout_ms", p.max_batch_io_timeout_ms)?;
    Ok(d)
}

/// Every parameter: its name (the C enum's, less `hipFileParam`) and kind (`size`, `bool`,
/// `string`).
#[pyfunction]
fn parameter_names() -> Vec<(String, &'static str)> {
    let sizes = SizeParam::ALL.iter().map(|p| (format!("{p:?}"), "size"));
    let bools = BoolParam::ALL.iter().map(|p| (format!("{p:?}"), "bool"));
    sizes.chain(bools).chain(StringParam::ALL.iter().map(|p| (format!("{p:?}"), "string"))).collect()
}

enum Param {
    Size(SizeParam),
    Bool(BoolParam),
    String(StringParam),
}

fn param(name: &str) -> PyResult<Param> {
    let named = |p: &dyn std::fmt::Debug| format!("{p:?}") == name;
    if let Some(p) = SizeParam::ALL.iter().find(|p| named(*p)) {
        return Ok(Param::Size(*p));
    }
    if let Some(p) = BoolParam::ALL.iter().find(|p| named(*p)) {
        return Ok(Param::Bool(*p));
    }
    if let Some(p) = StringParam::ALL.iter().find(|p| named(*p)) {
        return Ok(Param::String(*p));
    }
    Err(PyValueError::new_err(format!("no parameter named {name:?} (see hipfile.parameter_names())")))
}

/// `hipFileGetParameter*`: the value in use while open, else the one the next open would use.
#[pyfunction]
fn get_parameter(py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
    let d = driver();
    Ok(match param(name)? {
        Param::Size(p) => d.size_parameter(p).into_pyobject(py)?.into_any().unbind(),
        Param::Bool(p) => pyo3::types::PyBool::new(py, d.bool_parameter(p)).to_owned().into_any().unbind(),
        Param::String(p) => d.string_parameter(p).into_pyobject(py)?.into_any().unbind(),
    })
}

/// `hipFileSetParameter*`: stages `value` for the next open (the driver must be closed).
#[pyfunction]
fn set_parameter(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let d = driver();
    let result = match param(name)? {
        Param::Size(p) => d.set_size_parameter(p, value.extract()?),
        Param::Bool(p) => d.set_bool_parameter(p, value.extract()?),
        Param::String(p) => d.set_string_parameter(p, &value.extract::<String>()?),
    };
    result.map_err(|e| py_err(py, e))
}

/// `hipFileHandleRegister` of an open descriptor; the handle as an int.
#[pyfunction]
fn handle_register(py: Python<'_>, fd: i32) -> PyResult<u64> {
    // SAFETY: as at the C boundary, the caller's contract: Python names descriptors by number
    // (`os.open`'s), and a number that is not open is EBADF.
    detached(py, || unsafe { driver().handle_register_raw(fd) }).map(|h| h.0)
}

/// The page-cache policy of one registered file (`"auto"`, `"keep"`, `"bypass"`; `None`: the
/// driver's), for its transfers from now on (semantics §16).
#[pyfunction]
#[pyo3(signature = (handle, setting = None))]
fn handle_set_page_cache(py: Python<'_>, handle: u64, setting: Option<&str>) -> PyResult<()> {
    let setting = match setting {
        None => None,
        Some(word) => Some(hipfile::PageCache::parse(word).ok_or_else(|| {
            PyValueError::new_err(format!("cache={word:?}: use one of {} (or None)", hipfile::PageCache::NAMES))
        })?),
    };
    driver().handle_set_page_cache(HandleId(handle), setting).map_err(|e| py_err(py, e))
}

/// The page-cache rule a read of the whole registered file would follow now, in words.
#[pyfunction]
fn page_cache_rule(py: Python<'_>, handle: u64) -> PyResult<String> {
    driver().page_cache_rule(HandleId(handle)).map(|rule| rule.to_string()).map_err(|e| py_err(py, e))
}

/// `hipFileHandleDeregister`.
#[pyfunction]
fn handle_deregister(py: Python<'_>, handle: u64) -> PyResult<()> {
    detached(py, || driver().handle_deregister(HandleId(handle)))
}

/// `hipFileBufRegister`.
#[pyfunction]
#[pyo3(signature = (addr, length, flags = 0))]
fn buf_register(py: Python<'_>, addr: usize, length: usize, flags: i32) -> PyResult<()> {
    detached(py, || driver().buf_register(addr, length, flags))
}

/// `hipFileBufDeregister`.
#[pyfunction]
fn buf_deregister(py: Python<'_>, addr: usize) -> PyResult<()> {
    detached(py, || driver().buf_deregister(addr))
}

/// `hipFileRead` (`write` false) or `hipFileWrite` of `size` bytes (`None`: the rest of the
/// buffer) at `file_offset`, into or from `[addr + buf_offset, ...)`, which must lie inside
/// `[addr, addr + extent)` ([`fitted`]). The bytes moved (fewer only at end of file): a
/// transfer longer than one call may move ([`hipfile::max_rw_count`]) runs as several calls.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn transfer(
    py: Python<'_>,
    write: bool,
    handle: u64,
    addr: usize,
    extent: usize,
    size: Option<i64>,
    file_offset: i64,
    buf_offset: i64,
) -> PyResult<usize> {
    let size = fitted(extent, size, buf_offset)?;
    // SAFETY: the range lies inside the memory the buffer object holds (checked above), which
    // the caller keeps alive for the call; device memory is also checked by the driver.
    unsafe { transfer_all(py, write, handle, addr, size, file_offset, buf_offset) }
}

/// [`transfer`]'s calls, one after another until `size` bytes have moved or the file ended.
///
/// # Safety
/// `[addr + buf_offset, addr + buf_offset + size)` lies inside memory that stays valid for
/// the call (host memory, or device memory the driver checks).
unsafe fn transfer_all(
    py: Python<'_>,
    write: bool,
    handle: u64,
    addr: usize,
    size: usize,
    file_offset: i64,
    buf_offset: i64,
) -> PyResult<usize> {
    let mut done = 0;
    while done < size {
        let (at, buf_at) = (file_offset.saturating_add(done as i64), buf_offset + done as i64);
        let left = size - done;
        // SAFETY: the caller's contract.
        let n =
            detached(py, || unsafe { driver().transfer(direction(write), HandleId(handle), addr, left, at, buf_at) })?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// CPython's buffer protocol, declared here: PyO3 leaves it out of the stable ABI before 3.11
/// (it joined the limited API then), but the calls and `Py_buffer`'s layout are the same in
/// every CPython 3 this package supports.
mod buffer_protocol {
    use std::ffi::{c_char, c_int, c_void};

    use pyo3::ffi::{Py_ssize_t, PyObject};

    #[repr(C)]
    pub(crate) struct PyBuffer {
        pub(crate) buf: *mut c_void,
        obj: *mut PyObject,
        pub(crate) len: Py_ssize_t,
        itemsize: Py_ssize_t,
        pub(crate) readonly: c_int,
        ndim: c_int,
        format: *mut c_char,
        shape: *mut Py_ssize_t,
        strides: *mut Py_ssize_t,
        suboffsets: *mut Py_ssize_t,
        internal: *mut c_void,
    }

    /// `PyBUF_WRITABLE`: a writable buffer, or an error.
    pub(crate) const WRITABLE: c_int = 1;

    unsafe extern "C" {
        pub(crate) fn PyObject_GetBuffer(obj: *mut PyObject, view: *mut PyBuffer, flags: c_int) -> c_int;
        pub(crate) fn PyBuffer_Release(view: *mut PyBuffer);
    }
}

/// A contiguous buffer-protocol export of an object, released when dropped (with the GIL held,
/// as CPython requires).
struct HostBuffer {
    view: buffer_protocol::PyBuffer,
}

impl HostBuffer {
    /// `obj`'s bytes (`PyBUF_SIMPLE`: contiguous), writable ones where `writable`.
    fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<HostBuffer> {
        let mut view = std::mem::MaybeUninit::<buffer_protocol::PyBuffer>::uninit();
        let flags = if writable { buffer_protocol::WRITABLE } else { 0 };
        // SAFETY: a live object, with the GIL held (`obj` is bound); `view` is written by a
        // successful call, which the check below requires before it is read.
        let rc = unsafe { buffer_protocol::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: initialised by the successful call above.
        Ok(HostBuffer { view: unsafe { view.assume_init() } })
    }

    fn addr(&self) -> usize {
        self.view.buf as usize
    }

    fn len(&self) -> usize {
        self.view.len as usize
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: the view of a successful `PyObject_GetBuffer`, released once; `HostBuffer` is
        // only made and dropped by functions that hold the GIL.
        unsafe { buffer_protocol::PyBuffer_Release(&mut self.view) }
    }
}

/// [`transfer`] with host memory given as any object with the buffer protocol (NumPy arrays,
/// `bytearray`, `mmap`, `bytes` for writes): its memory is held for the call and its size is
/// the extent. `size` `None`: all of it past `buf_offset`.
#[pyfunction]
#[pyo3(signature = (write, handle, buffer, size, file_offset, buf_offset))]
fn transfer_buffer(
    py: Python<'_>,
    write: bool,
    handle: u64,
    buffer: &Bound<'_, PyAny>,
    size: Option<i64>,
    file_offset: i64,
    buf_offset: i64,
) -> PyResult<usize> {
    let held = HostBuffer::get(buffer, !write)?;
    let (addr, extent) = (held.addr(), held.len());
    let size = fitted(extent, size, buf_offset)?;
    // SAFETY: the range lies inside the buffer's memory (checked above), held (`held`) until
    // this returns.
    let done = unsafe { transfer_all(py, write, handle, addr, size, file_offset, buf_offset) };
    drop(held);
    done
}

/// Where a future's result arrives.
struct FutureState {
    result: Mutex<Option<hipfile::Result<usize>>>,
    ready: Condvar,
    /// Still in the coalescer's queue (not yet part of a round).
    queued: AtomicBool,
}

impl FutureState {
    /// A request's state: ended with `result`, or (`None`) queued.
    fn new(result: Option<hipfile::Result<usize>>) -> Slot {
        let queued = AtomicBool::new(result.is_none());
        Arc::new(FutureState { result: Mutex::new(result), ready: Condvar::new(), queued })
    }
}

type Slot = Arc<FutureState>;

/// A future's request, waiting for the coalescer.
struct Pending {
    entry: BatchEntry,
    slot: Slot,
    /// The buffer object, held until the request has ended whatever becomes of its future.
    _keep: Py<PyAny>,
}

/// Futures go to the driver together: one thread gathers the requests of a burst (`pread` after
/// `pread` from a loop) and runs them as one batch (up to the batch limit), where the bounce path
/// pipelines them across its workers (`Backend::transfer_many`). A round starts once the queue
/// has not grown for [`Coalescer::GAP`], has reached the batch limit, has waited
/// [`Coalescer::LINGER`], or someone waits for one of its requests (`get`, `done`, `await`):
/// a future waited for at once starts at once. While a round runs, the next one fills.
struct Coalescer {
    queue: Mutex<Queue>,
    ready: Condvar,
}

struct Queue {
    pending: Vec<Pending>,
    /// The process whose thread serves the queue (a forked child has none of its parent's).
    pid: u32,
    /// Someone waits for a queued request: start the round now.
    flush: bool,
}

fn coalescer() -> &'static Coalescer {
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

fn finish(slot: &FutureState, result: hipfile::Result<usize>) {
    *lock(&slot.result) = Some(result);
    slot.ready.notify_all();
}

/// One batch of `entries` (cookies their indices) run to its end, or until `wait` has passed
/// (what has not run then is cancelled): each entry's result in `results`.
///
/// # Safety
/// Each entry lies inside memory that stays valid until this returns (it waits for every
/// entry, or cancels it).
unsafe fn run_batch(
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
struct Future {
    parts: Vec<Slot>,
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
fn fitted(extent: usize, size: Option<i64>, buf_offset: i64) -> PyResult<usize> {
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
fn submit(
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
fn batch<'py>(py: Python<'py>, entries: Vec<NativeEntry>, timeout: Option<f64>) -> PyResult<Bound<'py, PyList>> {
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

/// A stream-ordered operation's values and result (core's [`StreamIo`]), with the buffer
/// object held until the stream has run it, whatever becomes of the Python object returned.
struct StreamValues {
    io: StreamIo,
    keep: Mutex<Option<Py<PyAny>>>,
}

impl AsyncParams for StreamValues {
    fn size(&self) -> usize {
        self.io.size()
    }
    fn file_offset(&self) -> i64 {
        self.io.file_offset()
    }
    fn buffer_offset(&self) -> i64 {
        self.io.buffer_offset()
    }
    fn complete(&self, result: i64) {
        self.io.complete(result);
        // Never the GIL here: this may run in the runtime's callback thread while a Python
        // thread holding the GIL waits for the stream (`cupy.cuda.Stream.synchronize`); PyO3
        // queues the reference and drops it at the module's next call.
        drop(lock(&self.keep).take());
    }
}

/// A stream-ordered read or write (`hipFileReadAsync`/`WriteAsync`): its result once the
/// stream has run it.
#[pyclass(module = "hipfile._hipfile")]
struct StreamOp {
    values: Arc<StreamValues>,
}

#[pymethods]
impl StreamOp {
    /// Whether the stream has run the operation.
    fn done(&self) -> bool {
        self.values.io.result().is_some()
    }

    /// The bytes moved, or a negative error (`-errno`, `-hipFileOpError`, `-hipError_t`), once
    /// the stream has run it; `None` before.
    fn result(&self) -> Option<i64> {
        self.values.io.result()
    }
}

/// Queues a read or write on `stream` (a stream handle as an int): it runs when the stream gets
/// there. The operation must lie inside `[addr, addr + extent)`; `keep` stays alive until it
/// has run.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn stream_submit(
    py: Python<'_>,
    write: bool,
    handle: u64,
    addr: usize,
    extent: usize,
    size: Option<i64>,
    file_offset: i64,
    buf_offset: i64,
    stream: usize,
    keep: Py<PyAny>,
) -> PyResult<StreamOp> {
    let size = fitted(extent, size, buf_offset)?;
    let values =
        Arc::new(StreamValues { io: StreamIo::new(size, file_offset, buf_offset), keep: Mutex::new(Some(keep)) });
    let shared = Arc::clone(&values) as Arc<dyn AsyncParams>;
    detached(py, move || {
        let d = driver();
        d.open_implicitly()?;
        // SAFETY: the values cannot change after this check (no setter is exposed), so the
        // range stays inside the buffer object's memory, which `keep` holds until the stream
        // has run the operation.
        unsafe { d.submit_async(direction(write), HandleId(handle), addr, shared, stream_of(stream)) }
    })?;
    Ok(StreamOp { values })
}

/// A stream from Python, where handles are ints (PyTorch's `cuda_stream`, CuPy's `ptr`, 0 for
/// the null stream), as C passes them.
fn stream_of(raw: usize) -> Stream {
    // SAFETY: as at the C boundary, the caller vouches that the int is a stream of the runtime
    // in use (or 0) that lives while it is used: Python cannot name streams otherwise.
    unsafe { Stream::from_raw(raw) }
}

/// `hipFileStreamRegister`.
#[pyfunction]
fn stream_register(py: Python<'_>, stream: usize, flags: u32) -> PyResult<()> {
    detached(py, || driver().stream_register(stream_of(stream), flags))
}

/// `hipFileStreamDeregister`.
#[pyfunction]
fn stream_deregister(py: Python<'_>, stream: usize) -> PyResult<()> {
    detached(py, || driver().stream_deregister(stream_of(stream)))
}

/// A new stream of the runtime the module uses, as an int.
#[pyfunction]
fn stream_create(py: Python<'_>) -> PyResult<usize> {
    detached(py, || Ok(gpu().stream_create()?.as_raw()))
}

/// Waits for the work queued on `stream`.
#[pyfunction]
fn stream_synchronize(py: Python<'_>, stream: usize) -> PyResult<()> {
    detached(py, || Ok(gpu().stream_synchronize(stream_of(stream))?))
}

/// Destroys a stream made by [`stream_create`].
#[pyfunction]
fn stream_destroy(py: Python<'_>, stream: usize) -> PyResult<()> {
    detached(py, || Ok(gpu().stream_destroy(stream_of(stream))?))
}

/// The device memory the package allocated ([`device_alloc`]), by address, until Python lets go
/// of it ([`device_free`]).
static ALLOCATIONS: Mutex<BTreeMap<usize, DeviceMemory>> = Mutex::new(BTreeMap::new());

/// Allocates `size` bytes of device memory on `device` with the runtime the module uses.
#[pyfunction]
#[pyo3(signature = (size, device = 0))]
fn device_alloc(py: Python<'_>, size: usize, device: i32) -> PyResult<usize> {
    detached(py, || {
        let memory = DeviceMemory::alloc(gpu(), device, size)?;
        let addr = memory.addr();
        lock(&ALLOCATIONS).insert(addr, memory);
        Ok(addr)
    })
}

/// Frees memory of [`device_alloc`] (the package's `DeviceBuffer` when it is collected, and
/// upstream's `hipFree`); any other address is `hipErrorInvalidValue`, as the runtime's free
/// answers for memory it did not allocate, and frees nothing.
#[pyfunction]
fn device_free(py: Python<'_>, addr: usize) -> PyResult<()> {
    let memory = lock(&ALLOCATIONS).remove(&addr);
    detached(py, || match memory {
        Some(memory) => {
            drop(memory);
            Ok(())
        }
        None => Err(HipError::INVALID_VALUE.into()),
    })
}

/// The bytes from `addr` to the end of its device allocation, per the runtime: the extent of a
/// buffer named by its address alone (upstream's API with an object that has no length).
/// Memory the runtime does not know as device (or managed) memory has no bounds the library
/// could check, and is refused: `hipFileHipMemoryTypeInvalid`.
#[pyfunction]
fn device_extent(py: Python<'_>, addr: usize) -> PyResult<usize> {
    detached(py, || {
        let info = gpu().pointer_info(addr)?;
        match info.memory_type {
            hipfile::MemoryType::Device | hipfile::MemoryType::Managed if addr != 0 => Ok(info.bytes_after(addr)),
            _ => Err(OpError::HipMemoryTypeInvalid.into()),
        }
    })
}

/// The device that owns `addr`, per the runtime.
#[pyfunction]
fn pointer_device(py: Python<'_>, addr: usize) -> PyResult<i32> {
    detached(py, || Ok(gpu().pointer_info(addr)?.device))
}

/// Copies `data` to device memory at `addr + offset` of an allocation of `extent` bytes.
#[pyfunction]
fn copy_to_device(py: Python<'_>, addr: usize, extent: usize, offset: i64, data: Vec<u8>) -> PyResult<()> {
    check_extent(extent, data.len(), offset)?;
    // SAFETY: inside the allocation (checked above).
    let span = unsafe { DeviceSpan::new(addr + offset as usize, data.len()) };
    detached(py, move || Ok(gpu().copy_to_device(span, &data)?))
}

/// `size` bytes of device memory at `addr + offset` of an allocation of `extent` bytes.
#[pyfunction]
fn copy_from_device(py: Python<'_>, addr: usize, extent: usize, offset: i64, size: usize) -> PyResult<Vec<u8>> {
    check_extent(extent, size, offset)?;
    // SAFETY: inside the allocation (checked above).
    let span = unsafe { DeviceSpan::new(addr + offset as usize, size) };
    detached(py, move || {
        let mut out = vec![0u8; size];
        gpu().copy_from_device(&mut out, span)?;
        Ok(out)
    })
}

fn totals<'py>(py: Python<'py>, t: hipfile::stats::Totals) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ok", t.ok)?;
    d.set_item("err", t.err)?;
    d.set_item("bytes", t.bytes)?;
    d.set_item("micros", t.micros)?;
    d.set_item("unaligned", t.unaligned)?;
    d.set_item("bytes_per_second", t.bandwidth())?;
    d.set_item("latency_avg_us", t.latency_avg_us())?;
    Ok(d)
}

/// The driver's statistics (semantics §14): level, per direction (all, and per path `p2p`,
/// `bounce`, `host`), size classes (level 2), per GPU (level 3), and the other counters.
#[pyfunction]
fn stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let s = driver().stats().snapshot();
    let out = PyDict::new(py);
    out.set_item("level", s.level)?;
    for (name, dir) in [("read", Direction::Read), ("write", Direction::Write)] {
        let d = totals(py, s.totals(dir, None, None))?;
        for (path_name, path) in [("p2p", Path::P2p), ("bounce", Path::Bounce), ("host", Path::Host)] {
            d.set_item(path_name, totals(py, s.totals(dir, Some(path), None))?)?;
        }
        d.set_item("size_classes", s.size_histogram(dir).to_vec())?;
        out.set_item(name, d)?;
    }
    let gpus = PyDict::new(py);
    for g in s.gpus_used() {
        let d = PyDict::new(py);
        d.set_item("read", totals(py, s.totals(Direction::Read, None, Some(g)))?)?;
        d.set_item("write", totals(py, s.totals(Direction::Write, None, Some(g)))?)?;
        d.set_item("registered_bytes", s.registered_bytes(g))?;
        gpus.set_item(g, d)?;
    }
    out.set_item("gpus", gpus)?;
    let counters = PyDict::new(py);
    for c in Counter::ALL {
        counters.set_item(format!("{c:?}"), s.get(c))?;
    }
    out.set_item("counters", counters)?;
    Ok(out)
}

/// The capability report: every backend, whether it is p2p, available, why not, and notes on
/// how it works here (as `hipfile check` prints them).
#[pyfunction]
fn capabilities(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let caps = driver().capabilities().map_err(|e| py_err(py, e))?;
    let out = PyList::empty(py);
    for c in caps {
        let d = PyDict::new(py);
        d.set_item("backend", &c.backend)?;
        d.set_item("p2p", c.kind == hipfile::BackendKind::P2p)?;
        d.set_item("available", c.available.is_ok())?;
        d.set_item("why_not", c.available.err())?;
        d.set_item("notes", c.notes)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Whether each open p2p backend would serve the registered file `handle`: `(name, None)` or
/// `(name, why not)`.
#[pyfunction]
fn p2p_verdict(py: Python<'_>, handle: u64) -> PyResult<Vec<(String, Option<String>)>> {
    let verdicts = detached(py, || driver().p2p_verdict(HandleId(handle)))?;
    Ok(verdicts.into_iter().map(|(name, v)| (name.to_owned(), v.err().map(|why| why.0.into_owned()))).collect())
}

/// DLPack's ABI (dlpack.h, version 0.8's `DLManagedTensor`, which every consumer takes), for
/// exporting device memory of the package's `DeviceBuffer`.
mod dlpack_abi {
    use std::ffi::{c_char, c_void};

    use pyo3::ffi;
    use pyo3::prelude::*;

    #[repr(C)]
    struct Device {
        device_type: i32,
        device_id: i32,
    }

    #[repr(C)]
    struct DataType {
        code: u8,
        bits: u8,
        lanes: u16,
    }

    #[repr(C)]
    struct Tensor {
        data: *mut c_void,
        device: Device,
        ndim: i32,
        dtype: DataType,
        shape: *mut i64,
        strides: *mut i64,
        byte_offset: u64,
    }

    #[repr(C)]
    struct Managed {
        tensor: Tensor,
        manager_ctx: *mut c_void,
        deleter: Option<unsafe extern "C" fn(*mut Managed)>,
    }

    /// What a managed tensor owns: its shape, and the object whose memory it shows.
    struct Context {
        shape: [i64; 1],
        _owner: Py<PyAny>,
    }

    const NAME: &std::ffi::CStr = c"dltensor";

    /// The tensor's deleter: frees it and lets go of its owner.
    unsafe extern "C" fn delete(managed: *mut Managed) {
        if managed.is_null() {
            return;
        }
        // SAFETY: `managed` was made by `Box::into_raw` in `capsule`, and DLPack calls the
        // deleter once.
        let managed = unsafe { Box::from_raw(managed) };
        // SAFETY: `manager_ctx` was made by `Box::into_raw` in `capsule`, owned by this tensor.
        let context = unsafe { Box::from_raw(managed.manager_ctx.cast::<Context>()) };
        // Without taking the GIL (a consumer may delete from a thread that another, holding the
        // GIL, waits for): PyO3 queues the owner's reference when the GIL is not held.
        drop(context);
    }

    /// The capsule's destructor: a capsule never consumed (still named "dltensor") deletes its
    /// tensor; a consumer renames it and deletes the tensor itself.
    unsafe extern "C" fn destruct(capsule: *mut ffi::PyObject) {
        // SAFETY: called by CPython on a live capsule, with the GIL held.
        if unsafe { ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) } == 1 {
            // SAFETY: as above; the name matches, so the pointer is our `Managed`.
            let managed = unsafe { ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()) }.cast::<Managed>();
            // SAFETY: never consumed, so never deleted: deleted here, once.
            unsafe { delete(managed) };
        }
    }

    /// A DLPack capsule of `size` bytes (a 1-D `uint8` tensor) at `addr` on
    /// (`device_type`, `device_id`), keeping `owner` alive until the tensor is deleted.
    pub(crate) fn capsule(
        py: Python<'_>,
        addr: usize,
        size: usize,
        device_type: i32,
        device_id: i32,
        owner: Py<PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let context = Box::into_raw(Box::new(Context { shape: [size as i64], _owner: owner }));
        let managed = Box::into_raw(Box::new(Managed {
            tensor: Tensor {
                data: addr as *mut c_void,
                device: Device { device_type, device_id },
                ndim: 1,
                dtype: DataType { code: 1, bits: 8, lanes: 1 }, // kDLUInt, 8 bits
                // SAFETY: `context` is a live allocation, freed only with this tensor.
                shape: unsafe { (*context).shape.as_mut_ptr() },
                strides: std::ptr::null_mut(), // compact, row-major
                byte_offset: 0,
            },
            manager_ctx: context.cast(),
            deleter: Some(delete),
        }));
        // SAFETY: a valid pointer, a static name and a destructor that matches the name.
        let capsule = unsafe { ffi::PyCapsule_New(managed.cast(), NAME.as_ptr() as *const c_char, Some(destruct)) };
        if capsule.is_null() {
            // SAFETY: the capsule was not made, so nothing else owns the tensor.
            unsafe { delete(managed) };
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new reference just returned by CPython.
        Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
    }
}

/// A DLPack capsule (`uint8`, 1-D) of `size` bytes of device memory at `addr` on device
/// `device`, keeping `owner` alive until the consumer deletes it. The device type is the
/// runtime's: CUDA (2) or ROCm (10).
#[pyfunction]
fn dlpack(py: Python<'_>, addr: usize, size: usize, device: i32, owner: Py<PyAny>) -> PyResult<Py<PyAny>> {
    let platform = driver().platform();
    if platform.is_mock() {
        return Err(pyo3::exceptions::PyBufferError::new_err("the mock GPU's memory is host memory: no DLPack export"));
    }
    let device_type = if platform.vendor() == Some(Vendor::Cuda) { 2 } else { 10 };
    dlpack_abi::capsule(py, addr, size, device_type, device, owner)
}

/// hipFile's code of an error name (`OpError` variant names, as the C header spells them less
/// the `hipFile` prefix), for the package's `OpError` enum.
#[pyfunction]
fn op_error_codes() -> Vec<(String, i32)> {
    OpError::ALL.iter().map(|e| (format!("{e:?}"), e.code())).collect()
}

/// The message hipFile gives for code `code`.
#[pyfunction]
fn op_error_message(code: i32) -> PyResult<&'static str> {
    OpError::from_code(code)
        .map(OpError::message)
        .ok_or_else(|| PyTypeError::new_err(format!("no hipFile code {code}")))
}

/// A safetensors error as Python's: `OSError` for a file that cannot be read, else a
/// `ValueError` naming the problem.
fn safetensors_err(e: hipfile_safetensors::Error, path: &std::path::Path) -> PyErr {
    match e {
        hipfile_safetensors::Error::Io(io) => PyErr::from(io),
        hipfile_safetensors::Error::Checkpoint(why) => PyValueError::new_err(why),
        other => PyValueError::new_err(format!("{}: {other}", path.display())),
    }
}

/// A batch entry from Python: `(write, handle, addr, extent, size, file_offset, buf_offset)`.
type NativeEntry = (bool, u64, usize, usize, Option<i64>, i64, i64);

/// One tensor of a header: `(name, dtype, shape, begin, end, row_bytes)`, `row_bytes` the
/// bytes of one row of the first dimension (`None` for a scalar, or a row of a packed dtype
/// that does not end on a byte).
type TensorEntry = (String, &'static str, Vec<u64>, u64, u64, Row);

/// A tensor's row along its first dimension, as Python sees it: its bytes (an int), or why it
/// has none to slice (a str, the message of the `SafetensorError` slicing it raises).
#[derive(IntoPyObject)]
enum Row {
    Bytes(u64),
    Refused(String),
}

/// The checked header of the safetensors file at `path` (hipfile-safetensors): `(data_start,
/// data_len, [tensor entries], metadata or None)`, tensors in offset order.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn safetensors_header(
    py: Python<'_>,
    path: std::path::PathBuf,
) -> PyResult<(u64, u64, Vec<TensorEntry>, Option<BTreeMap<String, String>>)> {
    let read =
        py.detach(|| std::fs::File::open(&path).map_err(hipfile_safetensors::Error::Io).and_then(|f| Header::read(&f)));
    let header = read.map_err(|e| safetensors_err(e, &path))?;
    let tensors = header
        .tensors
        .into_iter()
        .map(|t| {
            // The bytes of a row, or why the tensor has none to slice.
            let row = t.row_bytes().map_or_else(|e| Row::Refused(e.to_string()), Row::Bytes);
            (t.name, t.dtype.name(), t.shape, t.begin, t.end, row)
        })
        .collect();
    Ok((header.data_start, header.data_len, tensors, header.metadata))
}

/// The files of the checkpoint `path` names and its index's weight map
/// (`hipfile_safetensors::checkpoint`).
#[pyfunction]
fn safetensors_checkpoint(path: std::path::PathBuf) -> PyResult<(Vec<std::path::PathBuf>, BTreeMap<String, String>)> {
    let c = hipfile_safetensors::checkpoint(&path).map_err(|e| safetensors_err(e, &path))?;
    Ok((c.files, c.weight_map))
}

/// The rows `rank` of `world` loads of a first dimension of `rows`
/// (`hipfile_safetensors::shard_rows`): `(start, stop)`.
#[pyfunction]
fn safetensors_shard_rows(rows: u64, rank: u64, world: u64) -> (u64, u64) {
    let r = hipfile_safetensors::shard_rows(rows, rank, world);
    (r.start, r.end)
}

/// The native half of the `hipfile` package.
#[pymodule]
fn _hipfile(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Future>()?;
    m.add_class::<StreamOp>()?;
    m.add("MAX_RW_COUNT", hipfile::max_rw_count())?;
    m.add("MAX_BATCH_ENTRIES", hipfile::MAX_BATCH_ENTRIES)?;
    m.add_function(wrap_pyfunction!(driver_open, m)?)?;
    m.add_function(wrap_pyfunction!(driver_close, m)?)?;
    m.add_function(wrap_pyfunction!(use_count, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(runtime_info, m)?)?;
    m.add_function(wrap_pyfunction!(properties, m)?)?;
    m.add_function(wrap_pyfunction!(parameter_names, m)?)?;
    m.add_function(wrap_pyfunction!(get_parameter, m)?)?;
    m.add_function(wrap_pyfunction!(set_parameter, m)?)?;
    m.add_function(wrap_pyfunction!(handle_register, m)?)?;
    m.add_function(wrap_pyfunction!(handle_set_page_cache, m)?)?;
    m.add_function(wrap_pyfunction!(device_extent, m)?)?;
    m.add_function(wrap_pyfunction!(page_cache_rule, m)?)?;
    m.add_function(wrap_pyfunction!(handle_deregister, m)?)?;
    m.add_function(wrap_pyfunction!(buf_register, m)?)?;
    m.add_function(wrap_pyfunction!(buf_deregister, m)?)?;
    m.add_function(wrap_pyfunction!(transfer, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(submit, m)?)?;
    m.add_function(wrap_pyfunction!(batch, m)?)?;
    m.add_function(wrap_pyfunction!(stream_submit, m)?)?;
    m.add_function(wrap_pyfunction!(stream_register, m)?)?;
    m.add_function(wrap_pyfunction!(stream_deregister, m)?)?;
    m.add_function(wrap_pyfunction!(stream_create, m)?)?;
    m.add_function(wrap_pyfunction!(stream_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(stream_destroy, m)?)?;
    m.add_function(wrap_pyfunction!(device_alloc, m)?)?;
    m.add_function(wrap_pyfunction!(device_free, m)?)?;
    m.add_function(wrap_pyfunction!(pointer_device, m)?)?;
    m.add_function(wrap_pyfunction!(copy_to_device, m)?)?;
    m.add_function(wrap_pyfunction!(copy_from_device, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(capabilities, m)?)?;
    m.add_function(wrap_pyfunction!(p2p_verdict, m)?)?;
    m.add_function(wrap_pyfunction!(op_error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(op_error_message, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors_header, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors_shard_rows, m)?)?;
    Ok(())
}
