//! What `libcufile.so.0` (the `hipfile-cufile` crate) needs of the process's driver beyond
//! hipFile's API: cuFile's statistics controls and parameter ranges (docs/cufile.md). Exported
//! under `hipfile_rs_cufile_` names, which no header declares: that library finds them here at
//! run time, so that cuFile's calls and hipFile's share one driver. The names and types are
//! hipfile-abi's (`hooks`); each function here is checked against its type below.

use std::ffi::c_int;

use hipfile::{OpError, SizeParam};

use hipfile_abi::hooks;

use crate::driver;
use crate::ffi::{boundary, hipFileError_t};

/// The statistics level in effect when `level` is negative; otherwise sets it (0 to 3) at
/// once, and where the driver is closed also for the next open (as `hipFileParamProfileStats`,
/// which a closed driver stages; an open driver's level lasts until it closes). Returns the
/// level in effect after the call, or -1 for a level out of range (nothing changes).
#[unsafe(no_mangle)]
pub extern "C" fn hipfile_rs_cufile_stats_level(level: c_int) -> c_int {
    boundary(|| {
        let d = driver();
        match u8::try_from(level) {
            Err(_) if level < 0 => {}
            Ok(level) if level <= 3 => {
                d.stats().set_level(level);
                // Staged while closed (the next open applies it); an open driver refuses, and
                // has the level already.
                let _ = d.set_size_parameter(SizeParam::ProfileStats, level as usize);
            }
            _ => return -1,
        }
        c_int::from(d.stats().level())
    })
}

/// Counts the statistics from zero again, for what this process reads (semantics §14).
#[unsafe(no_mangle)]
pub extern "C" fn hipfile_rs_cufile_stats_reset() {
    boundary(|| driver().stats().reset())
}

/// The values size parameter `param` takes, in `*min` and `*max`: `hipFileInvalidValue` for an
/// unknown parameter or a null pointer.
///
/// # Safety
/// `min` and `max` must each be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfile_rs_cufile_parameter_range(
    param: c_int,
    min: *mut usize,
    max: *mut usize,
) -> hipFileError_t {
    boundary(|| match SizeParam::from_raw(param) {
        Some(p) if !min.is_null() && !max.is_null() => {
            let range = hipfile::size_range(p);
            // SAFETY: non-null, and writable by the caller's contract.
            unsafe { min.write(*range.start()) };
            // SAFETY: as above.
            unsafe { max.write(*range.end()) };
            hipFileError_t::SUCCESS
        }
        _ => hipFileError_t::op(OpError::InvalidValue),
    })
}

// Each hook has the type hipfile-abi gives it, the one libcufile.so.0 looks it up with.
const _: hooks::StatsLevel = hipfile_rs_cufile_stats_level;
const _: hooks::StatsReset = hipfile_rs_cufile_stats_reset;
const _: hooks::ParameterRange = hipfile_rs_cufile_parameter_range;
