//! What `libhipfile.so.0` exports for `libcufile.so.0` alone, under `hipfile_rs_cufile_` names
//! that no header declares (docs/cufile.md): cuFile's statistics controls and parameter ranges,
//! so that cuFile's calls and hipFile's share one driver. hipfile-capi defines each function and
//! checks it against the type here; hipfile-cufile looks each up by the name here, with that
//! type.

use std::ffi::{CStr, c_int, c_void};

use crate::hipfile_h::hipFileError_t;

/// Sets the statistics level (0 to 3) or, given a negative one, asks it; the level in effect
/// after the call, or -1 for a level out of range.
pub const STATS_LEVEL: &CStr = c"hipfile_rs_cufile_stats_level";
/// [`STATS_LEVEL`]'s type.
pub type StatsLevel = unsafe extern "C" fn(level: c_int) -> c_int;

/// Counts the statistics from zero again.
pub const STATS_RESET: &CStr = c"hipfile_rs_cufile_stats_reset";
/// [`STATS_RESET`]'s type.
pub type StatsReset = unsafe extern "C" fn();

/// The values a size parameter takes, in `*min` and `*max`.
pub const PARAMETER_RANGE: &CStr = c"hipfile_rs_cufile_parameter_range";
/// [`PARAMETER_RANGE`]'s type.
pub type ParameterRange = unsafe extern "C" fn(param: c_int, min: *mut usize, max: *mut usize) -> hipFileError_t;

/// cuFile's vector I/O (`cuFileReadv` where `write` is 0, `cuFileWritev` otherwise): `iovcnt`
/// buffers of `iov`, in order, to or from the file of handle `fh` from `file_offset` on, with
/// cuFile's `flags`. Bytes moved; -1 with `errno`, or a negative status, as `hipFileRead`.
pub const VECTOR_IO: &CStr = c"hipfile_rs_cufile_vector_io";
/// [`VECTOR_IO`]'s type.
pub type VectorIo = unsafe extern "C" fn(
    write: c_int,
    fh: *mut c_void,
    iov: *const crate::cufile_h::CUfileIOVec_t,
    iovcnt: usize,
    file_offset: i64,
    flags: std::ffi::c_uint,
) -> isize;

/// One direction of vector I/O as counted: calls that moved bytes and that failed, the bytes,
/// the time spent (µs), and the figures derived from them as the statistics derive them for
/// reads and writes (semantics §14).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorTotals {
    /// Calls that succeeded.
    pub ok: u64,
    /// Calls that failed.
    pub err: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Time spent in the calls, µs.
    pub micros: u64,
    /// Bytes per second of that time.
    pub bandwidth: u64,
    /// Average time of a successful call, µs.
    pub latency_avg_us: u64,
    /// Successful calls per second of that time.
    pub ops_per_second: u64,
}

/// The vector I/O counted so far (where statistics are on), into `*readv` and `*writev`.
pub const VECTOR_STATS: &CStr = c"hipfile_rs_cufile_vector_stats";
/// [`VECTOR_STATS`]'s type.
pub type VectorStats = unsafe extern "C" fn(readv: *mut VectorTotals, writev: *mut VectorTotals);

/// Every hook's name.
pub const ALL: [&CStr; 5] = [STATS_LEVEL, STATS_RESET, PARAMETER_RANGE, VECTOR_IO, VECTOR_STATS];
