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

pub mod batch;
pub mod cufile_hooks;
pub mod exports;
pub mod ffi;
pub mod params;
pub mod trace;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use hipfile::boundary::error::op_error_cstr;
use hipfile::boundary::log_once_at;
use hipfile::{Direction, Driver, Error, HandleId, OpError, Result, Stream};

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

/// `hipFileDriverOpen` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileDriverOpen() -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(logged(driver().open())))
}

/// `hipFileDriverClose` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileDriverClose() -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().close()))
}

/// `hipFileUseCount` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileUseCount() -> i64 {
    boundary(|| driver().use_count())
}

/// `hipFileHandleRegister` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileHandleRegister(
    fh: *mut hipFileHandle_t,
    descr: *mut hipFileDescr_t,
) -> hipFileError_t {
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

/// `hipFileHandleDeregister` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileHandleDeregister(fh: hipFileHandle_t) {
    boundary(|| {
        let _ = driver().handle_deregister(HandleId(fh as u64));
    })
}

/// `hipFileBufRegister` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileBufRegister(
    buffer_base: *const c_void,
    length: usize,
    flags: c_int,
) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(logged(driver().buf_register(buffer_base as usize, length, flags))))
}

/// `hipFileBufDeregister` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileBufDeregister(buffer_base: *const c_void) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().buf_deregister(buffer_base as usize)))
}

/// `hipFileRead` (`WRITE` false) and `hipFileWrite` as this library serves them: their entries
/// of the dispatch table (trace.rs). The read's entry type takes `*mut c_void` where this takes
/// `*const c_void`: the two pointer types are ABI-compatible, so the entry calls this as it is.
///
/// # Safety
/// The caller's contract (`hipFileRead`'s and `hipFileWrite`'s).
pub(crate) unsafe extern "C" fn own_transfer<const WRITE: bool>(
    fh: hipFileHandle_t,
    buffer_base: *const c_void,
    size: usize,
    file_offset: hoff_t,
    buffer_offset: hoff_t,
) -> libc::ssize_t {
    let direction = if WRITE { Direction::Write } else { Direction::Read };
    // SAFETY: the caller's contract.
    io(|d| unsafe {
        d.transfer(direction, HandleId(fh as u64), buffer_base as usize, size, file_offset, buffer_offset)
    })
}

/// One read or write in the `ssize_t` convention; with no driver, the driver is not open.
fn io(transfer: impl FnOnce(&Driver<SystemPlatform>) -> Result<usize>) -> libc::ssize_t {
    boundary(|| ssize_return(transfer(driver())))
}

/// `hipFileReadAsync` (`WRITE` false) and `hipFileWriteAsync` as this library serves them:
/// their entries of the dispatch table (trace.rs).
///
/// # Safety
/// The caller's contract (`hipFileReadAsync`'s and `hipFileWriteAsync`'s): a stream of the
/// runtime in use, and pointers valid until the operation has run.
pub(crate) unsafe extern "C" fn own_stream_io<const WRITE: bool>(
    fh: hipFileHandle_t,
    buffer_base: *mut c_void,
    size: *mut usize,
    file_offset: *mut hoff_t,
    buffer_offset: *mut hoff_t,
    bytes: *mut libc::ssize_t,
    stream: hipStream_t,
) -> hipFileError_t {
    let direction = if WRITE { Direction::Write } else { Direction::Read };
    // SAFETY: the caller's contract: a stream of the runtime in use, alive until the operation
    // has run.
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
/// As [`hipFileReadAsync`](crate::exports::hipFileReadAsync).
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

/// `hipFileStreamRegister` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileStreamRegister(stream: hipStream_t, flags: c_uint) -> hipFileError_t {
    // SAFETY: registration only records the handle (a key); nothing passes it to the runtime.
    let stream = unsafe { Stream::from_raw(stream as usize) };
    boundary(|| hipFileError_t::from_result(driver().stream_register(stream, flags)))
}

/// `hipFileStreamDeregister` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileStreamDeregister(stream: hipStream_t) -> hipFileError_t {
    // SAFETY: as hipFileStreamRegister's: a key, never passed to the runtime.
    let stream = unsafe { Stream::from_raw(stream as usize) };
    boundary(|| hipFileError_t::from_result(driver().stream_deregister(stream)))
}

/// `hipFileGetOpErrorString` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileGetOpErrorString(status: hipFileOpError_t) -> *const c_char {
    op_error_cstr(status).as_ptr()
}

/// `hipFileGetVersion` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileGetVersion(
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

/// `hipFileGetStatsL1` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileGetStatsL1(stats: *mut ffi::hipFileStatsLevel1_t) -> hipFileError_t {
    // SAFETY: the caller's contract.
    unsafe { get_stats(stats) }
}

/// `hipFileGetStatsL2` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileGetStatsL2(stats: *mut ffi::hipFileStatsLevel2_t) -> hipFileError_t {
    // SAFETY: the caller's contract.
    unsafe { get_stats(stats) }
}

/// `hipFileGetStatsL3` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileGetStatsL3(stats: *mut ffi::hipFileStatsLevel3_t) -> hipFileError_t {
    // SAFETY: the caller's contract.
    unsafe { get_stats(stats) }
}
