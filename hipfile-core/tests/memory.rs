//! Device memory the program owns (`DeviceMemory`): bounded copies, and freed only when its last
//! owner (the value, a registration, a queued stream-ordered operation) is gone.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{driver, file_with, pattern};
use hipfile_core::{DeviceMemory, DriverGuard, GpuRuntime, MemoryType};

#[test]
fn copies_stay_inside_the_memory() {
    let (gpu, _d) = driver(&[]);
    let gpu: Arc<dyn GpuRuntime> = gpu;
    let memory = DeviceMemory::alloc(&gpu, 1, 8192).unwrap();
    assert_eq!((memory.len(), memory.device()), (8192, 1));
    assert_eq!(gpu.pointer_info(memory.addr()).unwrap().device, 1, "allocated on the device asked for");
    assert_eq!(gpu.current_device().unwrap(), 0, "the thread's device left as it was");
    memory.copy_from_host(8000, &[7; 192]).unwrap();
    let mut back = [0u8; 192];
    memory.copy_to_host(8000, &mut back).unwrap();
    assert_eq!(back, [7; 192]);
    assert!(memory.copy_from_host(8001, &[7; 192]).is_err(), "one byte past the end");
    assert!(memory.copy_to_host(usize::MAX, &mut back).is_err(), "an offset that overflows");
    let addr = memory.addr();
    drop(memory);
    assert_eq!(gpu.pointer_info(addr).unwrap().memory_type, MemoryType::Unregistered, "freed on drop");
}

#[test]
fn registrations_and_queued_operations_keep_the_memory() {
    let (gpu, d) = driver(&[]);
    let guard = DriverGuard::open(Arc::new(d)).unwrap();
    let data = pattern(1 << 20, 9);
    let (_dir, f) = file_with(&data);
    let file = guard.register_file(&f).unwrap();
    let memory = guard.device_alloc(1 << 20).unwrap();
    let addr = memory.addr();
    let live = || gpu.pointer_info(addr).unwrap().memory_type == MemoryType::Device;

    let buffer = guard.register_memory(&memory).unwrap();
    drop(memory);
    assert!(live(), "the registration keeps it");
    assert_eq!(file.read(&buffer, 1 << 20, 0, 0).unwrap(), 1 << 20);

    let stream = gpu.stream_create().unwrap();
    let io = file.read_async(&buffer, 4096, 4096, 8192, stream).unwrap();
    drop(buffer);
    assert!(live(), "the queued operation keeps it");
    gpu.stream_synchronize(stream).unwrap();
    let since = Instant::now();
    while io.result().is_none() && since.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(io.result(), Some(4096));
    drop(io);
    // The operation may have gone last, on a library thread: its memory is then freed by the
    // program's next allocation or free.
    while live() && since.elapsed() < Duration::from_secs(10) {
        drop(guard.device_alloc(1).unwrap());
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!live(), "freed once its last owner is gone");
    gpu.stream_destroy(stream).unwrap();
}
