//! What every call of the module shares: the driver and runtime it uses, errors as Python
//! exceptions, the GIL let go around blocking work, a request checked against its buffer.

use std::sync::{Arc, OnceLock};

use hipfile::{Direction, Driver, Error, GpuRuntime, SystemPlatform};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

/// The driver this module uses (see the crate docs).
pub(crate) fn driver() -> &'static Driver<SystemPlatform> {
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

pub(crate) fn gpu() -> &'static Arc<dyn GpuRuntime> {
    driver().gpu()
}

/// A Rust error as the Python exception the package raises for it.
pub(crate) fn py_err(py: Python<'_>, e: Error) -> PyErr {
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
pub(crate) fn detached<T: Send>(py: Python<'_>, body: impl FnOnce() -> hipfile::Result<T> + Send) -> PyResult<T> {
    py.detach(body).map_err(|e| py_err(py, e))
}

/// `size` bytes at `offset` must lie inside a buffer of `extent` bytes (what the buffer object
/// holds from the address given).
pub(crate) fn check_extent(extent: usize, size: usize, offset: i64) -> PyResult<()> {
    let end = u64::try_from(offset).ok().and_then(|o| o.checked_add(size as u64));
    if end.is_some_and(|end| end <= extent as u64) {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "{size} bytes at buffer offset {offset} do not fit in a buffer of {extent} bytes"
    )))
}

pub(crate) fn direction(write: bool) -> Direction {
    if write { Direction::Write } else { Direction::Read }
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

/// Adds each `#[pyfunction]` named to the module `m`: how a topic's `register` lists its calls,
/// `add_functions!(m, read, write)`.
macro_rules! add_functions {
    ($m:expr, $($function:ident),+ $(,)?) => {{
        $($m.add_function(pyo3::wrap_pyfunction!($function, $m)?)?;)+
    }};
}
pub(crate) use add_functions;
