//! The calls `libhipfile.so.0` exports (`include/hipfile.h`), each through the dispatch table
//! (trace.rs), whose entries are this library's functions (`own_*` in the modules that serve
//! them) until a tool replaces them. What each call does is said here, once.
// The calls that are safe Rust functions take pointers as values (an address to register, a
// handle, a stream) that nothing dereferences: their entries, safe functions of this library
// (or a tool's wrappers of them), pass them on as such.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_char, c_int, c_uint, c_void};

use crate::ffi::{
    self, hipFileBatchHandle_t, hipFileDescr_t, hipFileError_t, hipFileHandle_t, hipFileIOEvents_t, hipFileIOParams_t,
    hipFileOpError_t, hipStream_t, hoff_t,
};
use crate::trace::table;

/// `hipFileDriverOpen`: increments the use count; the first open reads the `HIPFILE_*`
/// variables and chooses the backends.
///
/// Returns `hipFileSuccess`; `hipFileDriverInvalidProps` for an invalid `HIPFILE_*` value
/// and `hipFilePlatformNotSupported` when no HIP runtime can be used (both explained once
/// where `HIPFILE_LOG` says).
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverOpen() -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_driver_open())() }
}

/// `hipFileDriverClose`: decrements the use count; at zero every registration is dropped.
/// `hipFileDriverNotInitialized` if the count is already zero.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverClose() -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_driver_close())() }
}

/// `hipFileUseCount`: the driver's use count (0 when it could never open).
#[unsafe(no_mangle)]
pub extern "C" fn hipFileUseCount() -> i64 {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_use_count())() }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_handle_register())(fh, descr) }
}

/// `hipFileHandleDeregister`: forgets a handle (unknown handles are ignored, as upstream's
/// `void` API does). The caller's descriptor stays open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileHandleDeregister(fh: hipFileHandle_t) {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_handle_deregister())(fh) }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_buf_register())(buffer_base, length, flags) }
}

/// `hipFileBufDeregister`: `hipFileMemoryNotRegistered` for an address not registered as a
/// base; `hipFileDriverClosing` while the driver is closed.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileBufDeregister(buffer_base: *const c_void) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_buf_deregister())(buffer_base) }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_read())(fh, buffer_base, size, file_offset, buffer_offset) }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_write())(fh, buffer_base, size, file_offset, buffer_offset) }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe {
        (table().pfn_hipfile_read_async())(
            fh,
            buffer_base,
            size_p,
            file_offset_p,
            buffer_offset_p,
            bytes_read_p,
            stream,
        )
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe {
        (table().pfn_hipfile_write_async())(
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

/// `hipFileStreamRegister`: `flags` (`HIPFILE_STREAM_*`, within `HIPFILE_STREAM_FLAGS_MASK`)
/// name the values of the stream's operations read at submission. Needs no open driver.
///
/// Returns `hipFileInvalidValue` (flags outside the mask, the stream registered already).
#[unsafe(no_mangle)]
pub extern "C" fn hipFileStreamRegister(stream: hipStream_t, flags: c_uint) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_stream_register())(stream, flags) }
}

/// `hipFileStreamDeregister`: forgets a registered stream's flags.
///
/// Returns `hipFileInvalidValue` for a stream not registered.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileStreamDeregister(stream: hipStream_t) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_stream_deregister())(stream) }
}

/// `hipFileGetOpErrorString`: a static description of any value ("Unknown hipFile error"
/// for values that are not codes). The string is never freed.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileGetOpErrorString(status: hipFileOpError_t) -> *const c_char {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_get_op_error_string())(status) }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_get_version())(major, minor, patch) }
}

/// `hipFileGetStatsL1`: requests, bytes, times and calls, per direction (semantics §14: `hipFileInvalidValue` for null; fields not counted are zero).
///
/// # Safety
/// `stats` must be null or point to a writable `hipFileStatsLevel1_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetStatsL1(stats: *mut ffi::hipFileStatsLevel1_t) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_get_stats_l1())(stats) }
}

/// `hipFileGetStatsL2`: level 1 and the size histograms (semantics §14: `hipFileInvalidValue` for null; fields not counted are zero).
///
/// # Safety
/// `stats` must be null or point to a writable `hipFileStatsLevel2_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetStatsL2(stats: *mut ffi::hipFileStatsLevel2_t) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_get_stats_l2())(stats) }
}

/// `hipFileGetStatsL3`: level 2 and each GPU's figures (semantics §14: `hipFileInvalidValue` for null; fields not counted are zero).
///
/// # Safety
/// `stats` must be null or point to a writable `hipFileStatsLevel3_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetStatsL3(stats: *mut ffi::hipFileStatsLevel3_t) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_get_stats_l3())(stats) }
}

