//! Tests of [`super`] (`gpu.rs`).

use super::*;
use hipfile_core::{DeviceCopy, DeviceSpan};

#[test]
fn pointer_queries_know_only_the_mocks_allocations() {
    let gpu = MockGpu::new(2);
    let dev = gpu.malloc(10_000).unwrap();
    let info = gpu.pointer_info(dev + 100).unwrap();
    assert_eq!((info.memory_type, info.base, info.size, info.device), (MemoryType::Device, dev, 10_000, 0));
    assert_eq!(gpu.pointer_info(dev + 10_000).unwrap().memory_type, MemoryType::Unregistered);
    let host = [0u8; 16];
    assert_eq!(gpu.pointer_info(host.as_ptr() as usize).unwrap().memory_type, MemoryType::Unregistered);
    let pinned = gpu.host_alloc(4096).unwrap();
    assert_eq!(gpu.pointer_info(pinned as usize).unwrap().memory_type, MemoryType::Host);
    gpu.set_device(1).unwrap();
    let dev1 = gpu.malloc(64).unwrap();
    assert_eq!(gpu.pointer_info(dev1).unwrap().device, 1);
    assert_eq!(gpu.set_device(2), Err(HipError::INVALID_DEVICE));
    assert_eq!(gpu.free(dev + 1), Err(HipError::INVALID_VALUE));
    gpu.free(dev).unwrap();
    assert_eq!(gpu.pointer_info(dev).unwrap().memory_type, MemoryType::Unregistered);
    // SAFETY: `pinned` came from host_alloc.
    unsafe { gpu.host_free(pinned) }.unwrap();
}

#[test]
fn current_device_is_per_thread() {
    let gpu = MockGpu::new(4);
    gpu.set_device(3).unwrap();
    let g = Arc::clone(&gpu);
    assert_eq!(std::thread::spawn(move || g.current_device().unwrap()).join().unwrap(), 0);
    assert_eq!(gpu.current_device().unwrap(), 3);
}

#[test]
fn guarded_device_memory_is_reached_only_through_the_mock() {
    let gpu = MockGpu::guarded(1);
    let dev = gpu.malloc(8192).unwrap();
    let bytes = gpu.device_view(dev, 8192).unwrap();
    assert_ne!(bytes, dev, "the address handed out is not where the bytes are");
    assert_eq!(gpu.device_view(dev + 100, 10).unwrap(), bytes + 100);
    gpu.write_device(dev + 1, b"abc").unwrap();
    let host = [7u8; 16];
    let mut back = [0u8; 16];
    let copy = |dst: usize, src: usize, len: usize, kind: CopyKind| {
        // SAFETY: the host buffers outlive the copies, which the null stream runs at once.
        unsafe { gpu.hip_memcpy(dst, src, len, kind, Stream::NULL) }.unwrap();
    };
    copy(dev + 4096, host.as_ptr() as usize, 16, CopyKind::HostToDevice);
    copy(dev + 4090, dev + 4096, 16, CopyKind::Default);
    copy(back.as_mut_ptr() as usize, dev, 4, CopyKind::DeviceToHost);
    assert_eq!(&back[..4], b"\0abc");
    let mut moved = [0u8; 16];
    gpu.read_device(dev + 4090, &mut moved).unwrap();
    assert_eq!(moved, [7u8; 16]);
    assert_eq!(gpu.pointer_info(dev + 5).unwrap().memory_type, MemoryType::Device);
    let managed = gpu.malloc_managed(64).unwrap();
    assert_eq!(gpu.device_view(managed, 64).unwrap(), managed, "managed memory is the host's too");
    assert_eq!(gpu.pointer_info(managed + 8).unwrap().memory_type, MemoryType::Managed);
    gpu.free(dev).unwrap();
    gpu.free(managed).unwrap();
    assert_eq!(gpu.device_view(dev, 1), Err(HipError::INVALID_VALUE));
}

#[test]
fn copies_check_ranges_and_obey_injected_faults() {
    let gpu = MockGpu::new(1);
    let dev = gpu.malloc(4096).unwrap();
    // SAFETY: the allocation above, freed only when `gpu` goes.
    let span = unsafe { DeviceSpan::new(dev, 4096) };
    let src = vec![5u8; 4096];
    gpu.copy_to_device(span, &src).unwrap();
    assert_eq!(gpu.copy_to_device(span.part(1, 4095), &src), Err(HipError::INVALID_VALUE), "longer than the span");
    // SAFETY: a range the mock checks and refuses (it runs past the allocation).
    let past = unsafe { gpu.memcpy(CopyKind::HostToDevice, dev + 1, src.as_ptr() as usize, 4096, None) };
    assert_eq!(past, Err(HipError::INVALID_VALUE));
    gpu.faults().fail_copy(2, HipError::LAUNCH_FAILURE);
    let mut out = vec![0u8; 4096];
    gpu.copy_from_device(&mut out, span).unwrap();
    assert_eq!(out, src);
    assert_eq!(gpu.copy_from_device(&mut out, span), Err(HipError::LAUNCH_FAILURE));
    gpu.copy_from_device(&mut out, span).unwrap();
}

#[test]
fn streams_run_in_order_and_report_failures_at_synchronize() {
    let gpu = MockGpu::new(1);
    let s = gpu.stream_create().unwrap();
    let dev = gpu.malloc(1 << 20).unwrap();
    // SAFETY: the allocation above, alive until `gpu` goes.
    let span = unsafe { DeviceSpan::new(dev, 1 << 20) };
    let src: Vec<u8> = (0..1 << 20).map(|i| i as u8).collect();
    let order = Arc::new(Mutex::new(Vec::new()));
    gpu.faults().delay_copies(std::time::Duration::from_millis(5));
    for i in 0..4 {
        // SAFETY: `src` outlives the synchronize below.
        unsafe { gpu.copy_to_device_async(span.part(i * 4096, 4096), &src[i * 4096..][..4096], s) }.unwrap();
        let o = Arc::clone(&order);
        gpu.launch_host_func(s, Box::new(move || lock(&o).push(i))).unwrap();
    }
    gpu.stream_synchronize(s).unwrap();
    assert_eq!(*lock(&order), vec![0, 1, 2, 3]);
    let mut out = vec![0u8; 4 * 4096];
    gpu.read_device(dev, &mut out).unwrap();
    assert_eq!(out, src[..4 * 4096]);
    gpu.faults().clear();
    gpu.faults().fail_copy(1, HipError::UNKNOWN);
    // SAFETY: as above.
    unsafe { gpu.copy_to_device_async(span, &src[..4096], s) }.unwrap();
    assert_eq!(gpu.stream_synchronize(s), Err(HipError::UNKNOWN));
    gpu.stream_destroy(s).unwrap();
    assert_eq!(gpu.stream_synchronize(s), Err(HipError::INVALID_HANDLE));
}

#[test]
fn host_registration() {
    let gpu = MockGpu::new(1);
    let mut mem = vec![0u8; 8192];
    // SAFETY: `mem` outlives the registration.
    unsafe { gpu.host_register(mem.as_mut_ptr(), 8192) }.unwrap();
    assert_eq!(gpu.pointer_info(mem.as_ptr() as usize + 10).unwrap().memory_type, MemoryType::Host);
    // SAFETY: as above.
    assert!(unsafe { gpu.host_register(mem[100..].as_mut_ptr(), 10) }.is_err());
    // SAFETY: registered above.
    unsafe { gpu.host_unregister(mem.as_mut_ptr()) }.unwrap();
    assert_eq!(gpu.pointer_info(mem.as_ptr() as usize).unwrap().memory_type, MemoryType::Unregistered);
}
