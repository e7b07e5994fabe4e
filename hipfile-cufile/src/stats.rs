//! cuFile's statistics: its levels, start/stop/reset controls, the three levels' reads in the
//! layout of the version served (1.15's or 1.19's), and the BAR size (docs/cufile.md).

use std::ffi::{c_int, c_void};

use crate::status::*;
use hipfile_abi::hooks::VectorTotals;

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

/// The statistics layouts: hipFile's (cuFile 1.15's) and cuFile 1.19's, which appends vector
/// I/O's counters to level 1, so that level 2's histograms and level 3's per-GPU figures move.
pub mod layout {
    /// Level 1 up to cuFile 1.18 (and hipFile's `hipFileStatsLevel1_t`), bytes.
    pub const L1_115: usize = 512;
    /// What cuFile 1.19 appends to level 1: 14 words of vector I/O.
    pub const VECTOR: usize = 14 * 8;
    /// Level 2's histograms (two of 32 words).
    pub const HISTOGRAMS: usize = 2 * 32 * 8;
    /// Level 3's tail: `num_gpus` (padded to 8 bytes) and 16 `CUfilePerGpuStats_t` of 248.
    pub const PER_GPU: usize = 8 + 16 * 248;

    /// The size of level `level`'s structure with vector I/O's words (`vector`) or without.
    pub const fn size(level: u8, vector: bool) -> usize {
        let l1 = L1_115 + if vector { VECTOR } else { 0 };
        match level {
            1 => l1,
            2 => l1 + HISTOGRAMS,
            _ => l1 + HISTOGRAMS + PER_GPU,
        }
    }
}

/// cuFile 1.19's vector I/O words of level 1, in its order: `readv_ops`, `writev_ops` (ok,
/// err), bytes, bandwidth, average latency, operations per second and latency sum, each read
/// then write.
pub fn vector_words(readv: &VectorTotals, writev: &VectorTotals) -> [u64; 14] {
    [
        readv.ok,
        readv.err,
        writev.ok,
        writev.err,
        readv.bytes,
        writev.bytes,
        readv.bandwidth,
        writev.bandwidth,
        readv.latency_avg_us,
        writev.latency_avg_us,
        readv.ops_per_second,
        writev.ops_per_second,
        readv.micros,
        writev.micros,
    ]
}

/// Level `level`'s statistics in the served version's layout (`vector`: 1.19's): hipFile's
/// structure with the vector words put in after level 1.
fn assemble(api: &Api, level: u8, vector: bool) -> Result<Vec<u8>, CUfileError_t> {
    // hipFile's level-3 structure holds the other levels' (as their first bytes), u64-aligned.
    let mut words = vec![0u64; layout::size(3, false) / 8];
    let get = match level {
        1 => api.stats_l1,
        2 => api.stats_l2,
        _ => api.stats_l3,
    };
    // SAFETY: a writable buffer as large as hipFile's largest statistics structure.
    let e = unsafe { get(words.as_mut_ptr().cast()) };
    if e != CUfileError_t::SUCCESS {
        return Err(e);
    }
    let hip: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).take(layout::size(level, false)).collect();
    if !vector {
        return Ok(hip);
    }
    let (mut readv, mut writev) = (VectorTotals::default(), VectorTotals::default());
    // SAFETY: two writable totals.
    unsafe { (api.vector_stats)(&mut readv, &mut writev) };
    let mut out = hip[..layout::L1_115].to_vec();
    out.extend(vector_words(&readv, &writev).iter().flat_map(|w| w.to_ne_bytes()));
    out.extend_from_slice(&hip[layout::L1_115..]);
    Ok(out)
}

/// The statistics of `level` (1 to 3) into `out`, in the layout of the cuFile version served
/// ([`crate::served_version`]): `CU_FILE_INVALID_VALUE` when counting is below that level or
/// `out` is null, as cuFile answers.
///
/// # Safety
/// `out` must be null or writable for the level's structure of the version served.
unsafe fn stats_at(level: u8, out: *mut c_void) -> CUfileError_t {
    guard(PANICKED, || match api() {
        None => UNSERVED,
        Some(api) if out.is_null() || self::level(api) < c_int::from(level) => CUfileError_t::code(INVALID_VALUE),
        Some(api) => match assemble(api, level, crate::served_version() >= 1190) {
            Ok(bytes) => {
                // SAFETY: writable for the structure of the version served, which is
                // `bytes.len()` long, by the caller's contract.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len()) };
                CUfileError_t::SUCCESS
            }
            Err(e) => e,
        },
    })
}

/// `cuFileGetStatsL1`: needs statistics at level 1 or more.
///
/// # Safety
/// `stats` must be null or writable for a `CUfileStatsLevel1_t` of the version served.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetStatsL1(stats: *mut c_void) -> CUfileError_t {
    // SAFETY: the caller's contract.
    unsafe { stats_at(1, stats) }
}

/// `cuFileGetStatsL2`: needs level 2 or more.
///
/// # Safety
/// `stats` must be null or writable for a `CUfileStatsLevel2_t` of the version served.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetStatsL2(stats: *mut c_void) -> CUfileError_t {
    // SAFETY: the caller's contract.
    unsafe { stats_at(2, stats) }
}

/// `cuFileGetStatsL3`: needs level 3.
///
/// # Safety
/// `stats` must be null or writable for a `CUfileStatsLevel3_t` of the version served.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetStatsL3(stats: *mut c_void) -> CUfileError_t {
    // SAFETY: the caller's contract.
    unsafe { stats_at(3, stats) }
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
