//! What `libhipfile.so.0` exports for `libcufile.so.0` alone, under `hipfile_rs_cufile_` names
//! that no header declares (docs/cufile.md): cuFile's statistics controls and parameter ranges,
//! so that cuFile's calls and hipFile's share one driver. hipfile-capi defines each function and
//! checks it against the type here; hipfile-cufile looks each up by the name here, with that
//! type.

use std::ffi::{CStr, c_int};

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

/// Every hook's name.
pub const ALL: [&CStr; 3] = [STATS_LEVEL, STATS_RESET, PARAMETER_RANGE];
