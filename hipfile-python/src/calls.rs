//! The driver's calls that move no data: open and close, properties, parameters,
//! registrations, statistics, capabilities, error codes.

use hipfile::boundary::Vendor;
use hipfile::stats::{Counter, Path};
use hipfile::{BoolParam, Direction, HandleId, OpError, SizeParam, StringParam, Words};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::common::*;

/// Adds this file's calls (and classes) to the native module: a `#[pyfunction]` here is named here.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(
        m,
        driver_open,
        driver_close,
        use_count,
        version,
        runtime_info,
        properties,
        parameter_names,
        get_parameter,
        set_parameter,
        handle_register,
        handle_set_page_cache,
        handle_set_durable,
        page_cache_rule,
        handle_deregister,
        buf_register,
        buf_deregister,
        stats,
        capabilities,
        p2p_verdict,
        op_error_codes,
        op_error_message,
    );
    Ok(())
}

/// A dict of `value`'s fields, each under its own name: `fields!(py, value: a, b)`.
macro_rules! fields {
    ($py:expr, $value:ident: $($field:ident),+) => {{
        let d = PyDict::new($py);
        $(d.set_item(stringify!($field), $value.$field)?;)+
        d
    }};
}

/// Opens the driver (`hipFileDriverOpen`): the use count goes up.
#[pyfunction]
pub(crate) fn driver_open(py: Python<'_>) -> PyResult<()> {
    detached(py, || driver().open())
}

/// Closes the driver once (`hipFileDriverClose`).
#[pyfunction]
pub(crate) fn driver_close(py: Python<'_>) -> PyResult<()> {
    detached(py, || driver().close())
}

/// `hipFileUseCount`.
#[pyfunction]
pub(crate) fn use_count() -> i64 {
    driver().use_count()
}

/// The API version the library implements, `(major, minor, patch)`.
#[pyfunction]
pub(crate) fn version() -> (u32, u32, u32) {
    hipfile::API_VERSION
}

/// What the module runs on: the runtime's description, whether the GPU is emulated, whether
/// the driver is the C API's, and the devices.
#[pyfunction]
pub(crate) fn runtime_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
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
pub(crate) fn properties(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let p = driver().properties();
    Ok(fields!(py, p: version, poll_threshold_kb, max_direct_io_kb, status_flags, control_flags, feature_flags,
        max_device_cache_kb, per_buffer_cache_kb, max_pinned_kb, max_batch_io_count, max_batch_io_timeout_ms))
}

/// Every parameter: its name (the C enum's, less `hipFileParam`) and kind (`size`, `bool`,
/// `string`).
#[pyfunction]
pub(crate) fn parameter_names() -> Vec<(String, &'static str)> {
    let sizes = SizeParam::ALL.iter().map(|p| (format!("{p:?}"), "size"));
    let bools = BoolParam::ALL.iter().map(|p| (format!("{p:?}"), "bool"));
    sizes.chain(bools).chain(StringParam::ALL.iter().map(|p| (format!("{p:?}"), "string"))).collect()
}

pub(crate) enum Param {
    Size(SizeParam),
    Bool(BoolParam),
    String(StringParam),
}

