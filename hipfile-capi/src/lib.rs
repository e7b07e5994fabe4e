//! hipfile-capi: `libhipfile.so.0` and `libhipfile.a`, AMD hipFile's C API (`include/hipfile.h`)
//! over hipfile-core.
//!
//! Invariants:
//! - one process-wide driver, created at the first call that needs it, over the HIP runtime
//!   the application uses (found by `LoadedRuntime::discover`); it is the only
//!   global state of hipfile-rs;
//! - no panic crosses the boundary: every export runs in [`ffi::boundary`], and a panic
//!   becomes `hipFileInternalError` in the export's convention;
//! - pointers from C are checked for null before use; handles are registry keys, so garbage
//!   is `hipFileHandleNotRegistered`, never a dereference; enums arrive as `int` and are
//!   validated;
//! - return conventions are semantics §1's, mapped in one place (`hipfile-core`'s `error`);
//! - the header declares exactly the functions exported here (checked by `tests/header.rs`).
#![allow(non_snake_case)]

pub mod cufile_hooks;
pub mod ffi;
pub mod params;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;
use std::time::Duration;

use hipfile::boundary::error::op_error_cstr;
use hipfile::boundary::log_once_at;
use hipfile::{BatchEntry, BatchId, Direction, Driver, Error, HandleId, OpError, Result, Stream};

use ffi::{
    FromResult, HANDLE_TYPE_OPAQUE_FD, HANDLE_TYPE_OPAQUE_WIN32, HANDLE_TYPE_USERSPACE_FS, boundary, ssize_return,
};
pub use ffi::{
    hipError_t, hipFileBatchHandle_t, hipFileDescr_t, hipFileError_t, hipFileHandle_t, hipFileIOEvents_t,
    hipFileIOParams_t, hipFileOpError_t, hipStream_t, hoff_t,
};
use hipfile::SystemPlatform;
use hipfile::boundary::SystemBackend;

/// The version `hipFileGetVersion` reports, and `hipfile.h`'s `HIPFILE_VERSION_*` macros
/// ([`hipfile::API_VERSION`]; clients such as rocprofiler-systems refuse one older than the
/// statistics calls).
pub const VERSION: (u32, u32, u32) = hipfile::API_VERSION;

static DRIVER: OnceLock<Driver<SystemPlatform>> = OnceLock::new();

/// The process-wide driver: the one every C call uses, and the C++ API (`hipfile-cxx`) too.
/// Where no GPU runtime can be loaded it still exists (parameters, properties and statistics
/// need none, semantics §13); its open fails with `hipFilePlatformNotSupported`.
pub fn driver() -> &'static Driver<SystemPlatform> {
    DRIVER.get_or_init(|| {
        hipfile::boundary::install(|| hipfile::boundary::Sink::Off);
        let platform = SystemPlatform::discover().unwrap_or_else(SystemPlatform::without_runtime);
        // SAFETY: the handlers only take and release the driver's lock (see below).
        unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
        Driver::new(platform).with_stats(hipfile::stats::published()).with_log_parameters(hipfile::boundary::ProcessLog)
    })
}

thread_local! {
    /// The driver's lock, held by the thread calling `fork` from just before to just after it.
    static FORK_HOLD: std::cell::RefCell<Option<hipfile::boundary::ForkHold<'static, SystemBackend>>> =
        const { std::cell::RefCell::new(None) };
}

/// `pthread_atfork` prepare: takes the driver's lock, so no other thread is half-way through
/// changing the driver when the child is made (it would find the lock held forever). I/O holds
/// the lock only to look a request up, not while it moves bytes.
extern "C" fn before_fork() {
    if let Some(driver) = DRIVER.get() {
        let hold = driver.hold_for_fork();
        let _ = FORK_HOLD.try_with(|h| h.borrow_mut().replace(hold));
    }
}

/// `pthread_atfork` parent and child: releases what [`before_fork`] took.
extern "C" fn after_fork() {
    let _ = FORK_HOLD.try_with(|h| h.borrow_mut().take());
}

/// The result of an export that may open the driver, after logging (where `HIPFILE_LOG` asks)
/// why the open failed when the configuration was the reason (C callers only see the code).
fn logged(result: Result<()>) -> Result<()> {
    if let Err(e @ Error::Config(_)) = &result {
        // The caller gets the code: the reason is for `HIPFILE_LOG=debug`.
        let why = e.to_string();
        log_once_at(hipfile::boundary::Level::DEBUG, &why, || why.clone());
    }
    result
}

