//! The batch calls of `libhipfile.so.0` (`hipFileBatchIO*`, semantics §11).

use std::ffi::{c_uint, c_void};
use std::time::Duration;

use hipfile::{BatchEntry, BatchId, Direction, HandleId, OpError};

use crate::driver;
use crate::ffi::{
    self, FromResult, boundary, hipFileBatchHandle_t, hipFileError_t, hipFileIOEvents_t, hipFileIOParams_t,
};

/// `hipFileBatchIOSetUp` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileBatchIOSetUp(
    batch_idp: *mut hipFileBatchHandle_t,
    max_nr: c_uint,
) -> hipFileError_t {
    boundary(|| {
        if batch_idp.is_null() {
            return hipFileError_t::op(OpError::InvalidValue);
        }
        hipFileError_t::from_result(driver().batch_setup(max_nr as usize).map(|id| {
            // SAFETY: non-null, and writable by the caller's contract.
            unsafe { batch_idp.write(id.0 as hipFileBatchHandle_t) };
        }))
    })
}

/// `hipFileBatchIOSubmit` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileBatchIOSubmit(
    batch_idp: hipFileBatchHandle_t,
    nr: c_uint,
    iocbp: *mut hipFileIOParams_t,
    _flags: c_uint,
) -> hipFileError_t {
    boundary(|| {
        if nr == 0 || iocbp.is_null() {
            return hipFileError_t::op(OpError::InvalidValue);
        }
        // SAFETY: non-null, `nr` readable entries by the caller's contract.
        let params = unsafe { std::slice::from_raw_parts(iocbp, nr as usize) };
        let mut entries = Vec::with_capacity(params.len());
        for p in params {
            let direction = match (p.mode, p.opcode) {
                (ffi::BATCH_MODE, ffi::BATCH_READ) => Direction::Read,
                (ffi::BATCH_MODE, ffi::BATCH_WRITE) => Direction::Write,
                _ => return hipFileError_t::op(OpError::InvalidValue),
            };
            // SAFETY: `batch` is the union's one member.
            let b = unsafe { p.u.batch };
            entries.push(BatchEntry {
                direction,
                handle: HandleId(p.fh as u64),
                buffer_base: b.devPtr_base as usize,
                buffer_offset: b.devPtr_offset,
                file_offset: b.file_offset,
                size: b.size,
                cookie: p.cookie as usize,
            });
        }
        // SAFETY: the caller's contract (host memory valid until reaped).
        hipFileError_t::from_result(unsafe { driver().batch_submit(BatchId(batch_idp as u64), &entries) })
    })
}

/// `hipFileBatchIOGetStatus` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileBatchIOGetStatus(
    batch_idp: hipFileBatchHandle_t,
    min_nr: c_uint,
    nr: *mut c_uint,
    iocbp: *mut hipFileIOEvents_t,
    timeout: *mut libc::timespec,
) -> hipFileError_t {
    boundary(|| {
        if nr.is_null() || iocbp.is_null() {
            return hipFileError_t::op(OpError::InvalidValue);
        }
        // SAFETY: non-null, readable by the caller's contract.
        let max = unsafe { nr.read() } as usize;
        let timeout = if timeout.is_null() {
            None
        } else {
            // SAFETY: non-null, readable by the caller's contract.
            let t = unsafe { timeout.read() };
            match (u64::try_from(t.tv_sec), u32::try_from(t.tv_nsec)) {
                (Ok(secs), Ok(nanos)) if nanos < 1_000_000_000 => Some(Duration::new(secs, nanos)),
                _ => return hipFileError_t::op(OpError::InvalidValue),
            }
        };
        let events = match driver().batch_status(BatchId(batch_idp as u64), min_nr as usize, max, timeout) {
            Ok(events) => events,
            Err(e) => return hipFileError_t::from_result(Err(e)),
        };
        for (i, e) in events.iter().enumerate() {
            let status = if e.result.is_ok() { ffi::STATUS_COMPLETE } else { ffi::STATUS_FAILED };
            let event = hipFileIOEvents_t { cookie: e.cookie as *mut c_void, status, ret: e.ret() as usize };
            // SAFETY: `i < events.len() <= max`: inside the caller's `*nr` events (the memory
            // may be uninitialised: it is written, never read).
            let slot = unsafe { iocbp.add(i) };
            // SAFETY: as above.
            unsafe { slot.write(event) };
        }
        // SAFETY: as above; `events.len() <= max` fits.
        unsafe { nr.write(events.len() as c_uint) };
        hipFileError_t::SUCCESS
    })
}

/// `hipFileBatchIOCancel` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileBatchIOCancel(batch_idp: hipFileBatchHandle_t) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().batch_cancel(BatchId(batch_idp as u64))))
}

/// `hipFileBatchIODestroy` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileBatchIODestroy(batch_idp: hipFileBatchHandle_t) {
    boundary(|| {
        driver().batch_destroy(BatchId(batch_idp as u64));
    })
}