pub(crate) fn param(name: &str) -> PyResult<Param> {
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
pub(crate) fn get_parameter(py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
    let d = driver();
    Ok(match param(name)? {
        Param::Size(p) => d.size_parameter(p).into_pyobject(py)?.into_any().unbind(),
        Param::Bool(p) => pyo3::types::PyBool::new(py, d.bool_parameter(p)).to_owned().into_any().unbind(),
        Param::String(p) => d.string_parameter(p).into_pyobject(py)?.into_any().unbind(),
    })
}

/// `hipFileSetParameter*`: stages `value` for the next open (the driver must be closed).
#[pyfunction]
pub(crate) fn set_parameter(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
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
pub(crate) fn handle_register(py: Python<'_>, fd: i32) -> PyResult<u64> {
    // SAFETY: as at the C boundary, the caller's contract: Python names descriptors by number
    // (`os.open`'s), and a number that is not open is EBADF.
    detached(py, || unsafe { driver().handle_register_raw(fd) }).map(|h| h.0)
}

/// The page-cache policy of one registered file (`"auto"`, `"keep"`, `"bypass"`; `None`: the
/// driver's), for its transfers from now on (semantics §16).
#[pyfunction]
#[pyo3(signature = (handle, setting = None))]
pub(crate) fn handle_set_page_cache(py: Python<'_>, handle: u64, setting: Option<&str>) -> PyResult<()> {
    let setting = match setting {
        None => None,
        Some(word) => Some(hipfile::PageCache::parse(word).ok_or_else(|| {
            PyValueError::new_err(format!("cache={word:?}: use one of {} (or None)", hipfile::PageCache::words()))
        })?),
    };
    driver().handle_set_page_cache(HandleId(handle), setting).map_err(|e| py_err(py, e))
}

/// Gives a registered file its own durability for writes (`None`: the driver's,
/// `HIPFILE_DURABLE_WRITES`), for its transfers from now on (semantics §5).
#[pyfunction]
#[pyo3(signature = (handle, durable = None))]
pub(crate) fn handle_set_durable(py: Python<'_>, handle: u64, durable: Option<bool>) -> PyResult<()> {
    driver().handle_set_durable(HandleId(handle), durable).map_err(|e| py_err(py, e))
}

/// The page-cache rule a read of the whole registered file would follow now, in words.
#[pyfunction]
pub(crate) fn page_cache_rule(py: Python<'_>, handle: u64) -> PyResult<String> {
    driver().page_cache_rule(HandleId(handle)).map(|rule| rule.to_string()).map_err(|e| py_err(py, e))
}

/// `hipFileHandleDeregister`.
#[pyfunction]
pub(crate) fn handle_deregister(py: Python<'_>, handle: u64) -> PyResult<()> {
    detached(py, || driver().handle_deregister(HandleId(handle)))
}

/// `hipFileBufRegister`.
#[pyfunction]
#[pyo3(signature = (addr, length, flags = 0))]
pub(crate) fn buf_register(py: Python<'_>, addr: usize, length: usize, flags: i32) -> PyResult<()> {
    detached(py, || driver().buf_register(addr, length, flags))
}

/// `hipFileBufDeregister`.
#[pyfunction]
pub(crate) fn buf_deregister(py: Python<'_>, addr: usize) -> PyResult<()> {
    detached(py, || driver().buf_deregister(addr))
}

pub(crate) fn totals<'py>(py: Python<'py>, t: hipfile::stats::Totals) -> PyResult<Bound<'py, PyDict>> {
    let d = fields!(py, t: ok, err, bytes, micros, unaligned);
    d.set_item("bytes_per_second", t.bandwidth())?;
    d.set_item("latency_avg_us", t.latency_avg_us())?;
    Ok(d)
}

/// The driver's statistics (semantics §14): level, per direction (all, and per path `p2p`,
/// `bounce`, `host`), size classes (level 2), per GPU (level 3), and the other counters.
#[pyfunction]
pub(crate) fn stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
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
pub(crate) fn capabilities(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
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
pub(crate) fn p2p_verdict(py: Python<'_>, handle: u64) -> PyResult<Vec<(String, Option<String>)>> {
    let verdicts = detached(py, || driver().p2p_verdict(HandleId(handle)))?;
    Ok(verdicts.into_iter().map(|(name, v)| (name.to_owned(), v.err().map(|why| why.0.into_owned()))).collect())
}

/// hipFile's code of an error name (`OpError` variant names, as the C header spells them less
/// the `hipFile` prefix), for the package's `OpError` enum.
#[pyfunction]
pub(crate) fn op_error_codes() -> Vec<(String, i32)> {
    OpError::ALL.iter().map(|e| (format!("{e:?}"), e.code())).collect()
}

/// The message hipFile gives for code `code`.
#[pyfunction]
pub(crate) fn op_error_message(code: i32) -> PyResult<&'static str> {
    OpError::from_code(code)
        .map(OpError::message)
        .ok_or_else(|| PyTypeError::new_err(format!("no hipFile code {code}")))
}
