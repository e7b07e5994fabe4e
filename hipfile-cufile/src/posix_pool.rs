//! cuFile's POSIX pool parameters: kept and read back (docs/cufile.md).

use std::ffi::c_int;
use std::sync::Mutex;

use crate::status::*;
use crate::{CUfileError_t, PANICKED, UNSERVED, api, guard};

/// cuFile's POSIX pool (the staging its compatibility mode reads through): slab sizes (KiB)
/// and counts. Kept and read back; the bounce path's staging is set by its own parameters.
static POSIX_POOL: Mutex<Option<(Vec<usize>, Vec<usize>)>> = Mutex::new(None);

/// cuFile's default pool: 4 KiB, 1 MiB and 16 MiB slabs.
const DEFAULT_POOL: ([usize; 3], [usize; 3]) = ([4, 1024, 16384], [128, 64, 64]);

/// The most slab kinds a pool takes here.
const MAX_SLABS: usize = 64;

/// `cuFileSetParameterPosixPoolSlabArray`: stages `len` slab sizes and counts (all above 0, at
/// most 64 kinds): `CU_FILE_INVALID_VALUE` otherwise, `CU_FILE_DRIVER_ALREADY_OPEN` while the
/// driver is open.
///
/// # Safety
/// `sizes` and `counts` must each be null or readable for `len` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileSetParameterPosixPoolSlabArray(
    sizes: *const usize,
    counts: *const usize,
    len: c_int,
) -> CUfileError_t {
    guard(PANICKED, || {
        let n = match usize::try_from(len) {
            Ok(n @ 1..=MAX_SLABS) if !sizes.is_null() && !counts.is_null() => n,
            _ => return CUfileError_t::code(INVALID_VALUE),
        };
        // SAFETY: non-null, `len` readable values by the caller's contract.
        let sizes = unsafe { std::slice::from_raw_parts(sizes, n) };
        // SAFETY: as above.
        let counts = unsafe { std::slice::from_raw_parts(counts, n) };
        if sizes.iter().chain(counts).any(|&v| v == 0) {
            return CUfileError_t::code(INVALID_VALUE);
        }
        match api() {
            None => UNSERVED,
            // SAFETY: no arguments.
            Some(api) if unsafe { (api.use_count)() } > 0 => CUfileError_t::code(DRIVER_ALREADY_OPEN),
            Some(_) => {
                *POSIX_POOL.lock().unwrap_or_else(|p| p.into_inner()) = Some((sizes.to_vec(), counts.to_vec()));
                CUfileError_t::SUCCESS
            }
        }
    })
}

/// `cuFileGetParameterPosixPoolSlabArray`: the pool's slab sizes and counts, `len` being their
/// number exactly (`CU_FILE_INVALID_VALUE` otherwise, as cuFile answers).
///
/// # Safety
/// `sizes` and `counts` must each be null or writable for `len` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetParameterPosixPoolSlabArray(
    sizes: *mut usize,
    counts: *mut usize,
    len: c_int,
) -> CUfileError_t {
    guard(PANICKED, || {
        let pool = POSIX_POOL.lock().unwrap_or_else(|p| p.into_inner());
        let (have_sizes, have_counts) = match pool.as_ref() {
            Some((s, c)) => (s.as_slice(), c.as_slice()),
            None => (&DEFAULT_POOL.0[..], &DEFAULT_POOL.1[..]),
        };
        if sizes.is_null() || counts.is_null() || usize::try_from(len) != Ok(have_sizes.len()) {
            return CUfileError_t::code(INVALID_VALUE);
        }
        // SAFETY: non-null, writable for `len` values by the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(have_sizes.as_ptr(), sizes, have_sizes.len()) };
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(have_counts.as_ptr(), counts, have_counts.len()) };
        CUfileError_t::SUCCESS
    })
}
