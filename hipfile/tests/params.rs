//! Parameters steer the bounce path for real (semantics §13): a pinned-memory limit set by
//! parameter bounds the staging the system platform's bounce backend keeps (counted on the mock
//! GPU), and the close restores the defaults.

use std::sync::Arc;

use hipfile::{Driver, DriverGuard, SizeParam, SystemPlatform};
use hipfile_backend_mock::MockGpu;

const REGION: usize = 4 << 20;
const THREADS: usize = 8;

/// Pinned allocations on the mock GPU after 8 threads each read 4 MiB three times, with
/// `staged` parameters set before the open.
fn pinned_after_reads(staged: &[(SizeParam, usize)]) -> usize {
    let gpu = MockGpu::new(1);
    let driver = Arc::new(Driver::with_env(SystemPlatform::over_mock(Arc::clone(&gpu)), |name| {
        matches!(name, "HIPFILE_BACKEND" | "HIPFILE_BOUNCE_THREADS")
            .then(|| if name == "HIPFILE_BACKEND" { "bounce".into() } else { "8".into() })
    }));
    for &(p, v) in staged {
        driver.set_size_parameter(p, v).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, vec![5u8; THREADS * REGION]).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let pinned = {
        let guard = DriverGuard::open(Arc::clone(&driver)).unwrap();
        for &(p, v) in staged {
            assert_eq!(driver.size_parameter(p), v, "{p:?} applied");
        }
        let registered = guard.register_file(&file).unwrap();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (gpu, registered, guard) = (&gpu, &registered, &guard);
                s.spawn(move || {
                    let dev = gpu.malloc(REGION).unwrap();
                    let buffer = guard.register_buffer(dev, REGION).unwrap();
                    for _ in 0..3 {
                        assert_eq!(registered.read(&buffer, REGION, (t * REGION) as u64, 0).unwrap(), REGION);
                    }
                });
            }
        });
        gpu.pinned_allocations().values().sum()
    };
    assert_eq!(driver.size_parameter(SizeParam::MaxDevicePinnedMemSizeKb), 256 << 10, "default after close");
    assert_eq!(driver.size_parameter(SizeParam::MaxDirectIoSizeKb), 4 << 10, "default after close");
    pinned
}

#[test]
fn a_pinned_memory_limit_set_by_parameter_bounds_the_staging() {
    let chunk = (SizeParam::MaxDirectIoSizeKb, 1024);
    let unlimited = pinned_after_reads(&[chunk]);
    // 3 MiB of staging holds one lane of two 1 MiB buffers (and their guard pages).
    let limited = pinned_after_reads(&[chunk, (SizeParam::MaxDevicePinnedMemSizeKb, 3 << 10)]);
    assert!(limited <= 2, "{limited} pinned allocations under a 3 MiB limit");
    assert!(unlimited >= 8, "{unlimited} pinned allocations without a limit: the test would not tell");
}
