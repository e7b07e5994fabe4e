//! cuFile's C types that more than one library passes (`include/cufile.h`): ours, and NVIDIA's
//! as the runtime loader calls it.
#![allow(non_camel_case_types)]

use std::ffi::{c_int, c_void};

use crate::OpError;
use crate::hipfile_h::hipFileError_t;

/// `CUfileError_t`: a cuFile status (`CU_FILE_SUCCESS` = 0, else a `CUfileOpError`, 5000 + n,
/// the same numbers as hipFile's) and, with `CU_FILE_CUDA_DRIVER_ERROR`, the runtime's error.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUfileError_t {
    /// `CUfileOpError`.
    pub err: c_int,
    /// `CUresult`, when `err` is a CUDA driver error.
    pub cu_err: c_int,
}

impl CUfileError_t {
    /// `CU_FILE_SUCCESS`.
    pub const SUCCESS: Self = Self::code(0);

    /// A status with no runtime error.
    pub const fn code(err: c_int) -> Self {
        CUfileError_t { err, cu_err: 0 }
    }

    /// `op` as a cuFile status.
    pub const fn op(op: OpError) -> Self {
        Self::code(op.code())
    }

    /// `Ok` for `CU_FILE_SUCCESS`, else the error.
    pub fn check(self) -> Result<(), CUfileError_t> {
        if self.err == 0 { Ok(()) } else { Err(self) }
    }
}

/// hipFile's result is cuFile's: the same numbers, the runtime's error in the second member.
impl From<hipFileError_t> for CUfileError_t {
    fn from(e: hipFileError_t) -> Self {
        CUfileError_t { err: e.err, cu_err: e.hip_drv_err }
    }
}

impl std::fmt::Display for CUfileError_t {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // cuFile's codes are hipFile's (hipFile copied them), so hipFile's texts describe them.
        match OpError::from_code(self.err) {
            Some(op) => write!(f, "cuFile error {} ({})", self.err, op.message())?,
            None => write!(f, "cuFile error {}", self.err)?,
        }
        if self.cu_err != 0 { write!(f, ", CUDA driver error {}", self.cu_err) } else { Ok(()) }
    }
}

/// `CUfileDescr_t`: `{ CUfileFileHandleType type; union { int fd; void *handle; }; const
/// CUfileFSOps_t *fs_ops; }`.
#[repr(C)]
#[derive(Debug)]
pub struct CUfileDescr_t {
    /// `CU_FILE_HANDLE_TYPE_*`.
    pub r#type: c_int,
    /// The union `handle`: `fd` in its first 4 bytes for [`CU_FILE_HANDLE_TYPE_OPAQUE_FD`].
    pub handle: usize,
    /// `fs_ops`.
    pub fs_ops: *const c_void,
}

/// `CU_FILE_HANDLE_TYPE_OPAQUE_FD`: a file descriptor.
pub const CU_FILE_HANDLE_TYPE_OPAQUE_FD: c_int = 1;

/// `CUfileIOVec_t` (cuFile 1.19): one buffer of `cuFileReadv`/`cuFileWritev`, device or host
/// memory.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUfileIOVec_t {
    /// `base`.
    pub base: *mut c_void,
    /// `len`.
    pub len: usize,
}