/// `hipFileDriverGetProperties`: the open driver's properties, or while it is closed those the
/// next open would have (semantics §13). Does not open the driver.
///
/// Returns `hipFileInvalidValue` for a null `props`.
///
/// # Safety
/// `props` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileDriverGetProperties(props: *mut ffi::hipFileDriverProps_t) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_driver_get_properties())(props) }
}

/// `hipFileDriverSetPollMode`: stages poll mode and its threshold (KiB) for the next open
/// (kept and reported; nothing polls here). `hipFileDriverAlreadyOpen` while open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverSetPollMode(poll: bool, poll_threshold_size: usize) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_driver_set_poll_mode())(poll, poll_threshold_size) }
}

/// `hipFileDriverSetMaxDirectIOSize`: stages the bounce path's chunk (KiB, a multiple of 4 from
/// 64 to 262144) for the next open. `hipFileDriverAlreadyOpen` while open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverSetMaxDirectIOSize(max_direct_io_size: usize) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_driver_set_max_direct_io_size())(max_direct_io_size) }
}

/// `hipFileDriverSetMaxCacheSize`: stages the device cache size (KiB; kept and reported) for
/// the next open. `hipFileDriverAlreadyOpen` while open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverSetMaxCacheSize(max_cache_size: usize) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_driver_set_max_cache_size())(max_cache_size) }
}

/// `hipFileDriverSetMaxPinnedMemSize`: stages the pinned staging memory per device (KiB, at
/// least 1024) for the next open. `hipFileDriverAlreadyOpen` while open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverSetMaxPinnedMemSize(max_pinned_size: usize) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_driver_set_max_pinned_mem_size())(max_pinned_size) }
}

/// `hipFileGetParameterSizeT`: the value in use while the driver is open; while closed, the
/// value the next open would apply (semantics §13).
///
/// Returns `hipFileInvalidValue` (unknown parameter, null `value`).
///
/// # Safety
/// `value` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetParameterSizeT(
    param: ffi::hipFileSizeTConfigParameter_t,
    value: *mut usize,
) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_get_parameter_size_t())(param, value) }
}

/// `hipFileGetParameterBool`: as [`hipFileGetParameterSizeT`].
///
/// # Safety
/// `value` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetParameterBool(
    param: ffi::hipFileBoolConfigParameter_t,
    value: *mut bool,
) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_get_parameter_bool())(param, value) }
}

/// `hipFileGetParameterString`: the value and its NUL into `desc_str`, as
/// [`hipFileGetParameterSizeT`]. `hipFileInvalidValue` (and nothing written) for a null
/// buffer or one of `len` bytes that does not hold both.
///
/// # Safety
/// `desc_str` must be null or writable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileGetParameterString(
    param: ffi::hipFileStringConfigParameter_t,
    desc_str: *mut c_char,
    len: c_int,
) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_get_parameter_string())(param, desc_str, len) }
}

/// `hipFileSetParameterSizeT`: stages the value for the next open (semantics §13).
///
/// Returns `hipFileDriverAlreadyOpen` while the driver is open, `hipFileInvalidValue` for an
/// unknown parameter or a value out of its range.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileSetParameterSizeT(param: ffi::hipFileSizeTConfigParameter_t, value: usize) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_set_parameter_size_t())(param, value) }
}

/// `hipFileSetParameterBool`: as [`hipFileSetParameterSizeT`].
#[unsafe(no_mangle)]
pub extern "C" fn hipFileSetParameterBool(param: ffi::hipFileBoolConfigParameter_t, value: bool) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_set_parameter_bool())(param, value) }
}

/// `hipFileSetParameterString`: as [`hipFileSetParameterSizeT`]; a null or non-UTF-8 string is
/// `hipFileInvalidValue`.
///
/// # Safety
/// `desc_str` must be null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileSetParameterString(
    param: ffi::hipFileStringConfigParameter_t,
    desc_str: *const c_char,
) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_set_parameter_string())(param, desc_str) }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_batch_io_set_up())(batch_idp, max_nr) }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_batch_io_submit())(batch_idp, nr, iocbp, _flags) }
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
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_batch_io_get_status())(batch_idp, min_nr, nr, iocbp, timeout) }
}

/// `hipFileBatchIOCancel`: entries not started never run, running ones are waited for, events
/// not reaped are dropped; the batch can take new entries afterwards. `hipFileInvalidValue`
/// for an unknown batch.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileBatchIOCancel(batch_idp: hipFileBatchHandle_t) -> hipFileError_t {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_batch_io_cancel())(batch_idp) }
}

/// `hipFileBatchIODestroy`: cancels the batch and forgets it; null and unknown batches are
/// ignored. When it returns, nothing of the batch touches memory.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileBatchIODestroy(batch_idp: hipFileBatchHandle_t) {
    // SAFETY: the caller's contract, the entry's too (this library's function or a tool's wrapper).
    unsafe { (table().pfn_hipfile_batch_io_destroy())(batch_idp) }
}
