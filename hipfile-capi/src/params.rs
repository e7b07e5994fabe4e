//! The driver's properties and parameters (semantics §13): `hipFileDriverGetProperties`, the
//! `hipFileDriverSet*` setters, `hipFileGetParameter*` and `hipFileSetParameter*`.

use std::ffi::{c_char, c_int};

use hipfile::{BoolParam, Driver, OpError, SizeParam, StringParam, SystemPlatform};

use crate::driver;
use crate::ffi::{self, FromResult, boundary, hipFileError_t};

/// `hipFileDriverGetProperties` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileDriverGetProperties(
    props: *mut ffi::hipFileDriverProps_t,
) -> hipFileError_t {
    boundary(|| {
        if props.is_null() {
            return hipFileError_t::op(OpError::InvalidValue);
        }
        // SAFETY: non-null, and writable by the caller's contract.
        unsafe { props.write(ffi::c_properties(driver().properties())) };
        hipFileError_t::SUCCESS
    })
}

/// `hipFileDriverSetPollMode` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileDriverSetPollMode(poll: bool, poll_threshold_size: usize) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().set_poll_mode(poll, poll_threshold_size)))
}

/// `hipFileDriverSetMaxDirectIOSize` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileDriverSetMaxDirectIOSize(max_direct_io_size: usize) -> hipFileError_t {
    set_size(SizeParam::MaxDirectIoSizeKb, max_direct_io_size)
}

/// `hipFileDriverSetMaxCacheSize` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileDriverSetMaxCacheSize(max_cache_size: usize) -> hipFileError_t {
    set_size(SizeParam::MaxDeviceCacheSizeKb, max_cache_size)
}

/// `hipFileDriverSetMaxPinnedMemSize` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileDriverSetMaxPinnedMemSize(max_pinned_size: usize) -> hipFileError_t {
    set_size(SizeParam::MaxDevicePinnedMemSizeKb, max_pinned_size)
}

fn set_size(param: SizeParam, value: usize) -> hipFileError_t {
    boundary(|| hipFileError_t::from_result(driver().set_size_parameter(param, value)))
}

/// `hipFileGetParameterSizeT` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileGetParameterSizeT(
    param: ffi::hipFileSizeTConfigParameter_t,
    value: *mut usize,
) -> hipFileError_t {
    // SAFETY: the caller's contract.
    unsafe { get_parameter(SizeParam::from_raw(param), value, Driver::size_parameter) }
}

/// `hipFileGetParameterBool` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileGetParameterBool(
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

/// `hipFileGetParameterString` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileGetParameterString(
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

/// `hipFileSetParameterSizeT` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileSetParameterSizeT(
    param: ffi::hipFileSizeTConfigParameter_t,
    value: usize,
) -> hipFileError_t {
    match SizeParam::from_raw(param) {
        Some(p) => set_size(p, value),
        None => hipFileError_t::op(OpError::InvalidValue),
    }
}

/// `hipFileSetParameterBool` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) extern "C" fn own_hipFileSetParameterBool(
    param: ffi::hipFileBoolConfigParameter_t,
    value: bool,
) -> hipFileError_t {
    boundary(|| match BoolParam::from_raw(param) {
        Some(p) => hipFileError_t::from_result(driver().set_bool_parameter(p, value)),
        None => hipFileError_t::op(OpError::InvalidValue),
    })
}

/// `hipFileSetParameterString` as this library serves it: its entry of the dispatch table (trace.rs).
pub(crate) unsafe extern "C" fn own_hipFileSetParameterString(
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