/// `hipFileDriverOpen`: increments the use count; the first open reads the `HIPFILE_*`
/// variables and chooses the backends.
///
/// Returns `hipFileSuccess`; `hipFileDriverInvalidProps` for an invalid `HIPFILE_*` value
/// and `hipFilePlatformNotSupported` when no HIP runtime can be used (both explained once
/// where `HIPFILE_LOG` says).
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverOpen() -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(logged(driver().open())))
}

/// `hipFileDriverClose`: decrements the use count; at zero every registration is dropped.
/// `hipFileDriverNotInitialized` if the count is already zero.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverClose() -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().close()))
}

/// `hipFileUseCount`: the driver's use count (0 when it could never open).
#[unsafe(no_mangle)]
pub extern "C" fn hipFileUseCount() -> i64 {
    boundary(|| driver().use_count())
}

/// `hipFileHandleRegister`: registers the descriptor in `*descr` and stores its handle in
/// `*fh`. Opens the driver if it is closed (not when an argument is null).
///
/// Returns `hipFileInvalidValue` (null argument, unknown handle type, bad descriptor),
/// `hipFileIONotSupported` (Win32 or user-space file system handles),
/// `hipFileHandleAlreadyRegistered`, `hipFileInvalidFileType` (not a regular file or block
/// device), `hipFileGetNewFDFailed`, `hipFilePermissionDenied`, `hipFileInternalError`.
///
/// # Safety
/// `fh` and `descr` must each be null or valid (`*fh` writable, `*descr` readable). The
/// descriptor stays the caller's: deregistering never closes it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileHandleRegister(fh: *mut hipFileHandle_t, descr: *mut hipFileDescr_t) -> hipFileError_t {
    boundary(|| {
        if fh.is_null() || descr.is_null() {
            return hipFileError_t::op(OpError::InvalidValue);
        }
        // SAFETY: non-null, and readable by the caller's contract. Fields are read one by one:
        // callers (AMD's own example) leave the ones their handle type does not use
        // uninitialised.
        let handle_type = unsafe { (*descr).r#type };
        match handle_type {
            HANDLE_TYPE_OPAQUE_FD => {}
            HANDLE_TYPE_OPAQUE_WIN32 | HANDLE_TYPE_USERSPACE_FS => return hipFileError_t::op(OpError::IoNotSupported),
            _ => return hipFileError_t::op(OpError::InvalidValue),
        }
        // SAFETY: as above (a union may hold uninitialised bytes).
        let handle = unsafe { (*descr).handle };
        // SAFETY: an OpaqueFD descriptor holds an `int` in the union.
        let fd = unsafe { handle.fd };
        // SAFETY: hipFileHandleRegister's contract, the caller's: a descriptor it may use.
        let registered = unsafe { driver().handle_register_raw(fd) };
        hipFileError_t::from_result(logged(registered.map(|id| {
            // SAFETY: non-null, and writable by the caller's contract.
            unsafe { fh.write(id.0 as hipFileHandle_t) };
        })))
    })
}

/// `hipFileHandleDeregister`: forgets a handle (unknown handles are ignored, as upstream's
/// `void` API does). The caller's descriptor stays open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileHandleDeregister(fh: hipFileHandle_t) {
    boundary(|| {
        let _ = driver().handle_deregister(HandleId(fh as u64));
    })
}

/// `hipFileBufRegister`: records `[buffer_base, buffer_base + length)` of device memory.
/// Opens the driver if it is closed (even when the arguments are then refused, as upstream).
///
/// Returns `hipFileInvalidValue` (null, zero length, unknown address),
/// `hipFileHipMemoryTypeInvalid` (not device memory), `hipFileHipPointerRangeError` (past the
/// allocation), `hipFileMemoryAlreadyRegistered`, `hipFileHipDriverError` with the runtime's
/// error.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileBufRegister(buffer_base: *const c_void, length: usize, flags: c_int) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(logged(driver().buf_register(buffer_base as usize, length, flags))))
}

/// `hipFileBufDeregister`: `hipFileMemoryNotRegistered` for an address not registered as a
/// base; `hipFileDriverClosing` while the driver is closed.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileBufDeregister(buffer_base: *const c_void) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().buf_deregister(buffer_base as usize)))
}

