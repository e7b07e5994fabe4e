//! The HIP runtime loader of hipfile-core over the two runtimes a Debian machine without a GPU
//! has: the mock HIP runtime library, whose every entry point it exercises, and Debian's real
//! `libamdhip64.so.5`, which loads and answers that there is no device.

mod common;

use std::sync::mpsc;

use hipfile_core::{CopyKind, DeviceCopy, DeviceSpan, GpuRuntime, HipError, MemoryType, Stream};
use hipfile_runtime::{Abi, LoadedRuntime, Vendor};

use common::*;

fn mock() -> LoadedRuntime {
    let path = lib_dir().join("libhipfile_mockhip.so");
    LoadedRuntime::open(path.to_str().unwrap()).expect("the mock HIP runtime loads")
}

#[test]
fn the_mock_runtime_has_hip_5_abi_and_says_it_is_the_mock() {
    let hip = mock();
    assert!(hip.is_mock());
    assert_eq!(hip.abi(), Abi::V5);
    assert_eq!(hip.version_string(), "HIP 5.2.21153");
    assert_eq!(hip.device_count(), Ok(1));
    assert_eq!(hip.current_device(), Ok(0));
    assert_eq!(hip.set_device(3), Err(HipError::INVALID_DEVICE));
    assert_eq!(hip.error_string(HipError::INVALID_VALUE), "invalid argument");
}

#[test]
fn pointer_queries_read_hip_5_attributes() {
    let hip = mock();
    let dev = hip.device_alloc(1 << 20).unwrap();
    let info = hip.pointer_info(dev + 4096).unwrap();
    assert_eq!((info.memory_type, info.device, info.base, info.size), (MemoryType::Device, 0, dev, 1 << 20));
    assert_eq!(info.bytes_after(dev + 4096), (1 << 20) - 4096);

    let pinned = hip.host_alloc(4096).unwrap();
    assert_eq!(hip.pointer_info(pinned as usize).unwrap().memory_type, MemoryType::Host);
    // HIP 5 answers hipErrorInvalidValue for memory it does not know: that is plain host memory.
    let plain = [0u8; 64];
    assert_eq!(hip.pointer_info(plain.as_ptr() as usize).unwrap().memory_type, MemoryType::Unregistered);

    let mut registered = vec![0u8; 8192];
    // SAFETY: `registered` outlives its registration.
    unsafe { hip.host_register(registered.as_mut_ptr(), registered.len()) }.unwrap();
    assert_eq!(hip.pointer_info(registered.as_ptr() as usize).unwrap().memory_type, MemoryType::Host);
    // SAFETY: registered above.
    unsafe { hip.host_unregister(registered.as_mut_ptr()) }.unwrap();
    // SAFETY: allocated above, not used afterwards.
    unsafe { hip.host_free(pinned) }.unwrap();
    // SAFETY: allocated above, not used afterwards.
    unsafe { hip.device_free(dev) }.unwrap();
    assert_eq!(hip.pointer_info(dev).unwrap().memory_type, MemoryType::Unregistered);
}

#[test]
fn copies_round_trip_and_check_device_ranges() {
    let hip = mock();
    let dev = hip.device_alloc(8192).unwrap();
    // SAFETY: the allocation above, freed at the end.
    let span = unsafe { DeviceSpan::new(dev, 8192) };
    let data = pattern(8192, 5);
    let mut back = vec![0u8; 8192];
    hip.copy_to_device(span, &data).unwrap();
    hip.copy_from_device(&mut back, span).unwrap();
    assert_eq!(back, data);
    // A device range past the allocation is the runtime's error, passed through unchanged.
    // SAFETY: the runtime refuses the range before touching memory.
    let past = unsafe { hip.memcpy(CopyKind::HostToDevice, dev + 4096, data.as_ptr() as usize, 8192, None) };
    assert_eq!(past, Err(HipError::INVALID_VALUE));
    // SAFETY: `back` holds 8192 bytes and `dev` is device memory.
    let bad_kind = unsafe { hip.memcpy_raw(back.as_mut_ptr() as usize, dev, 8, 9, None) };
    assert_eq!(bad_kind, Err(HipError(21)));
    // SAFETY: device to device inside one allocation.
    unsafe { hip.memcpy_raw(dev, dev + 4096, 4096, CopyKind::DeviceToDevice as i32, None) }.unwrap();
    hip.copy_from_device(&mut back[..4096], span).unwrap();
    assert_eq!(back[..4096], data[4096..]);
    // SAFETY: allocated above, not used afterwards.
    unsafe { hip.device_free(dev) }.unwrap();
}

#[test]
fn streams_run_copies_and_host_functions_in_order() {
    let hip = mock();
    let stream = hip.stream_create().unwrap();
    assert_ne!(stream, Stream::NULL);
    let dev = hip.device_alloc(4096).unwrap();
    // SAFETY: the allocation above, freed at the end.
    let span = unsafe { DeviceSpan::new(dev, 4096) };
    let data = pattern(4096, 9);
    let mut back = vec![0u8; 4096];
    let (tx, rx) = mpsc::channel();
    // SAFETY: `data` and `back` outlive the stream synchronisation below.
    unsafe { hip.copy_to_device_async(span, &data, stream) }.unwrap();
    // SAFETY: as above.
    unsafe { hip.copy_from_device_async(&mut back, span, stream) }.unwrap();
    hip.launch_host_func(stream, Box::new(move || tx.send("ran after the copies").unwrap())).unwrap();
    hip.stream_synchronize(stream).unwrap();
    assert_eq!(rx.try_recv(), Ok("ran after the copies"));
    assert_eq!(back, data);
    // A host function that panics does not unwind into the runtime's thread.
    hip.launch_host_func(stream, Box::new(|| panic!("planted"))).unwrap();
    hip.stream_destroy(stream).unwrap();
    assert_eq!(hip.stream_synchronize(stream), Err(HipError::INVALID_HANDLE));
    // SAFETY: allocated above, not used afterwards.
    unsafe { hip.device_free(dev) }.unwrap();
}

#[test]
fn debians_hip_runtime_loads_and_reports_no_device() {
    require_hip_headers(); // the same package brings libamdhip64.so
    let hip = LoadedRuntime::open("libamdhip64.so").expect("Debian's libamdhip64 loads");
    assert!(!hip.is_mock());
    assert_eq!((hip.vendor(), hip.abi()), (Vendor::Hip, Abi::V5));
    assert!(hip.version_string().starts_with("HIP 5."), "{}", hip.version_string());
    // No GPU on this machine: HIP says so with an error, which the loader passes through.
    let count = hip.device_count();
    assert!(matches!(count, Err(_) | Ok(0)), "{count:?}");
    // HIP 5.2 predates hipGetProcAddress, so AIS: the capability report's reason.
    let why = hipfile_backend_p2p::ais::HipAis::lookup(&hip).unwrap_err();
    assert!(why.starts_with("HIP 5.") && why.ends_with("has no hipGetProcAddress, so no hipAmdFileRead"), "{why}");
}

#[test]
fn the_mock_runtime_hands_out_its_ais_entry_points() {
    let hip = mock();
    assert!(hip.proc_address("hipAmdFileRead").is_ok() && hip.proc_address("hipAmdFileWrite").is_ok());
    assert!(hip.proc_address("hipInit").is_ok(), "the AIS engine initialises each thread with it");
    let why = hip.proc_address("hipNoSuchThing").unwrap_err();
    assert_eq!(why, "HIP 5.2.21153 has no hipNoSuchThing (hipGetProcAddress: named symbol not found)");
}
