//! hipfile-python: the Python boundary, the native module `hipfile._hipfile`. It converts
//! Python's values into the Rust API's and back and holds no rule of its own. Buffer objects
//! (CUDA array interface, DLPack, PyTorch tensors, the buffer protocol) are resolved here, in
//! one place (`src/buffers.rs`), into an address and the extent of the memory behind it, and every
//! call checks the request against that extent before any I/O (a buffer too small is a
//! `ValueError`, never a write past its end).
//!
//! The driver is the C API's process-wide one (`hipfile_capi::driver`), so Python and C calls
//! in one process share its use count, registries and statistics. Where the process has no GPU
//! runtime at all, that driver cannot open; the module then drives one of its own over the
//! mock GPU (a GPU emulated in host memory), so the package works on any machine.
//!
//! Every call that can block releases the GIL; errors are `OSError` (with `errno`) or the
//! package's `HipFileException` (with hipFile's code and the HIP error).

mod buffers;
mod calls;
mod common;
mod futures;
mod io;
mod memory;
mod remote;
mod safetensors;
mod streams;

use pyo3::prelude::*;

/// The native half of the `hipfile` package: each topic adds its own calls and classes (its
/// `register`, under its imports).
#[pymodule]
fn _hipfile(m: &Bound<'_, PyModule>) -> PyResult<()> {
    calls::register(m)?;
    io::register(m)?;
    futures::register(m)?;
    streams::register(m)?;
    buffers::register(m)?;
    memory::register(m)?;
    remote::register(m)?;
    safetensors::register(m)?;
    Ok(())
}