/// `hipFileRead`: reads up to `size` bytes (at most 0x7ffff000) at `file_offset` into device
/// memory at `buffer_base + buffer_offset`.
///
/// Returns the bytes read (fewer at end of file); `-1` with `errno` for an OS error (and
/// `EINVAL` while the driver is closed); `-hipFileOpError` (e.g. `-5022` for offsets out of
/// range, `-5027` for an unknown handle, `-5013` for memory that is not device memory);
/// `-hipError_t` for a HIP runtime failure.
///
/// # Safety
/// Where `buffer_base` is host memory (allowed by `HIPFILE_ALLOW_SYSTEM_MEMORY`), the range the
/// call names must be writable for the call. Device memory is checked against the runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileRead(
    fh: hipFileHandle_t,
    buffer_base: *mut c_void,
    size: usize,
    file_offset: hoff_t,
    buffer_offset: hoff_t,
) -> libc::ssize_t {
    // SAFETY: the caller's contract.
    io(|d| unsafe {
        d.transfer(Direction::Read, HandleId(fh as u64), buffer_base as usize, size, file_offset, buffer_offset)
    })
}

/// `hipFileWrite`: writes `size` bytes (at most 0x7ffff000) from device memory at
/// `buffer_base + buffer_offset` to the file at `file_offset`; durable when it returns.
/// Returns as [`hipFileRead`].
///
/// # Safety
/// As [`hipFileRead`], with host memory readable for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileWrite(
    fh: hipFileHandle_t,
    buffer_base: *const c_void,
    size: usize,
    file_offset: hoff_t,
    buffer_offset: hoff_t,
) -> libc::ssize_t {
    // SAFETY: the caller's contract.
    io(|d| unsafe {
        d.transfer(Direction::Write, HandleId(fh as u64), buffer_base as usize, size, file_offset, buffer_offset)
    })
}

/// One read or write in the `ssize_t` convention; with no driver, the driver is not open.
fn io(transfer: impl FnOnce(&Driver<SystemPlatform>) -> Result<usize>) -> libc::ssize_t {
    boundary(|| ssize_return(transfer(driver())))
}

/// `hipFileBatchIOSetUp`: a batch of up to `max_nr` entries (1 to 128), stored in
/// `*batch_idp`. Does not need an open driver.
///
/// Returns `hipFileInvalidValue` (null pointer, capacity out of range).
///
/// # Safety
/// `batch_idp` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileBatchIOSetUp(batch_idp: *mut hipFileBatchHandle_t, max_nr: c_uint) -> hipFileError_t {
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

/// `hipFileBatchIOSubmit`: checks the `nr` entries of `iocbp` as `hipFileRead`/`hipFileWrite`
/// would, all before any runs, then runs them. `flags` is unused (as upstream).
///
/// Returns `hipFileInvalidValue` (unknown batch, `nr` 0, null `iocbp`, bad mode or opcode, a
/// buffer range out of bounds), `hipFileBatchFull` (more entries than the batch has room for),
/// `hipFileHandleNotRegistered`, `hipFileHipMemoryTypeInvalid`, or the error an entry would
/// have had as a synchronous call.
///
/// # Safety
/// `iocbp` must be null or point to `nr` readable entries; entries in host memory (where it
/// is allowed) must name memory valid until their events are reaped.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileBatchIOSubmit(
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

/// `hipFileBatchIOGetStatus`: waits until at least `min_nr` entries have finished, none is
/// left, or `timeout` passes (null: no limit), then stores up to `*nr` events in `iocbp` and
/// their number in `*nr`. An event is `hipFileComplete` with the bytes moved, or
/// `hipFileFailed` with a negative error (`-errno`, `-hipFileOpError` or `-hipError_t`) in
/// `ret`.
///
/// Returns `hipFileInvalidValue` (unknown batch, null `nr` or `iocbp`, `*nr` 0, `min_nr >
/// *nr`, a negative timeout).
///
/// # Safety
/// `nr` must be null or readable and writable; `iocbp` null or writable for `*nr` events;
/// `timeout` null or readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileBatchIOGetStatus(
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

/// `hipFileBatchIOCancel`: entries not started never run, running ones are waited for, events
/// not reaped are dropped; the batch can take new entries afterwards. `hipFileInvalidValue`
/// for an unknown batch.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileBatchIOCancel(batch_idp: hipFileBatchHandle_t) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().batch_cancel(BatchId(batch_idp as u64))))
}

