//! hipfile-capi: `libhipfile.so.0` and `libhipfile.a`, AMD hipFile's C API (`include/hipfile.h`)
//! over hipfile-core.
//!
//! Invariants:
//! - one process-wide driver, created at the first call that needs it, over the HIP runtime
//!   the application uses (found by [`hipfile::LoadedRuntime::discover`]); it is the only
//!   global state of hipfile-rs;
//! - no panic crosses the boundary: every export runs in [`ffi::boundary`], and a panic
//!   becomes `hipFileInternalError` in the export's convention;
//! - pointers from C are checked for null before use; handles are registry keys, so garbage
//!   is `hipFileHandleNotRegistered`, never a dereference; enums arrive as `int` and are
//!   validated;
//! - return conventions are semantics §1's, mapped in one place ([`hipfile::error`]);
//! - the header declares exactly the functions exported here (checked by `tests/header.rs`).
#![allow(non_snake_case)]

pub mod ffi;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use hipfile::error::op_error_cstr;
use hipfile::log::log_once;
use hipfile::{Driver, Error, HandleId, OpError, Result};

use ffi::{HANDLE_TYPE_OPAQUE_FD, HANDLE_TYPE_OPAQUE_WIN32, HANDLE_TYPE_USERSPACE_FS, boundary, ssize_return};
pub use ffi::{hipError_t, hipFileDescr_t, hipFileError_t, hipFileHandle_t, hipFileOpError_t, hoff_t};
use hipfile::{SystemBackend, SystemPlatform};

/// The version `hipFileGetVersion` reports, and `hipfile.h`'s `HIPFILE_VERSION_*` macros.
pub const VERSION: (u32, u32, u32) = (0, 2, 0);

static DRIVER: OnceLock<std::result::Result<Driver<SystemPlatform>, String>> = OnceLock::new();

/// The process-wide driver, or why there is none (no usable HIP runtime).
fn driver() -> Result<&'static Driver<SystemPlatform>> {
    DRIVER
        .get_or_init(|| {
            hipfile::log::install(|| hipfile::log::Sink::Off);
            let driver = SystemPlatform::discover().map(Driver::new);
            // SAFETY: the handlers only take and release the driver's lock (see below).
            unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
            driver
        })
        .as_ref()
        .map_err(|why| hipfile::unavailable(why.clone()))
}

thread_local! {
    /// The driver's lock, held by the thread calling `fork` from just before to just after it.
    static FORK_HOLD: std::cell::RefCell<Option<hipfile::ForkHold<'static, SystemBackend>>> =
        const { std::cell::RefCell::new(None) };
}

/// `pthread_atfork` prepare: takes the driver's lock, so no other thread is half-way through
/// changing the driver when the child is made (it would find the lock held forever). I/O holds
/// the lock only to look a request up, not while it moves bytes.
extern "C" fn before_fork() {
    if let Some(Ok(driver)) = DRIVER.get() {
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
        log_once(&e.to_string());
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
    boundary(|| hipFileError_t::from_result(driver().and_then(|d| logged(d.open()))))
}

/// `hipFileDriverClose`: decrements the use count; at zero every registration is dropped.
/// `hipFileDriverNotInitialized` if the count is already zero.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverClose() -> hipFileError_t {
    boundary(|| {
        hipFileError_t::from_result(driver().map_err(|_| OpError::DriverNotInitialized.into()).and_then(Driver::close))
    })
}

/// `hipFileUseCount`: the driver's use count (0 when it could never open).
#[unsafe(no_mangle)]
pub extern "C" fn hipFileUseCount() -> i64 {
    boundary(|| driver().map_or(0, Driver::use_count))
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
        hipFileError_t::from_result(driver().and_then(|d| {
            logged(d.handle_register(fd).map(|id| {
                // SAFETY: non-null, and writable by the caller's contract.
                unsafe { fh.write(id.0 as hipFileHandle_t) };
            }))
        }))
    })
}

/// `hipFileHandleDeregister`: forgets a handle (unknown handles are ignored, as upstream's
/// `void` API does). The caller's descriptor stays open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileHandleDeregister(fh: hipFileHandle_t) {
    boundary(|| {
        if let Ok(d) = driver() {
            let _ = d.handle_deregister(HandleId(fh as u64));
        }
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
    boundary(|| {
        hipFileError_t::from_result(driver().and_then(|d| logged(d.buf_register(buffer_base as usize, length, flags))))
    })
}

/// `hipFileBufDeregister`: `hipFileMemoryNotRegistered` for an address not registered as a
/// base; `hipFileDriverClosing` while the driver is closed.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileBufDeregister(buffer_base: *const c_void) -> hipFileError_t {
    boundary(|| {
        let closed = || OpError::DriverClosing.into();
        hipFileError_t::from_result(driver().map_err(|_| closed()).and_then(|d| d.buf_deregister(buffer_base as usize)))
    })
}

/// `hipFileRead`: reads up to `size` bytes (at most 0x7ffff000) at `file_offset` into device
/// memory at `buffer_base + buffer_offset`.
///
/// Returns the bytes read (fewer at end of file); `-1` with `errno` for an OS error (and
/// `EINVAL` while the driver is closed); `-hipFileOpError` (e.g. `-5022` for offsets out of
/// range, `-5027` for an unknown handle, `-5013` for memory that is not device memory);
/// `-hipError_t` for a HIP runtime failure.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileRead(
    fh: hipFileHandle_t,
    buffer_base: *mut c_void,
    size: usize,
    file_offset: hoff_t,
    buffer_offset: hoff_t,
) -> libc::ssize_t {
    io(|d| d.read(HandleId(fh as u64), buffer_base as usize, size, file_offset, buffer_offset))
}

/// `hipFileWrite`: writes `size` bytes (at most 0x7ffff000) from device memory at
/// `buffer_base + buffer_offset` to the file at `file_offset`; durable when it returns.
/// Returns as [`hipFileRead`].
#[unsafe(no_mangle)]
pub extern "C" fn hipFileWrite(
    fh: hipFileHandle_t,
    buffer_base: *const c_void,
    size: usize,
    file_offset: hoff_t,
    buffer_offset: hoff_t,
) -> libc::ssize_t {
    io(|d| d.write(HandleId(fh as u64), buffer_base as usize, size, file_offset, buffer_offset))
}

/// One read or write in the `ssize_t` convention; with no driver, the driver is not open.
fn io(transfer: impl FnOnce(&Driver<SystemPlatform>) -> Result<usize>) -> libc::ssize_t {
    boundary(|| ssize_return(driver().map_err(|_| OpError::DriverNotInitialized.into()).and_then(transfer)))
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
