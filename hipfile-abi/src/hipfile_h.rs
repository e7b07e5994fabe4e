//! hipFile's C types that another library passes too (`include/hipfile.h`).
#![allow(non_camel_case_types)]

use std::ffi::{c_int, c_uint};

use crate::OpError;

/// `hipFileError_t`: returned by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct hipFileError_t {
    /// A `hipFileOpError_t`.
    pub err: c_int,
    /// The HIP runtime's error when `err` is `hipFileHipDriverError`, else `hipSuccess`.
    pub hip_drv_err: c_int,
}

impl hipFileError_t {
    /// `{hipFileSuccess, hipSuccess}`.
    pub const SUCCESS: hipFileError_t = hipFileError_t { err: 0, hip_drv_err: 0 };

    /// `{op, hipSuccess}`.
    pub const fn op(op: OpError) -> Self {
        hipFileError_t { err: op.code(), hip_drv_err: 0 }
    }
}

/// The `nvfs` member of `hipFileDriverProps_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hipFileDriverPropsNvfs {
    /// `major_version`.
    pub major_version: c_uint,
    /// `minor_version`.
    pub minor_version: c_uint,
    /// `poll_thresh_size` (KiB).
    pub poll_thresh_size: u64,
    /// `max_direct_io_size` (KiB).
    pub max_direct_io_size: u64,
    /// `driver_status_flags`.
    pub driver_status_flags: c_uint,
    /// `driver_control_flags`.
    pub driver_control_flags: c_uint,
}

/// `hipFileDriverProps_t` (sizes in KiB).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hipFileDriverProps_t {
    /// `nvfs`.
    pub nvfs: hipFileDriverPropsNvfs,
    /// `feature_flags`.
    pub feature_flags: c_uint,
    /// `max_device_cache_size`.
    pub max_device_cache_size: u64,
    /// `per_buffer_cache_size`.
    pub per_buffer_cache_size: u64,
    /// `max_device_pinned_mem_size`.
    pub max_device_pinned_mem_size: u64,
    /// `max_batch_io_count`.
    pub max_batch_io_count: c_uint,
    /// `max_batch_io_timeout_msecs`.
    pub max_batch_io_timeout_msecs: c_uint,
}
