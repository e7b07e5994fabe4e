//! Stream-ordered reads and writes (`hipFileReadAsync`/`WriteAsync`), and the streams they
//! run on.

use std::sync::{Arc, Mutex};

use hipfile::boundary::sync::lock;
use hipfile::{AsyncParams, HandleId, Stream, StreamIo};
use pyo3::prelude::*;

use crate::buffers::{Fitted, Req, fit};
use crate::common::*;

/// Adds this file's calls (and classes) to the native module: a `#[pyfunction]` here is named here.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StreamOp>()?;
    add_functions!(
        m,
        stream_submit,
        stream_register,
        stream_deregister,
        stream_create,
        stream_synchronize,
        stream_destroy,
    );
    Ok(())
}

/// A stream-ordered operation's values and result (core's [`StreamIo`]), with the buffer
/// object held until the stream has run it, whatever becomes of the Python object returned.
pub(crate) struct StreamValues {
    pub(crate) io: StreamIo,
    pub(crate) keep: Mutex<Option<Py<PyAny>>>,
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
pub(crate) struct StreamOp {
    pub(crate) values: Arc<StreamValues>,
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

/// Queues a read or write of the request `(buffer, size, file_offset, buf_offset)` ([`Req`]) on
/// `stream` (a stream handle as an int): it runs when the stream gets there. It must lie inside
/// the buffer's memory (`upstream`: named as the upstream-shaped API names it,
/// [`crate::buffers`]), which is held until it has run.
#[pyfunction]
#[pyo3(signature = (write, handle, req, stream, upstream = false))]
pub(crate) fn stream_submit(
    py: Python<'_>,
    write: bool,
    handle: u64,
    req: Req<'_>,
    stream: usize,
    upstream: bool,
) -> PyResult<StreamOp> {
    let Fitted { memory, size, file_offset, buf_offset } = fit(&req, write, upstream)?;
    let addr = memory.addr;
    let keep = memory.keep(py)?;
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
pub(crate) fn stream_of(raw: usize) -> Stream {
    // SAFETY: as at the C boundary, the caller vouches that the int is a stream of the runtime
    // in use (or 0) that lives while it is used: Python cannot name streams otherwise.
    unsafe { Stream::from_raw(raw) }
}

/// `hipFileStreamRegister`.
#[pyfunction]
pub(crate) fn stream_register(py: Python<'_>, stream: usize, flags: u32) -> PyResult<()> {
    detached(py, || driver().stream_register(stream_of(stream), flags))
}

/// `hipFileStreamDeregister`.
#[pyfunction]
pub(crate) fn stream_deregister(py: Python<'_>, stream: usize) -> PyResult<()> {
    detached(py, || driver().stream_deregister(stream_of(stream)))
}

/// A new stream of the runtime the module uses, as an int.
#[pyfunction]
pub(crate) fn stream_create(py: Python<'_>) -> PyResult<usize> {
    detached(py, || Ok(gpu().stream_create()?.as_raw()))
}

/// Waits for the work queued on `stream`.
#[pyfunction]
pub(crate) fn stream_synchronize(py: Python<'_>, stream: usize) -> PyResult<()> {
    detached(py, || Ok(gpu().stream_synchronize(stream_of(stream))?))
}

/// Destroys a stream made by [`stream_create`].
#[pyfunction]
pub(crate) fn stream_destroy(py: Python<'_>, stream: usize) -> PyResult<()> {
    detached(py, || Ok(gpu().stream_destroy(stream_of(stream))?))
}
