//! AMD's storage entry points (AIS, semantics §7): `hipAmdFileRead` and `hipAmdFileWrite`, which
//! a HIP runtime hands out through `hipGetProcAddress` (see `LoadedRuntime::proc_address`).

use std::ffi::{c_int, c_void};

/// `hipAmdFileHandle_t` (semantics §7): `union { void *handle; int fd; uint8_t pad[8]; }`, passed
/// by value to AMD's storage entry points; hipFile puts the `O_DIRECT` descriptor in `fd`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union AmdFileHandle {
    /// Unused by hipFile.
    pub handle: *mut c_void,
    /// The `O_DIRECT` descriptor.
    pub fd: c_int,
    /// The union's size.
    pub pad: [u8; 8],
}

/// `hipError_t hipAmdFileRead/Write(hipAmdFileHandle_t, void *devicePtr, uint64_t size,
/// int64_t file_offset, uint64_t *size_copied, int32_t *status)`, handed out by
/// `hipGetProcAddress` (semantics §7).
pub type AmdFileIo = unsafe extern "C" fn(AmdFileHandle, *mut c_void, u64, i64, *mut u64, *mut i32) -> c_int;
