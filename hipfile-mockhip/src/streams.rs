//! Streams and events of the mock HIP runtime: created, recorded, waited for, destroyed, and
//! host functions queued on them.

use std::ffi::{c_int, c_uint, c_void};

use hipfile_backend_mock::fork_gate;
use hipfile_core::{GpuRuntime, HipError};

use crate::{call, call_waiting, gpu, put, stream};

/// `hipStreamCreate`.
///
/// # Safety
/// `s` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreate(s: *mut *mut c_void) -> c_int {
    call(|| {
        if s.is_null() {
            return Err(HipError::INVALID_VALUE);
        }
        let created = gpu().stream_create()?;
        // SAFETY: the caller's contract; checked non-null above.
        unsafe { put(s, created.as_raw() as *mut c_void) }
    })
}

/// `hipStreamCreateWithFlags`: the mock's streams never wait for the null stream (which runs
/// its work at once), so every flag means the same.
///
/// # Safety
/// `s` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithFlags(s: *mut *mut c_void, _flags: c_uint) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { hipStreamCreate(s) }
}

/// `hipStreamWaitValue32` with `hipStreamWaitValueGte` (cyclic, as CUDA's) on pinned host
/// memory; other comparisons are `hipErrorInvalidValue` (libhipfile uses only this one).
///
/// # Safety
/// `ptr` must be a word of memory from `hipHostMalloc` that outlives the wait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamWaitValue32(
    s: *mut c_void,
    ptr: *mut c_void,
    value: u32,
    flags: c_uint,
    mask: u32,
) -> c_int {
    call(|| {
        if flags != 0 || mask != u32::MAX {
            return Err(HipError::INVALID_VALUE);
        }
        // SAFETY: the caller's contract.
        unsafe { gpu().stream_wait_value32(stream(s), ptr as usize, value) }
    })
}

/// `hipEventCreateWithFlags`.
///
/// # Safety
/// `event` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut *mut c_void, _flags: c_uint) -> c_int {
    // SAFETY: the caller's contract.
    call(|| unsafe { put(event, gpu().event_create()?.as_raw() as *mut c_void) })
}

/// `hipEventCreate`.
///
/// # Safety
/// `event` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreate(event: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { hipEventCreateWithFlags(event, 0) }
}

/// `hipEventRecord`.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventRecord(event: *mut c_void, s: *mut c_void) -> c_int {
    call(|| gpu().event_record(crate::event(event), stream(s)))
}

/// `hipEventQuery`: `hipErrorNotReady` while the work before the event is still to run.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventQuery(event: *mut c_void) -> c_int {
    call(|| if gpu().event_query(crate::event(event))? { Ok(()) } else { Err(HipError::NOT_READY) })
}

/// Waits until the streams have reached `event`.
pub(crate) fn wait_event(event: *mut c_void) -> Result<(), HipError> {
    while !{
        let _pass = fork_gate::pass(); // one lookup at a time, not across the wait
        gpu().event_query(crate::event(event))?
    } {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
    Ok(())
}

/// `hipEventSynchronize`.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventSynchronize(event: *mut c_void) -> c_int {
    call_waiting(|| wait_event(event))
}

/// `hipEventDestroy`.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventDestroy(event: *mut c_void) -> c_int {
    call(|| gpu().event_destroy(crate::event(event)))
}

/// `hipStreamDestroy`: waits for the stream's work first.
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamDestroy(s: *mut c_void) -> c_int {
    call_waiting(|| gpu().stream_destroy(stream(s)))
}

/// `hipStreamSynchronize`.
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamSynchronize(s: *mut c_void) -> c_int {
    call_waiting(|| gpu().stream_synchronize(stream(s)))
}

/// `hipLaunchHostFunc`: `f(user_data)` runs after the work queued before it on `s`.
///
/// # Safety
/// `f` must be safe to call with `user_data` from another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipLaunchHostFunc(
    s: *mut c_void,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    user_data: *mut c_void,
) -> c_int {
    call(|| {
        let f = f.ok_or(HipError::INVALID_VALUE)?;
        let data = user_data as usize;
        // SAFETY: the caller's contract: `f` accepts `user_data` on any thread.
        gpu().launch_host_func(stream(s), Box::new(move || unsafe { f(data as *mut c_void) }))
    })
}
