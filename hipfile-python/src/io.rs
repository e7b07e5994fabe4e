//! Synchronous reads and writes: by address and extent, and into or from an object exporting
//! the buffer protocol.

use hipfile::HandleId;
use pyo3::prelude::*;

use crate::common::*;
use crate::futures::*;

/// `hipFileRead` (`write` false) or `hipFileWrite` of `size` bytes (`None`: the rest of the
/// buffer) at `file_offset`, into or from `[addr + buf_offset, ...)`, which must lie inside
/// `[addr, addr + extent)` ([`fitted`]). The bytes moved (fewer only at end of file): a
/// transfer longer than one call may move ([`hipfile::max_rw_count`]) runs as several calls.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn transfer(
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

/// CPython's buffer protocol, declared here: PyO3 leaves it out of the stable ABI before 3.11
/// (it joined the limited API then), but the calls and `Py_buffer`'s layout are the same in
/// every CPython 3 this package supports.
pub(crate) mod buffer_protocol {
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
pub(crate) struct HostBuffer {
    pub(crate) view: buffer_protocol::PyBuffer,
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
pub(crate) fn transfer_buffer(
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
