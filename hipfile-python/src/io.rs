//! Synchronous reads and writes.

use hipfile::HandleId;
use pyo3::prelude::*;

use crate::buffers::{Req, fit};
use crate::common::*;

/// Adds this file's calls (and classes) to the native module: a `#[pyfunction]` here is named here.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_RW_COUNT", hipfile::max_rw_count())?;
    add_functions!(m, transfer);
    Ok(())
}

/// `hipFileRead` (`write` false) or `hipFileWrite` of the request `(buffer, size, file_offset,
/// buf_offset)` ([`Req`]; `size` `None`: the rest of the buffer): it must lie inside the memory
/// the object holds ([`crate::buffers`]; `upstream`: named as the upstream-shaped API names
/// it). The bytes moved (fewer only at end of file): a transfer longer than one call may move
/// ([`hipfile::max_rw_count`]) runs as several calls.
#[pyfunction]
#[pyo3(signature = (write, handle, req, upstream = false))]
pub(crate) fn transfer(py: Python<'_>, write: bool, handle: u64, req: Req<'_>, upstream: bool) -> PyResult<usize> {
    let f = fit(&req, write, upstream)?;
    // SAFETY: the range lies inside the memory the buffer object holds (checked by `fit`), held
    // (`f.memory`) until this returns; device memory is also checked by the driver.
    let done = unsafe { transfer_all(py, write, handle, f.memory.addr, f.size, f.file_offset, f.buf_offset) };
    drop(f);
    done
}

/// [`transfer`]'s calls, one after another until `size` bytes have moved or the file ended.
///
/// # Safety
/// `[addr + buf_offset, addr + buf_offset + size)` lies inside memory that stays valid for
/// the call (host memory, or device memory the driver checks).
pub(crate) unsafe fn transfer_all(
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
