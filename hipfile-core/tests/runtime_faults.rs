//! Failure injection through a mockall mock of the GPU runtime: whatever the runtime reports
//! reaches the caller unchanged, as `hipFileHipDriverError` with the HIP code.

mod common;

use std::sync::Arc;

use hipfile_backend_mock::{Faults, MockBounce};
use hipfile_core::Direction;
use hipfile_core::{Config, CopyKind, Driver, Error, GpuRuntime, HipError, MockGpuRuntime, OpError, Platform, Result};

const BASE: usize = 0x7f00_0000_0000;
const SIZE: usize = 1 << 20;

struct BounceOnly(Arc<MockGpuRuntime>);

impl Platform for BounceOnly {
    type Backend = MockBounce<MockGpuRuntime>;
    fn gpu(&self) -> std::sync::Arc<dyn GpuRuntime> {
        self.0.clone()
    }
    fn backends(&self, _: &Config) -> Result<Vec<Self::Backend>> {
        Ok(vec![MockBounce::new(Arc::clone(&self.0), Arc::new(Faults::default()))])
    }
}

fn runtime() -> MockGpuRuntime {
    MockGpuRuntime::with_allocation(BASE, SIZE)
}

#[test]
fn a_failing_copy_is_a_hip_driver_error_with_its_code() {
    let mut rt = runtime();
    rt.expect_memcpy()
        .withf(|kind, dst, _, len, stream| {
            (*kind, *dst, *len, *stream) == (CopyKind::HostToDevice, BASE + 8, 4000, None)
        })
        .times(1)
        .returning(|_, _, _, _, _| Err(HipError::LAUNCH_FAILURE));
    rt.expect_memcpy()
        .withf(|kind, _, src, _, _| (*kind, *src) == (CopyKind::DeviceToHost, BASE))
        .times(1)
        .returning(|_, _, _, _, _| Err(HipError(98_765)));
    let d = Driver::with_env(BounceOnly(Arc::new(rt)), |_| None);
    let (_dir, f) = common::file_with(&[1; 8192]);
    let h = d.handle_register(&f).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    let e = unsafe { d.transfer(Direction::Read, h, BASE, 4000, 0, 8) }.unwrap_err();
    assert_eq!(e, Error::Hip(HipError::LAUNCH_FAILURE));
    assert_eq!(e.to_c_pair(), (OpError::HipDriverError.code(), 719));
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    let e = unsafe { d.transfer(Direction::Write, h, BASE, 100, 0, 0) }.unwrap_err();
    assert_eq!(e.to_c_pair(), (5011, 98_765), "unknown HIP codes pass through unchanged");
    assert_eq!(common::contents(&f), vec![1; 8192], "nothing written");
}

#[test]
fn runtime_errors_during_registration() {
    let mut rt = MockGpuRuntime::new();
    let mut seq = mockall::Sequence::new();
    rt.expect_pointer_info().times(1).in_sequence(&mut seq).returning(|_| Err(HipError::NOT_FOUND));
    rt.expect_pointer_info().times(1).in_sequence(&mut seq).returning(|_| Err(HipError::NOT_INITIALIZED));
    rt.expect_pointer_info().times(1).in_sequence(&mut seq).returning(|_| Err(HipError::UNKNOWN));
    let d = Driver::with_env(BounceOnly(Arc::new(rt)), |_| None);
    assert_eq!(d.buf_register(BASE, 64, 0), Err(Error::Op(OpError::InvalidValue)));
    assert_eq!(d.buf_register(BASE, 64, 0).unwrap_err().to_c_pair(), (5011, 3));
    // During I/O a runtime error is returned as -(hipError_t), upstream's convention.
    let (_dir, f) = common::file_with(&[0; 64]);
    let h = d.handle_register(&f).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    let r = unsafe { d.transfer(Direction::Read, h, BASE, 64, 0, 0) };
    assert_eq!(hipfile_core::error::ssize_result(&r).value, -999);
}

/// A batch asks the runtime about each allocation its entries name once: an entry inside one
/// already asked about (another slice of one tensor) takes that answer, its bounds included.
#[test]
fn a_batch_asks_about_each_allocation_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use hipfile_core::{BatchEntry, MemoryType, PointerInfo};
    const OTHER: usize = BASE + (16 << 20);
    let asked = Arc::new(AtomicUsize::new(0));
    let mut rt = MockGpuRuntime::new();
    let count = Arc::clone(&asked);
    rt.expect_pointer_info().returning(move |addr| {
        count.fetch_add(1, Ordering::Relaxed);
        let device = |base, device| PointerInfo { memory_type: MemoryType::Device, device, base, size: SIZE };
        Ok(match addr {
            a if (BASE..BASE + SIZE).contains(&a) => device(BASE, 0),
            a if (OTHER..OTHER + SIZE).contains(&a) => device(OTHER, 1),
            _ => PointerInfo { memory_type: MemoryType::Unregistered, device: -1, base: 0, size: 0 },
        })
    });
    let d = Driver::with_env(BounceOnly(Arc::new(rt)), |_| None);
    let (_dir, f) = common::file_with(&[0; 8192]);
    let handle = d.handle_register(&f).unwrap();
    let id = d.batch_setup(16).unwrap();
    let at = |buffer_base, size| BatchEntry {
        direction: Direction::Read,
        handle,
        buffer_base,
        buffer_offset: 0,
        file_offset: 0,
        size,
        cookie: 0,
    };
    let mut entries = vec![at(BASE, 4096), at(BASE + 4096, 4096), at(OTHER + 64, 64), at(BASE + SIZE - 100, 100)];
    entries.extend([at(OTHER, 64), at(BASE + SIZE - 100, 101)]);
    // SAFETY: mock device memory; the last entry passes its allocation's end, so the batch is
    // refused before any entry runs.
    let refused = unsafe { d.batch_submit(id, &entries) };
    assert_eq!(refused, Err(Error::Op(OpError::InvalidValue)), "bounds from the first answer");
    assert_eq!(asked.load(Ordering::Relaxed), 2, "one query for each of the two allocations");
    // SAFETY: as above.
    let alone = unsafe { d.batch_submit(id, &[at(BASE + SIZE - 100, 101)]) };
    assert_eq!(alone, Err(Error::Op(OpError::InvalidValue)), "the same answer asked afresh");
    assert_eq!(asked.load(Ordering::Relaxed), 3, "each submission asks again");
}
