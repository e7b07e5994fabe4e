//! cuFile's slab arrays: the POSIX pool's (the staging its compatibility mode reads through) and,
//! since cuFile 1.17, the GPU bounce buffers'. Kept and read back (docs/cufile.md); the bounce
//! path's staging is set by its own parameters.

use std::ffi::c_int;
use std::sync::Mutex;

use crate::status::*;
use crate::{CUfileError_t, PANICKED, UNSERVED, api, guard};

/// Slab sizes (KiB) and counts, as set.
type Slabs = Option<(Vec<usize>, Vec<usize>)>;

/// The POSIX pool, where set.
static POSIX_POOL: Mutex<Slabs> = Mutex::new(None);
/// The GPU bounce buffers, where set (none by default: reading them is `CU_FILE_INVALID_VALUE`
/// until they are, as cuFile 1.20 answers without a `cufile.json` that sets them).
static GPU_BOUNCE: Mutex<Slabs> = Mutex::new(None);

/// cuFile's default POSIX pool: 4 KiB, 1 MiB and 16 MiB slabs.
const DEFAULT_POOL: ([usize; 3], [usize; 3]) = ([4, 1024, 16384], [128, 64, 64]);

/// The most slab kinds an array takes here.
const MAX_SLABS: usize = 64;

/// What an array's values must be beyond being above 0.
#[derive(Clone, Copy)]
enum Rule {
    /// The POSIX pool: any sizes.
    Any,
    /// GPU bounce buffers: sizes multiples of 4 KiB, ascending.
    AlignedAscending,
}

/// Stages `len` sizes and counts into `slot`: `CU_FILE_INVALID_VALUE` for null pointers, a
/// length outside 1 to 64 or values `rule` refuses, `CU_FILE_DRIVER_ALREADY_OPEN` while the
/// driver is open (which cuFile 1.20 checks before the values: a valid array and an invalid one
/// get the same answer then).
///
/// # Safety
/// `sizes` and `counts` must each be null or readable for `len` values.
unsafe fn set(slot: &Mutex<Slabs>, rule: Rule, sizes: *const usize, counts: *const usize, len: c_int) -> CUfileError_t {
    let n = match usize::try_from(len) {
        Ok(n @ 1..=MAX_SLABS) if !sizes.is_null() && !counts.is_null() => n,
        _ => return CUfileError_t::code(INVALID_VALUE),
    };
    let Some(api) = api() else { return UNSERVED };
    // SAFETY: no arguments.
    if unsafe { (api.use_count)() } > 0 {
        return CUfileError_t::code(DRIVER_ALREADY_OPEN);
    }
    // SAFETY: non-null, `len` readable values by the caller's contract.
    let sizes = unsafe { std::slice::from_raw_parts(sizes, n) };
    // SAFETY: as above.
    let counts = unsafe { std::slice::from_raw_parts(counts, n) };
    let valid = sizes.iter().chain(counts).all(|&v| v > 0)
        && match rule {
            Rule::Any => true,
            Rule::AlignedAscending => sizes.iter().all(|s| s % 4 == 0) && sizes.windows(2).all(|w| w[0] < w[1]),
        };
    if !valid {
        return CUfileError_t::code(INVALID_VALUE);
    }
    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((sizes.to_vec(), counts.to_vec()));
    CUfileError_t::SUCCESS
}

/// The array in `slot` (else `default`, where there is one) into `sizes` and `counts`, `len`
/// being their number exactly (`CU_FILE_INVALID_VALUE` otherwise, as cuFile answers).
///
/// # Safety
/// `sizes` and `counts` must each be null or writable for `len` values.
unsafe fn get(
    slot: &Mutex<Slabs>,
    default: Option<(&[usize], &[usize])>,
    sizes: *mut usize,
    counts: *mut usize,
    len: c_int,
) -> CUfileError_t {
    let set = slot.lock().unwrap_or_else(|p| p.into_inner());
    let Some((have_sizes, have_counts)) = set.as_ref().map(|(s, c)| (s.as_slice(), c.as_slice())).or(default) else {
        return CUfileError_t::code(INVALID_VALUE);
    };
    if sizes.is_null() || counts.is_null() || usize::try_from(len) != Ok(have_sizes.len()) {
        return CUfileError_t::code(INVALID_VALUE);
    }
    // SAFETY: non-null, writable for `len` values by the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(have_sizes.as_ptr(), sizes, have_sizes.len()) };
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(have_counts.as_ptr(), counts, have_counts.len()) };
    CUfileError_t::SUCCESS
}

/// `cuFileSetParameterPosixPoolSlabArray`: stages the POSIX pool's slab sizes and counts.
///
/// # Safety
/// `sizes` and `counts` must each be null or readable for `len` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileSetParameterPosixPoolSlabArray(
    sizes: *const usize,
    counts: *const usize,
    len: c_int,
) -> CUfileError_t {
    // SAFETY: the caller's contract.
    guard(PANICKED, || unsafe { set(&POSIX_POOL, Rule::Any, sizes, counts, len) })
}

/// `cuFileGetParameterPosixPoolSlabArray`: the POSIX pool's slab sizes and counts (cuFile's
/// default pool until set).
///
/// # Safety
/// `sizes` and `counts` must each be null or writable for `len` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetParameterPosixPoolSlabArray(
    sizes: *mut usize,
    counts: *mut usize,
    len: c_int,
) -> CUfileError_t {
    let default = Some((&DEFAULT_POOL.0[..], &DEFAULT_POOL.1[..]));
    // SAFETY: the caller's contract.
    guard(PANICKED, || unsafe { get(&POSIX_POOL, default, sizes, counts, len) })
}

/// `cuFileSetParameterGpuBounceBufferSlabArray` (cuFile 1.17): stages the GPU bounce buffers'
/// slab sizes (KiB, multiples of 4, ascending) and counts.
///
/// # Safety
/// `sizes` and `counts` must each be null or readable for `len` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileSetParameterGpuBounceBufferSlabArray(
    sizes: *const usize,
    counts: *const usize,
    len: c_int,
) -> CUfileError_t {
    // SAFETY: the caller's contract.
    guard(PANICKED, || unsafe { set(&GPU_BOUNCE, Rule::AlignedAscending, sizes, counts, len) })
}

/// `cuFileGetParameterGpuBounceBufferSlabArray` (cuFile 1.17): the GPU bounce buffers' slab
/// sizes and counts as set; `CU_FILE_INVALID_VALUE` until they are.
///
/// # Safety
/// `sizes` and `counts` must each be null or writable for `len` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetParameterGpuBounceBufferSlabArray(
    sizes: *mut usize,
    counts: *mut usize,
    len: c_int,
) -> CUfileError_t {
    // SAFETY: the caller's contract.
    guard(PANICKED, || unsafe { get(&GPU_BOUNCE, None, sizes, counts, len) })
}
