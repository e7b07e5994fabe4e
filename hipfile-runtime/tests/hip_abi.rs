//! The HIP 5 ABI that `hipfile_runtime` declares by hand, checked against hip-runtime-sys
//! (bindgen output of HIP's headers) and against Debian's real `libamdhip64.so.5`.
//!
//! hip-runtime-sys links libamdhip64 at link time, which the product must not do, so it is
//! only a reference here: `cargo test -p hipfile-runtime --features hip-abi-check --test hip_abi`
//! with `HIP_PATH=/usr` (as `cargo xtask ci` runs it).
#![cfg(feature = "hip-abi-check")]

use std::mem::{offset_of, size_of};

use hip_runtime_sys as sys;
use hipfile_core::{CopyKind, HipError};
use hipfile_runtime::{Abi, LoadedRuntime, PointerAttributes, memory_type_v5};

#[test]
fn pointer_attributes_match_hip_5() {
    assert_eq!(size_of::<PointerAttributes>(), size_of::<sys::hipPointerAttribute_t>());
    assert_eq!(offset_of!(PointerAttributes, memory_type), offset_of!(sys::hipPointerAttribute_t, memoryType));
    assert_eq!(offset_of!(PointerAttributes, device), offset_of!(sys::hipPointerAttribute_t, device));
    assert_eq!(offset_of!(PointerAttributes, device_pointer), offset_of!(sys::hipPointerAttribute_t, devicePointer));
    assert_eq!(offset_of!(PointerAttributes, host_pointer), offset_of!(sys::hipPointerAttribute_t, hostPointer));
    assert_eq!(offset_of!(PointerAttributes, is_managed), offset_of!(sys::hipPointerAttribute_t, isManaged));
    assert_eq!(
        offset_of!(PointerAttributes, allocation_flags),
        offset_of!(sys::hipPointerAttribute_t, allocationFlags)
    );
    assert_eq!(size_of::<sys::hipMemoryType>(), size_of::<i32>());
}

#[test]
fn enum_values_match_hip_5() {
    assert_eq!(sys::hipMemoryType::hipMemoryTypeHost as i32, memory_type_v5::HOST);
    assert_eq!(sys::hipMemoryType::hipMemoryTypeDevice as i32, memory_type_v5::DEVICE);
    assert_eq!(sys::hipMemoryType::hipMemoryTypeArray as i32, memory_type_v5::ARRAY);
    assert_eq!(sys::hipMemoryType::hipMemoryTypeUnified as i32, memory_type_v5::UNIFIED);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyHostToHost as i32, CopyKind::HostToHost as i32);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyHostToDevice as i32, CopyKind::HostToDevice as i32);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyDeviceToHost as i32, CopyKind::DeviceToHost as i32);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyDeviceToDevice as i32, CopyKind::DeviceToDevice as i32);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyDefault as i32, CopyKind::Default as i32);
    for (ours, theirs) in [
        (HipError::INVALID_VALUE, sys::hipError_t::hipErrorInvalidValue),
        (HipError::OUT_OF_MEMORY, sys::hipError_t::hipErrorOutOfMemory),
        (HipError::NOT_INITIALIZED, sys::hipError_t::hipErrorNotInitialized),
        (HipError::INVALID_DEVICE_POINTER, sys::hipError_t::hipErrorInvalidDevicePointer),
        (HipError::NO_DEVICE, sys::hipError_t::hipErrorNoDevice),
        (HipError::INVALID_DEVICE, sys::hipError_t::hipErrorInvalidDevice),
        (HipError::INVALID_HANDLE, sys::hipError_t::hipErrorInvalidHandle),
        (HipError::NOT_FOUND, sys::hipError_t::hipErrorNotFound),
        (HipError::NOT_READY, sys::hipError_t::hipErrorNotReady),
        (HipError::LAUNCH_FAILURE, sys::hipError_t::hipErrorLaunchFailure),
        (HipError::UNKNOWN, sys::hipError_t::hipErrorUnknown),
    ] {
        assert_eq!(ours.0, theirs as i32, "{theirs:?}");
    }
}

#[test]
fn the_loader_reads_the_same_version_as_a_linked_call() {
    let mut linked = 0;
    // SAFETY: a plain call into the linked runtime with a writable output.
    let rc = unsafe { sys::hipRuntimeGetVersion(&mut linked) };
    assert_eq!(rc, sys::hipError_t::hipSuccess);
    let loaded = LoadedRuntime::open("libamdhip64.so.5").expect("Debian's libamdhip64.so.5");
    assert_eq!(loaded.version(), linked);
    assert_eq!(loaded.abi(), Abi::V5);
}
