//! The driver's properties and parameters (semantics §13): `hipFileDriverGetProperties`, the
//! `hipFileDriverSet*` setters, `hipFileGetParameter*` and `hipFileSetParameter*`.

use std::ffi::{c_char, c_int};

use hipfile::{BoolParam, Driver, OpError, SizeParam, StringParam, SystemPlatform};

use crate::driver;
use crate::ffi::{self, FromResult, boundary, hipFileError_t};

/// `hipFileDriverGetProperties`: the open driver's properties, or while it is closed those the
/// next open would have (semantics §13). Does not open the driver.
///
/// Returns `hipFileInvalidValue` for a null `props`.
///
/// # Safety
/// `props` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFileDriverGetProperties(props: *mut ffi::hipFileDriverProps_t) -> hipFileError_t {
    boundary(|| {
        if props.is_null() {
            return hipFileError_t::op(OpError::InvalidValue);
        }
        // SAFETY: non-null, and writable by the caller's contract.
        unsafe { props.write(ffi::c_properties(driver().properties())) };
        hipFileError_t::SUCCESS
    })
}

/// `hipFileDriverSetPollMode`: stages poll mode and its threshold (KiB) for the next open
/// (kept and reported; nothing polls here). `hipFileDriverAlreadyOpen` while open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverSetPollMode(poll: bool, poll_threshold_size: usize) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().set_poll_mode(poll, poll_threshold_size)))
}

/// `hipFileDriverSetMaxDirectIOSize`: stages the bounce path's chunk (KiB, a multiple of 4 from
/// 64 to 262144) for the next open. `hipFileDriverAlreadyOpen` while open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverSetMaxDirectIOSize(max_direct_io_size: usize) -> hipFileError_t {
    set_size(SizeParam::MaxDirectIoSizeKb, max_direct_io_size)
}

/// `hipFileDriverSetMaxCacheSize`: stages the device cache size (KiB; kept and reported) for
/// the next open. `hipFileDriverAlreadyOpen` while open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverSetMaxCacheSize(max_cache_size: usize) -> hipFileError_t {
    set_size(SizeParam::MaxDeviceCacheSizeKb, max_cache_size)
}

/// `hipFileDriverSetMaxPinnedMemSize`: stages the pinned staging memory per device (KiB, at
/// least 1024) for the next open. `hipFileDriverAlreadyOpen` while open.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileDriverSetMaxPinnedMemSize(max_pinned_size: usize) -> hipFileError_t {
    set_size(SizeParam::MaxDevicePinnedMemSizeKb, max_pinned_size)
}

fn set_size(param: SizeParam, value: usize) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().set_size_parameter(param, value)))
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
    // SAFETY: the caller's contract.
    unsafe { get_parameter(SizeParam::from_raw(param), value, Driver::size_parameter) }
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
    // SAFETY: the caller's contract.
    unsafe { get_parameter(BoolParam::from_raw(param), value, Driver::bool_parameter) }
}

/// Stores parameter `param`'s value (as `get` reads it) in `*value`; `hipFileInvalidValue` for
/// an unknown parameter or a null `value`.
///
/// # Safety
/// `value` must be null or writable.
unsafe fn get_parameter<P, T>(
    param: Option<P>,
    value: *mut T,
    get: fn(&Driver<SystemPlatform>, P) -> T,
) -> hipFileError_t {
    boundary(|| match param {
        Some(p) if !value.is_null() => {
            // SAFETY: non-null, and writable by the caller's contract.
            unsafe { value.write(get(driver(), p)) };
            hipFileError_t::SUCCESS
        }
        _ => hipFileError_t::op(OpError::InvalidValue),
    })
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
    boundary(|| {
        let (Some(p), Ok(len)) = (StringParam::from_raw(param), usize::try_from(len)) else {
            return hipFileError_t::op(OpError::InvalidValue);
        };
        if desc_str.is_null() {
            return hipFileError_t::op(OpError::InvalidValue);
        }
        hipFileError_t::from_result((|| {
            let value = driver().string_parameter(p);
            if value.len() >= len {
                return Err(OpError::InvalidValue.into());
            }
            // SAFETY: `len` writable bytes by the caller's contract, and the value with its NUL
            // fits in them (checked above).
            let out = unsafe { std::slice::from_raw_parts_mut(desc_str.cast::<u8>(), value.len() + 1) };
            out[..value.len()].copy_from_slice(value.as_bytes());
            out[value.len()] = 0;
            Ok(())
        })())
    })
}

/// `hipFileSetParameterSizeT`: stages the value for the next open (semantics §13).
///
/// Returns `hipFileDriverAlreadyOpen` while the driver is open, `hipFileInvalidValue` for an
/// unknown parameter or a value out of its range.
#[unsafe(no_mangle)]
pub extern "C" fn hipFileSetParameterSizeT(param: ffi::hipFileSizeTConfigParameter_t, value: usize) -> hipFileError_t {
    match SizeParam::from_raw(param) {
        Some(p) => set_size(p, value),
        None => hipFileError_t::op(OpError::InvalidValue),
    }
}

/// `hipFileSetParameterBool`: as [`hipFileSetParameterSizeT`].
#[unsafe(no_mangle)]
pub extern "C" fn hipFileSetParameterBool(param: ffi::hipFileBoolConfigParameter_t, value: bool) -> hipFileError_t {
    boundary(|| match BoolParam::from_raw(param) {
        Some(p) => hipFileError_t::from_result(driver().set_bool_parameter(p, value)),
        None => hipFileError_t::op(OpError::InvalidValue),
    })
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
    boundary(|| {
        let Some(p) = StringParam::from_raw(param).filter(|_| !desc_str.is_null()) else {
            return hipFileError_t::op(OpError::InvalidValue);
        };
        // SAFETY: non-null and NUL-terminated by the caller's contract.
        let Ok(value) = unsafe { std::ffi::CStr::from_ptr(desc_str) }.to_str() else {
            return hipFileError_t::op(OpError::InvalidValue);
        };
        hipFileError_t::from_result(driver().set_string_parameter(p, value))
    })
}