/// `hipFileBatchIODestroy`: cancels the batch and forgets it; null and unknown batches are
/// ignored. When it returns, nothing of the batch touches memory.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileBatchIODestroy(batch_idp: hipFileBatchHandle_t) {
    boundary(|| {
        driver().batch_destroy(BatchId(batch_idp as u64));
    })
}

/// `hipFileReadAsync`: queues a read on `stream` (semantics §12): it runs after the work queued
/// before it, reading `*size_p`, `*file_offset_p` and `*buffer_offset_p` then (at this call for
/// those the stream's FIXED flags name; the size may shrink, not grow), and stores the bytes
/// read, or a negative error (`-errno`, `-hipFileOpError`, `-hipError_t`), in `*bytes_read_p`.
/// A size of 0 stores 0 at once. Opens a closed driver first, even when an argument is then
/// refused (as upstream).
///
/// Returns `hipFileInvalidValue` (a null argument, offsets or size out of range), the codes of
/// `hipFileRead`'s checks, or `hipFileHipDriverError` when the runtime refused the stream work.
///
/// # Safety
/// The four pointers must be null or valid until the stream has run the operation (read, and
/// for `bytes_read_p` written, from another thread).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileReadAsync(
    fh: hipFileHandle_t,
    buffer_base: *mut c_void,
    size_p: *mut usize,
    file_offset_p: *mut hoff_t,
    buffer_offset_p: *mut hoff_t,
    bytes_read_p: *mut libc::ssize_t,
    stream: hipStream_t,
) -> hipFileError_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        stream_export(Direction::Read, fh, buffer_base, size_p, file_offset_p, buffer_offset_p, bytes_read_p, stream)
    }
}

/// `hipFileWriteAsync`: the write counterpart of [`hipFileReadAsync`].
///
/// # Safety
/// As [`hipFileReadAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileWriteAsync(
    fh: hipFileHandle_t,
    buffer_base: *mut c_void,
    size_p: *mut usize,
    file_offset_p: *mut hoff_t,
    buffer_offset_p: *mut hoff_t,
    bytes_written_p: *mut libc::ssize_t,
    stream: hipStream_t,
) -> hipFileError_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        stream_export(
            Direction::Write,
            fh,
            buffer_base,
            size_p,
            file_offset_p,
            buffer_offset_p,
            bytes_written_p,
            stream,
        )
    }
}

/// `hipFileReadAsync` or `hipFileWriteAsync` in C's convention.
///
/// # Safety
/// As [`hipFileReadAsync`].
#[allow(clippy::too_many_arguments)]
unsafe fn stream_export(
    direction: Direction,
    fh: hipFileHandle_t,
    buffer_base: *mut c_void,
    size: *mut usize,
    file_offset: *mut hoff_t,
    buffer_offset: *mut hoff_t,
    bytes: *mut libc::ssize_t,
    stream: hipStream_t,
) -> hipFileError_t {
    // SAFETY: the caller's contract: a stream of the runtime in use, alive until the operation
    // has run (hipFileReadAsync's and hipFileWriteAsync's).
    let (handle, stream) = (HandleId(fh as u64), unsafe { Stream::from_raw(stream as usize) });
    boundary(|| {
        // SAFETY: the caller's contract, passed on.
        let queued =
            unsafe { stream_io(direction, handle, buffer_base, size, file_offset, buffer_offset, bytes, stream) };
        hipFileError_t::from_result(queued)
    })
}

/// One stream-ordered operation with hipFileReadAsync's rules (semantics §12), for the C
/// exports and the C++ API alike: the implicit open (before the arguments are looked at, as
/// upstream's `DriverInit` tests expect), null checks, then the driver.
///
/// # Safety
/// As [`hipFileReadAsync`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn stream_io(
    direction: Direction,
    handle: HandleId,
    buffer_base: *mut c_void,
    size: *mut usize,
    file_offset: *mut hoff_t,
    buffer_offset: *mut hoff_t,
    bytes: *mut libc::ssize_t,
    stream: Stream,
) -> Result<()> {
    let d = driver();
    logged(d.open_implicitly())?;
    // SAFETY: valid until the stream has run the operation (the caller's contract).
    let values = unsafe { ffi::CallerValues::new(size, file_offset, buffer_offset, bytes) };
    let (Some(values), false) = (values, buffer_base.is_null()) else {
        return Err(OpError::InvalidValue.into());
    };
    // SAFETY: the memory the operation names, valid until the stream has run it (the caller's
    // contract).
    unsafe { d.submit_async(direction, handle, buffer_base as usize, std::sync::Arc::new(values), stream) }
}

