//! The p2p backend under the driver, with mockall mocks of the GPU runtime and of the AIS
//! entry points: what reaches the engine (the per-call cap of semantics §1), and which answers
//! go to bounce (semantics §6).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hipfile_backend_p2p::P2p;
use hipfile_backend_p2p::ais::{Ais, AisApi, AisOutcome};
use hipfile_core::{
    Backend, BackendKind, Config, Direction, Driver, Error, GpuRuntime, IoRequest, MockGpuRuntime, OpError, Platform,
    Result, max_rw_count,
};

const BASE: usize = 0x7f00_0000_0000;
/// More than one call may move (semantics §1), without allocating any of it.
const SIZE: usize = 3 << 30;

/// AIS entry points that record the sizes asked for and answer with `status`.
struct Recorder {
    sizes: Arc<std::sync::Mutex<Vec<u64>>>,
    status: i32,
}

impl AisApi for Recorder {
    unsafe fn file_io(&self, _: Direction, _: i32, _: *mut std::ffi::c_void, size: u64, _: i64) -> AisOutcome {
        self.sizes.lock().unwrap().push(size);
        if self.status != 0 {
            return AisOutcome { hip: 0, size_copied: 0, status: self.status };
        }
        AisOutcome { hip: 0, size_copied: size, status: 0 }
    }
}

/// A bounce backend that moves nothing but counts its requests.
struct Bounce(Arc<AtomicU64>);

impl Backend for Bounce {
    fn name(&self) -> &'static str {
        "bounce"
    }
    fn kind(&self) -> BackendKind {
        BackendKind::Bounce
    }
    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(req.size())
    }
}

hipfile_core::backend_set! {
    enum TestBackend { P2p(P2p<Ais<Recorder>>), Bounce(Bounce) }
}

struct TestPlatform {
    gpu: Arc<MockGpuRuntime>,
    sizes: Arc<std::sync::Mutex<Vec<u64>>>,
    status: i32,
    bounced: Arc<AtomicU64>,
}

impl Platform for TestPlatform {
    type Backend = TestBackend;
    fn gpu(&self) -> std::sync::Arc<dyn GpuRuntime> {
        self.gpu.clone()
    }
    fn backends(&self, config: &Config) -> Result<Vec<TestBackend>> {
        let ais = Ais::new(Recorder { sizes: Arc::clone(&self.sizes), status: self.status });
        Ok(vec![
            TestBackend::P2p(P2p::new(ais, config.unsupported_file_systems)),
            TestBackend::Bounce(Bounce(Arc::clone(&self.bounced))),
        ])
    }
}

fn platform(status: i32) -> TestPlatform {
    let gpu = Arc::new(MockGpuRuntime::with_allocation(BASE, SIZE));
    TestPlatform { gpu, sizes: Arc::default(), status, bounced: Arc::default() }
}

/// A file with O_DIRECT, in the workspace's target directory.
fn file() -> tempfile::NamedTempFile {
    tempfile::NamedTempFile::new_in(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")).unwrap()
}

fn driver(status: i32, env: &'static [(&'static str, &'static str)]) -> Driver<TestPlatform> {
    let mut all = vec![("HIPFILE_UNSUPPORTED_FILE_SYSTEMS", "true")];
    all.extend_from_slice(env);
    Driver::with_env(platform(status), move |name| all.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
}

#[test]
fn a_call_reaches_the_engine_capped_at_max_rw_count() {
    let d = driver(0, &[]);
    let f = file();
    let h = d.handle_register(f.as_file()).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, BASE, SIZE, 0, 0) }, Ok(max_rw_count()));
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Write, h, BASE, 8192, 4096, 4096) }, Ok(8192));
    assert_eq!(*d.platform().sizes.lock().unwrap(), vec![max_rw_count() as u64, 8192]);
    assert_eq!(d.platform().bounced.load(Ordering::Relaxed), 0);
}

#[test]
fn no_path_goes_to_bounce_other_errors_are_returned() {
    for (status, compat, expected) in [
        (libc::ENODEV, "true", Ok(4096)),
        (libc::EREMOTEIO, "true", Ok(4096)),
        (libc::ENODEV, "false", Err(Error::Os(libc::ENODEV))),
        (libc::EIO, "true", Err(Error::Os(libc::EIO))),
        (libc::EINVAL, "true", Err(Error::Os(libc::EINVAL))),
    ] {
        let env: &'static [_] = if compat == "true" { &[] } else { &[("HIPFILE_ALLOW_COMPAT_MODE", "false")] };
        let d = driver(status, env);
        let f = file();
        let h = d.handle_register(f.as_file()).unwrap();
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        let read = unsafe { d.transfer(Direction::Read, h, BASE, 4096, 0, 0) };
        assert_eq!(read, expected, "status {status}, compat {compat}");
        let fell_back = d.platform().bounced.load(Ordering::Relaxed);
        assert_eq!(fell_back, u64::from(expected.is_ok()), "status {status}");
    }
}

#[test]
fn unaligned_requests_never_reach_the_engine() {
    let d = driver(0, &[]);
    let f = file();
    let h = d.handle_register(f.as_file()).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, BASE, 4096, 100, 0) }, Ok(4096)); // offset
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, BASE, 4000, 0, 0) }, Ok(4000)); // size
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, BASE, 4096, 0, 8) }, Ok(4096)); // address
    assert!(d.platform().sizes.lock().unwrap().is_empty());
    assert_eq!(d.platform().bounced.load(Ordering::Relaxed), 3);
    // With P2P only, nothing can serve them: upstream's internal error.
    let d = driver(0, &[("HIPFILE_ALLOW_COMPAT_MODE", "false")]);
    let h = d.handle_register(f.as_file()).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, BASE, 4000, 0, 0) }, Err(OpError::InternalError.into()));
}
