//! What `libcufile.so.0` (the `hipfile-cufile` crate) needs of the process's driver beyond
//! hipFile's API: cuFile's statistics controls and parameter ranges (docs/cufile.md). Exported
//! under `hipfile_rs_cufile_` names, which no header declares: that library finds them here at
//! run time, so that cuFile's calls and hipFile's share one driver. The names and types are
//! hipfile-abi's (`hooks`); each function here is checked against its type below.

use std::ffi::{c_int, c_uint, c_void};

use hipfile::{Direction, HandleId, OpError, SizeParam};

use hipfile_abi::cufile_h::CUfileIOVec_t;
use hipfile_abi::hooks;

use crate::driver;
use crate::ffi::{boundary, hipFileError_t, ssize_return};

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

/// cuFile's vector I/O ([`hooks::VECTOR_IO`]): the vectors in order from `file_offset` on,
/// through the one I/O path, every call counted apart (semantics §17). A null `iov`, `flags`
/// other than 0 or more than 1024 vectors: `-hipFileInvalidValue`.
///
/// # Safety
/// `iov` must be null or readable for `iovcnt` vectors, each of them valid as `hipFileRead`'s
/// (for `write` 0) or `hipFileWrite`'s buffer is.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfile_rs_cufile_vector_io(
    write: c_int,
    fh: *mut c_void,
    iov: *const CUfileIOVec_t,
    iovcnt: usize,
    file_offset: i64,
    flags: c_uint,
) -> isize {
    let direction = if write == 0 { Direction::Read } else { Direction::Write };
    boundary(|| {
        let vectors: Option<Vec<(usize, usize)>> = (!iov.is_null() || iovcnt == 0).then(|| {
            // SAFETY: non-null and readable for `iovcnt` vectors by the caller's contract
            // (none read where there are none).
            let iov = if iovcnt == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(iov, iovcnt) } };
            iov.iter().map(|v| (v.base as usize, v.len)).collect()
        });
        let handle = HandleId(fh as u64);
        // SAFETY: each vector is valid as the caller's contract says.
        ssize_return(unsafe { driver().transfer_vector(direction, handle, vectors.as_deref(), file_offset, flags) })
    })
}

/// The vector I/O counted so far ([`hooks::VECTOR_STATS`]); zeros where counting is off.
///
/// # Safety
/// `readv` and `writev` must each be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfile_rs_cufile_vector_stats(
    readv: *mut hooks::VectorTotals,
    writev: *mut hooks::VectorTotals,
) {
    use hipfile::stats::{Counter as C, Totals};
    boundary(|| {
        let s = driver().stats().snapshot();
        let totals = |ok, err, bytes, time| {
            let t =
                Totals { ok: s.get(ok), err: s.get(err), bytes: s.get(bytes), micros: s.micros(time), unaligned: 0 };
            hooks::VectorTotals {
                ok: t.ok,
                err: t.err,
                bytes: t.bytes,
                micros: t.micros,
                bandwidth: t.bandwidth(),
                latency_avg_us: t.latency_avg_us(),
                ops_per_second: t.ops_per_second(),
            }
        };
        for (out, t) in [
            (readv, totals(C::ReadvOk, C::ReadvErr, C::ReadvBytes, C::ReadvTime)),
            (writev, totals(C::WritevOk, C::WritevErr, C::WritevBytes, C::WritevTime)),
        ] {
            if !out.is_null() {
                // SAFETY: non-null, writable by the caller's contract.
                unsafe { out.write(t) };
            }
        }
    })
}

const _: hooks::VectorIo = hipfile_rs_cufile_vector_io;
const _: hooks::VectorStats = hipfile_rs_cufile_vector_stats;
