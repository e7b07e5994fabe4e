//! cuFile's statistics: its levels, start/stop/reset controls, the three levels' reads, and the
//! BAR size (docs/cufile.md).

use std::ffi::{c_int, c_void};

use crate::status::*;
use crate::{Api, CUfileError_t, PANICKED, UNSERVED, api, guard};

/// `cuFileSetStatsLevel`: 0 to 3 (`CU_FILE_INVALID_VALUE` otherwise), in effect at once; set
/// while the driver is closed, also for the next open (while it is open, until it closes).
#[unsafe(no_mangle)]
pub extern "C" fn cuFileSetStatsLevel(level: c_int) -> CUfileError_t {
    guard(PANICKED, || match api() {
        _ if !(0..=3).contains(&level) => CUfileError_t::code(INVALID_VALUE),
        Some(api) => {
            // SAFETY: the hook takes any level (and this one is in range).
            unsafe { (api.stats_level)(level) };
            CUfileError_t::SUCCESS
        }
        None => UNSERVED,
    })
}

/// `cuFileGetStatsLevel`: the level in effect.
///
/// # Safety
/// `level` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetStatsLevel(level: *mut c_int) -> CUfileError_t {
    guard(PANICKED, || match (api(), level.is_null()) {
        (None, _) => UNSERVED,
        (_, true) => CUfileError_t::code(INVALID_VALUE),
        (Some(api), false) => {
            // SAFETY: a negative level only asks.
            let now = unsafe { (api.stats_level)(-1) };
            // SAFETY: non-null, writable by the caller's contract.
            unsafe { level.write(now) };
            CUfileError_t::SUCCESS
        }
    })
}

/// The statistics level in effect.
fn level(api: &Api) -> c_int {
    // SAFETY: a negative level only asks.
    unsafe { (api.stats_level)(-1) }
}

/// `cuFileStatsStart`: statistics are counted at the level set; at level 0 (after
/// `cuFileStatsStop`, say) `CU_FILE_INTERNAL_ERROR`, as cuFile 1.15 answers.
#[unsafe(no_mangle)]
pub extern "C" fn cuFileStatsStart() -> CUfileError_t {
    guard(PANICKED, || match api() {
        None => UNSERVED,
        Some(api) if level(api) > 0 => CUfileError_t::SUCCESS,
        Some(_) => CUfileError_t::code(INTERNAL_ERROR),
    })
}

/// `cuFileStatsStop`: stops counting (the level becomes 0).
#[unsafe(no_mangle)]
pub extern "C" fn cuFileStatsStop() -> CUfileError_t {
    guard(PANICKED, || match api() {
        None => UNSERVED,
        Some(api) => {
            // SAFETY: 0 is a level the hook takes.
            unsafe { (api.stats_level)(0) };
            CUfileError_t::SUCCESS
        }
    })
}

/// `cuFileStatsReset`: the counters start from zero again (for this process's reads).
#[unsafe(no_mangle)]
pub extern "C" fn cuFileStatsReset() -> CUfileError_t {
    guard(PANICKED, || match api() {
        None => UNSERVED,
        Some(api) => {
            // SAFETY: no arguments.
            unsafe { (api.stats_reset)() };
            CUfileError_t::SUCCESS
        }
    })
}

/// The statistics of `level` (1 to 3) into `out` through `get`: `CU_FILE_INVALID_VALUE` when
/// counting is below that level or `out` is null, as cuFile answers.
///
/// # Safety
/// `out` must be null or writable for the level's structure.
unsafe fn stats_at(
    level: c_int,
    out: *mut c_void,
    get: fn(&Api) -> unsafe extern "C" fn(*mut c_void) -> CUfileError_t,
) -> CUfileError_t {
    guard(PANICKED, || match api() {
        None => UNSERVED,
        Some(api) if out.is_null() || self::level(api) < level => CUfileError_t::code(INVALID_VALUE),
        // SAFETY: the caller's contract: the structures are hipFile's, with the same layout.
        Some(api) => unsafe { get(api)(out) },
    })
}

/// `cuFileGetStatsL1`: needs statistics at level 1 or more.
///
/// # Safety
/// `stats` must be null or writable for a `CUfileStatsLevel1_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetStatsL1(stats: *mut c_void) -> CUfileError_t {
    // SAFETY: the caller's contract.
    unsafe { stats_at(1, stats, |a| a.stats_l1) }
}

/// `cuFileGetStatsL2`: needs level 2 or more.
///
/// # Safety
/// `stats` must be null or writable for a `CUfileStatsLevel2_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetStatsL2(stats: *mut c_void) -> CUfileError_t {
    // SAFETY: the caller's contract.
    unsafe { stats_at(2, stats, |a| a.stats_l2) }
}

/// `cuFileGetStatsL3`: needs level 3.
///
/// # Safety
/// `stats` must be null or writable for a `CUfileStatsLevel3_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetStatsL3(stats: *mut c_void) -> CUfileError_t {
    // SAFETY: the caller's contract.
    unsafe { stats_at(3, stats, |a| a.stats_l3) }
}

/// `cuFileGetBARSizeInKB`: the GPU's BAR is what a direct path maps; there is none here, so a
/// valid call is `CU_FILE_PLATFORM_NOT_SUPPORTED` (a negative index or null pointer:
/// `CU_FILE_INVALID_VALUE`).
///
/// # Safety
/// `bar_size` must be null or writable (it is never written).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetBARSizeInKB(gpu_index: c_int, bar_size: *mut usize) -> CUfileError_t {
    if gpu_index < 0 || bar_size.is_null() {
        return CUfileError_t::code(INVALID_VALUE);
    }
    CUfileError_t::code(PLATFORM_NOT_SUPPORTED)
}
