//! What the runtimes' entry points share: their status (`hipError_t` / `cudaError_t`), their
//! stream handle, and the status as a `Result`.

use std::ffi::{c_int, c_void};

use hipfile_core::HipError;

/// `hipError_t` / `cudaError_t`.
pub(crate) type HipResult = c_int;
/// `hipStream_t` / `cudaStream_t`.
pub(crate) type RawStream = *mut c_void;

/// A runtime call's status: `Ok` for success (0), else the runtime's code unchanged.
pub(crate) fn check(rc: HipResult) -> Result<(), HipError> {
    if rc == 0 { Ok(()) } else { Err(HipError(rc)) }
}
