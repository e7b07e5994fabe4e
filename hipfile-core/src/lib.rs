//! hipfile-core: hipFile's behaviour, implemented once.
//!
//! Everything that makes hipfile-rs a hipFile lives here: the error codes and their C
//! conventions ([`error`]), the configuration read at driver open ([`config`]), registered
//! files ([`file`](mod@file)), the driver's use count, registries and I/O path ([`driver`]), the
//! backend interface ([`backend`]), the GPU runtime interface ([`gpu`]) and the statistics
//! ([`stats`]). Backends, the C ABI and the tools build on it; this crate exports no C symbols,
//! loads no library (the GPU runtimes are `hipfile-runtime`'s) and holds no global state but the
//! fork generation and which statistics slot each thread owns.
//!
//! Invariants it keeps:
//! - a handle is an opaque key: garbage or stale keys are `hipFileHandleNotRegistered`;
//! - a backend only ever sees device ranges checked against their allocation
//!   ([`DeviceSpan::new`] is `unsafe` for that reason);
//! - one call moves at most [`max_rw_count`] bytes;
//! - configuration is read when the driver opens, never on an I/O path.
//!
//! # Example
//! Reading a file into (emulated) GPU memory:
//! ```
//! use std::sync::Arc;
//! use hipfile_core::{Driver, DriverGuard};
//! use hipfile_backend_mock::{MockGpu, MockPlatform};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("hipfile-doc-{}", std::process::id()));
//! std::fs::write(&path, vec![7u8; 8192])?;
//! let file = std::fs::File::open(&path)?;
//!
//! let gpu = MockGpu::new(1);
//! let driver = Arc::new(Driver::new(MockPlatform::new(gpu.clone())));
//! let guard = DriverGuard::open(driver)?;
//! let dev = gpu.malloc(8192)?;
//! let buffer = guard.register_buffer(dev, 8192)?;
//! let handle = guard.register_file(&file)?;
//! assert_eq!(handle.read(&buffer, 8192, 0, 0)?, 8192);
//!
//! let mut host = vec![0u8; 8192];
//! gpu.read_device(dev, &mut host)?;
//! assert!(host.iter().all(|&b| b == 7));
//! # drop((handle, buffer)); std::fs::remove_file(path)?; Ok(()) }
//! ```

/// The version of upstream hipFile's API this library implements (`hipFileGetVersion`, the
/// header's `HIPFILE_VERSION_*`, the driver properties), which is the version of every artifact
/// of hipfile-rs: the workspace's, set in one place (its `Cargo.toml`). 0.5.0, the first release
/// with the statistics calls (docs/compat.md, "Version").
pub const API_VERSION: (u32, u32, u32) = parse_version(env!("CARGO_PKG_VERSION"));

/// `major.minor.patch` as numbers, at compile time (a version of another shape does not build).
const fn parse_version(text: &str) -> (u32, u32, u32) {
    let bytes = text.as_bytes();
    let mut parts = [0u32; 3];
    let (mut part, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'.' if part < 2 => part += 1,
            b @ b'0'..=b'9' => parts[part] = parts[part] * 10 + (b - b'0') as u32,
            _ => panic!("the workspace version is major.minor.patch"),
        }
        i += 1;
    }
    assert!(part == 2, "the workspace version is major.minor.patch");
    (parts[0], parts[1], parts[2])
}

pub mod api;
pub mod backend;
pub mod batch;
pub mod cache;
pub mod config;
mod dispatch;
pub mod driver;
pub mod error;
pub mod file;
pub mod fork;
pub mod gpu;
mod hostio;
pub mod io;
pub mod log;
pub mod memory;
pub mod params;
pub mod pool;
pub mod stats;
pub mod stream;
pub mod sync;

pub use api::{Batch, DriverGuard, RegisteredBuffer, RegisteredFile, StreamIo};
pub use backend::{Backend, BackendKind, Capability, Declined, Direction, IoRequest, Score};
pub use batch::{BatchEntry, BatchEvent, BatchId, MAX_BATCH_ENTRIES};
pub use cache::{CachePolicy, CacheRule, CacheUse, PageCache};
pub use config::{BackendChoice, BounceSettings, Config, Demote};
pub use driver::{BufferInfo, Driver, HandleId, Platform};
pub use error::{Error, HipError, OpError, Result};
pub use file::FileHandle;
#[cfg(any(test, feature = "mock"))]
pub use gpu::MockGpuRuntime;
pub use gpu::{CopyKind, DeviceCopy, DeviceSpan, Event, GpuRuntime, HostFn, MemoryType, PointerInfo, Stream};
pub use io::max_rw_count;
pub use memory::DeviceMemory;
pub use params::{BoolParam, DriverProperties, SizeParam, StringParam, size_range};
pub use stream::{AsyncParams, StreamSignal};