/// `hipFileStreamRegister`: `flags` (`HIPFILE_STREAM_*`, within `HIPFILE_STREAM_FLAGS_MASK`)
/// name the values of the stream's operations read at submission. Needs no open driver.
///
/// Returns `hipFileInvalidValue` (flags outside the mask, the stream registered already).
#[unsafe(no_mangle)]
pub extern "C" fn hipFileStreamRegister(stream: hipStream_t, flags: c_uint) -> hipFileError_t {
    // SAFETY: registration only records the handle (a key); nothing passes it to the runtime.
    let stream = unsafe { Stream::from_raw(stream as usize) };
    boundary(|| hipFileError_t::from_result(driver().stream_register(stream, flags)))
}

/// `hipFileStreamDeregister`: forgets a registered stream's flags.
///
/// Returns `hipFileInvalidValue` for a stream not registered.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileStreamDeregister(stream: hipStream_t) -> hipFileError_t {
    // SAFETY: as hipFileStreamRegister's: a key, never passed to the runtime.
    let stream = unsafe { Stream::from_raw(stream as usize) };
    boundary(|| hipFileError_t::from_result(driver().stream_deregister(stream)))
}

/// `hipFileGetOpErrorString`: a static description of any value ("Unknown hipFile error"
/// for values that are not codes). The string is never freed.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileGetOpErrorString(status: hipFileOpError_t) -> *const c_char {
    op_error_cstr(status).as_ptr()
}

/// `hipFileGetVersion`: the API version; null arguments are skipped.
///
/// # Safety
/// Each argument must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetVersion(
    major: *mut c_uint,
    minor: *mut c_uint,
    patch: *mut c_uint,
) -> hipFileError_t {
    boundary(|| {
        for (out, value) in [(major, VERSION.0), (minor, VERSION.1), (patch, VERSION.2)] {
            if !out.is_null() {
                // SAFETY: non-null, and writable by the caller's contract.
                unsafe { out.write(value) };
            }
        }
        hipFileError_t::SUCCESS
    })
}

/// Fills `*stats` with the counters now (semantics §14): `hipFileInvalidValue` for a null
/// pointer. Counters accumulate from the first driver open at a level above 0; fields the
/// level does not count, and those hipfile-rs does not track, are zero.
///
/// # Safety
/// `stats` must be null or writable for a `T`.
unsafe fn get_stats<T: for<'a> From<&'a hipfile::stats::Snapshot>>(stats: *mut T) -> hipFileError_t {
    boundary(|| {
        if stats.is_null() {
            return hipFileError_t::op(OpError::InvalidValue);
        }
        let value = T::from(&driver().stats().snapshot());
        // SAFETY: non-null, and writable by the caller's contract.
        unsafe { stats.write(value) };
        hipFileError_t::SUCCESS
    })
}

/// `hipFileGetStatsL1`: requests, bytes, times and calls, per direction (semantics §14: `hipFileInvalidValue` for null; fields not counted are zero).
///
/// # Safety
/// `stats` must be null or point to a writable `hipFileStatsLevel1_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetStatsL1(stats: *mut ffi::hipFileStatsLevel1_t) -> hipFileError_t {
    // SAFETY: the caller's contract.
    unsafe { get_stats(stats) }
}

/// `hipFileGetStatsL2`: level 1 and the size histograms (semantics §14: `hipFileInvalidValue` for null; fields not counted are zero).
///
/// # Safety
/// `stats` must be null or point to a writable `hipFileStatsLevel2_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetStatsL2(stats: *mut ffi::hipFileStatsLevel2_t) -> hipFileError_t {
    // SAFETY: the caller's contract.
    unsafe { get_stats(stats) }
}

/// `hipFileGetStatsL3`: level 2 and each GPU's figures (semantics §14: `hipFileInvalidValue` for null; fields not counted are zero).
///
/// # Safety
/// `stats` must be null or point to a writable `hipFileStatsLevel3_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetStatsL3(stats: *mut ffi::hipFileStatsLevel3_t) -> hipFileError_t {
    // SAFETY: the caller's contract.
    unsafe { get_stats(stats) }
}
