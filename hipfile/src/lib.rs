//! hipfile-rs for Rust programs: hipFile's driver, registered files and buffers, and reads and
//! writes between files and GPU memory, over the GPU runtime the process uses (HIP, or CUDA
//! the way HIP runs on NVIDIA), or a GPU emulated in host memory where there is none.
//!
//! The rules are hipFile's (`docs/semantics.md`); the C ABI (`libhipfile.so.0`, crate
//! `hipfile-capi`) and the `hipfile` tool are built on this crate.
//!
//! # Example
//! Reading a file into GPU memory:
//! ```
//! use std::sync::Arc;
//! use hipfile::{Driver, DriverGuard, GpuRuntime, SystemPlatform};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("hipfile-example-{}", std::process::id()));
//! std::fs::write(&path, vec![7u8; 1 << 20])?;
//! let file = std::fs::File::open(&path)?;
//!
//! // The runtime the process uses, one with a device, or the mock GPU (and why).
//! let (platform, _why_mock) = SystemPlatform::discover_or_mock();
//! let gpu = Arc::clone(platform.runtime());
//! let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?; // hipFileDriverOpen
//! let dev = gpu.device_alloc(1 << 20)?;
//! let buffer = guard.register_buffer(dev, 1 << 20)?;              // hipFileBufRegister
//! let handle = guard.register_file(&file)?;                        // hipFileHandleRegister
//! assert_eq!(handle.read(&buffer, 1 << 20, 0, 0)?, 1 << 20);       // hipFileRead
//! # drop((handle, buffer));
//! # // SAFETY: allocated above, no longer used.
//! # unsafe { gpu.device_free(dev) }?;
//! # std::fs::remove_file(path)?;
//! # Ok(()) }
//! ```

mod absent;
mod platform;

pub use hipfile_core::AsyncParams;
/// Stream-ordered I/O: its flags and where an operation's values come from.
pub use hipfile_core::stream;
pub use hipfile_core::{
    API_VERSION, BackendChoice, BackendKind, Batch, BatchEntry, BatchEvent, BatchId, BoolParam, BounceSettings,
    Capability, Config, Declined, DeviceCopy, DeviceSpan, Direction, Driver, DriverGuard, DriverProperties, Error,
    GpuRuntime, HandleId, HipError, MAX_BATCH_ENTRIES, OpError, RegisteredBuffer, RegisteredFile, Result, SizeParam,
    Stream, StreamIo, StreamSignal, StringParam, max_rw_count,
};
pub use platform::{SystemBackend, SystemPlatform};

/// The driver's lock held across `fork` (the C library's `pthread_atfork` handlers).
pub use hipfile_core::driver::ForkHold;
/// hipFile's error codes and their C conventions, the system-call helpers every backend shares,
/// and the diagnostics (`HIPFILE_LOG`): what the C boundary and the tools build on.
pub use hipfile_core::{error, io, log, stats, sync};
pub use hipfile_runtime::LoadedRuntime;

/// The mock GPU (a GPU emulated in host memory) and the test-data pattern the tests and the
/// benchmark share.
#[cfg(feature = "mock")]
pub mod mock {
    pub use hipfile_backend_mock::{MockGpu, pattern};
}

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
