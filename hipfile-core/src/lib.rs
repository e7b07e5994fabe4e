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
mod platform;
pub mod pool;
pub mod stats;
pub mod stream;
pub mod submit;
pub mod sync;
mod version;
pub mod words;

pub use api::{Batch, DriverGuard, RegisteredBuffer, RegisteredFile, StreamIo};
pub use backend::{Backend, BackendKind, Capability, Declined, Direction, IoRequest, Score};
pub use batch::{BatchEntry, BatchEvent, BatchId, MAX_BATCH_ENTRIES};
pub use cache::{CachePolicy, CacheRule, CacheUse, PageCache};
pub use config::DriverProperties;
pub use config::params;
pub use config::{BackendChoice, BounceSettings, Config, Demote};
pub use driver::{BufferInfo, Driver, HandleId, MAX_VECTORS, Platform};
pub use error::{Error, HipError, OpError, Result};
pub use file::FileHandle;
#[cfg(any(test, feature = "mock"))]
pub use gpu::MockGpuRuntime;
pub use gpu::{
    CopyKind, DeviceCopy, DeviceSpan, Event, GatherPiece, GpuRuntime, HostFn, MemoryType, PointerInfo, Stream,
};
pub use io::max_rw_count;
pub use memory::DeviceMemory;
pub use params::{
    BOOL_VARIABLES, BoolParam, BoolTarget, SIZE_VARIABLES, SizeParam, SizeVariable, StringParam, size_range,
};
pub use stream::{AsyncParams, StreamSignal};
pub use submit::{Completion, Submitter};
pub use version::API_VERSION;
pub use words::Words;
