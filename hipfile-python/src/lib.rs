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

use buffers::register_buffer;
use calls::*;
use futures::*;
use io::*;
use memory::*;
use remote::*;
use safetensors::*;
use streams::*;

/// The native half of the `hipfile` package.
#[pymodule]
fn _hipfile(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Future>()?;
    m.add_class::<StreamOp>()?;
    m.add_class::<Remote>()?;
    m.add_class::<RemoteUpload>()?;
    m.add_function(wrap_pyfunction!(remote_open, m)?)?;
    m.add_function(wrap_pyfunction!(remote_create, m)?)?;
    m.add_function(wrap_pyfunction!(remote_cached, m)?)?;
    m.add_function(wrap_pyfunction!(remote_cache_entries, m)?)?;
    m.add_function(wrap_pyfunction!(remote_list, m)?)?;
    m.add_function(wrap_pyfunction!(remote_delete, m)?)?;
    m.add_function(wrap_pyfunction!(remote_cache_flush, m)?)?;
    m.add_function(wrap_pyfunction!(is_url, m)?)?;
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
    m.add_function(wrap_pyfunction!(handle_set_durable, m)?)?;
    m.add_function(wrap_pyfunction!(device_extent, m)?)?;
    m.add_function(wrap_pyfunction!(page_cache_rule, m)?)?;
    m.add_function(wrap_pyfunction!(handle_deregister, m)?)?;
    m.add_function(wrap_pyfunction!(buf_register, m)?)?;
    m.add_function(wrap_pyfunction!(buf_deregister, m)?)?;
    m.add_function(wrap_pyfunction!(register_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(transfer, m)?)?;
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
    m.add_function(wrap_pyfunction!(safetensors_layout, m)?)?;
    Ok(())
}
