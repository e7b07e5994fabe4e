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
    rt.expect_enter_primary_context().returning(|| None);
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
