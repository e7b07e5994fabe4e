//! hipfile-rs for Rust programs: hipFile's driver, registered files and buffers, and reads and
//! writes between files and GPU memory, over the GPU runtime the process uses (HIP, or CUDA
//! the way HIP runs on NVIDIA), or a GPU emulated in host memory where there is none.
//!
//! The rules are hipFile's (`docs/semantics.md`); the C ABI (`libhipfile.so.0`, crate
//! `hipfile-capi`) and the `hipfile` tool are built on this crate.
//!
//! Start with [`SystemPlatform`] (which GPU runtime and which backends this process has), a
//! [`Driver`] over it opened by a [`DriverGuard`], then [`RegisteredFile`]s and
//! [`RegisteredBuffer`]s; [`Batch`]es and stream-ordered calls ([`StreamIo`]) for many requests
//! at once; [`stats`] for what the driver did.
//!
//! # Example
//! Reading a file into GPU memory:
//! ```
//! use std::sync::Arc;
//! use hipfile::{Driver, DriverGuard, SystemPlatform};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("hipfile-example-{}", std::process::id()));
//! std::fs::write(&path, vec![7u8; 1 << 20])?;
//! let file = std::fs::File::open(&path)?;
//!
//! // The runtime the process uses, one with a device, or the mock GPU (and why).
//! let (platform, _why_mock) = SystemPlatform::discover_or_mock();
//! let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?; // hipFileDriverOpen
//! let memory = guard.device_alloc(1 << 20)?;                       // hipMalloc, freed on drop
//! let buffer = guard.register_memory(&memory)?;                    // hipFileBufRegister
//! let handle = guard.register_file(&file)?;                        // hipFileHandleRegister
//! assert_eq!(handle.read(&buffer, 1 << 20, 0, 0)?, 1 << 20);       // hipFileRead
//! # std::fs::remove_file(path)?;
//! # Ok(()) }
//! ```

mod absent;
mod log;
mod platform;
pub mod stats;

pub use platform::SystemPlatform;

/// A driver over `P` (here, a [`SystemPlatform`]): the use count, the registries and the I/O
/// path. A Rust program makes its own (each is an ordinary value); the C library keeps one per
/// process. Open it with a [`DriverGuard`].
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use hipfile::{Driver, SystemPlatform};
///
/// let (platform, _) = SystemPlatform::discover_or_mock();
/// let driver = Arc::new(Driver::new(platform));
/// driver.open()?;                                   // hipFileDriverOpen
/// assert_eq!(driver.use_count(), 1);
/// println!("backends: {:?}", driver.backend_names()); // p2p first where it serves
/// driver.close()?;
/// # Ok::<(), hipfile::Error>(())
/// ```
pub use hipfile_core::Driver;

/// An open driver, closed when dropped; files, buffers, batches and streams are registered
/// through it and deregistered when their values drop.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use hipfile::{Driver, DriverGuard, SystemPlatform};
///
/// let (platform, _) = SystemPlatform::discover_or_mock();
/// let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?;
/// assert_eq!(guard.driver().use_count(), 1);
/// drop(guard);                                      // hipFileDriverClose
/// # Ok::<(), hipfile::Error>(())
/// ```
pub use hipfile_core::DriverGuard;

/// A registered file (`hipFileHandleRegister`), deregistered when dropped. It reads into and
/// writes from [`RegisteredBuffer`]s, or host memory as slices where the configuration allows.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use hipfile::{Driver, DriverGuard, SystemPlatform};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = std::env::temp_dir().join(format!("hipfile-doc-file-{}", std::process::id()));
/// let (platform, _) = SystemPlatform::discover_or_mock();
/// let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?;
/// let file = std::fs::OpenOptions::new().read(true).write(true).create(true).open(&dir)?;
/// let handle = guard.register_file(&file)?;
/// let buffer = guard.register_memory(&guard.device_alloc(65536)?)?; // keeps the memory
/// handle.write_all(&buffer, 65536, 0)?;             // every byte, or an error
/// assert_eq!(handle.read(&buffer, 65536, 0, 0)?, 65536);
/// # std::fs::remove_file(dir)?;
/// # Ok(()) }
/// ```
pub use hipfile_core::RegisteredFile;

/// Registered device memory (`hipFileBufRegister`), deregistered when dropped: the only memory
/// safe code reads into or writes from by address. Memory the program allocates is a
/// [`DeviceMemory`], registered with `register_memory` (the registration keeps it allocated);
/// memory from elsewhere (a framework's tensor) is registered by address with
/// `register_buffer`, which the runtime must know as device memory.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use hipfile::{Driver, DriverGuard, SystemPlatform};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (platform, _) = SystemPlatform::discover_or_mock();
/// let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?;
/// let memory = guard.device_alloc(4096)?;
/// let buffer = guard.register_memory(&memory)?;
/// assert_eq!((buffer.addr(), buffer.len()), (memory.addr(), 4096));
/// // Host memory is not device memory: refused.
/// let host = vec![0u8; 4096];
/// assert!(guard.register_buffer(host.as_ptr() as usize, 4096).is_err());
/// # Ok(()) }
/// ```
pub use hipfile_core::RegisteredBuffer;

/// A batch of requests (`hipFileBatchIOSetUp`): submitted together, run concurrently, reaped as
/// [`BatchEvent`]s; destroyed when dropped.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use hipfile::{BatchEntry, Direction, Driver, DriverGuard, SystemPlatform};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let path = std::env::temp_dir().join(format!("hipfile-doc-batch-{}", std::process::id()));
/// # std::fs::write(&path, vec![3u8; 1 << 16])?;
/// let (platform, _) = SystemPlatform::discover_or_mock();
/// let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?;
/// let file = std::fs::File::open(&path)?;
/// let handle = guard.register_file(&file)?;
/// let memory = guard.device_alloc(1 << 16)?;
/// let batch = guard.batch(4)?;
/// let entries: Vec<BatchEntry> = (0..4)
///     .map(|i| BatchEntry {
///         direction: Direction::Read,
///         handle: handle.id(),
///         buffer_base: memory.addr(),
///         buffer_offset: i << 14,
///         file_offset: i << 14,
///         size: 1 << 14,
///         cookie: i as usize,
///     })
///     .collect();
/// // SAFETY: every entry names device memory, which stays allocated until the batch is gone
/// // (dropped before it, below).
/// unsafe { batch.submit(&entries) }?;
/// let mut done = 0;
/// while done < 4 {
///     done += batch.status(1, 4, None)?.iter().filter(|e| e.result == Ok(1 << 14)).count();
/// }
/// drop(batch);
/// drop(memory);
/// # std::fs::remove_file(path)?;
/// # Ok(()) }
/// ```
pub use hipfile_core::Batch;

/// A stream-ordered read or write (`hipFileReadAsync`, `hipFileWriteAsync`): its values, which
/// may still be changed until the stream runs it, and its result once it has.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use hipfile::{Driver, DriverGuard, GpuRuntime, SystemPlatform};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let path = std::env::temp_dir().join(format!("hipfile-doc-stream-{}", std::process::id()));
/// # std::fs::write(&path, vec![5u8; 8192])?;
/// let (platform, _) = SystemPlatform::discover_or_mock();
/// let gpu = Arc::clone(platform.runtime());
/// let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?;
/// let file = std::fs::File::open(&path)?;
/// let handle = guard.register_file(&file)?;
/// let buffer = guard.register_memory(&guard.device_alloc(8192)?)?;
/// let stream = gpu.stream_create()?;
/// let io = handle.read_async(&buffer, 8192, 0, 0, stream)?; // owns the memory until it has run
/// gpu.stream_synchronize(stream)?;                  // the read ran in stream order
/// assert_eq!(io.result(), Some(8192));
/// # gpu.stream_destroy(stream)?;
/// # std::fs::remove_file(path)?;
/// # Ok(()) }
/// ```
pub use hipfile_core::StreamIo;

/// Stream-ordered I/O: its flags and where an operation's values come from.
pub use hipfile_core::stream;

/// The page-cache policy (semantics §16): its settings, the rule it applies, `MemAvailable`.
pub use hipfile_core::cache;

/// Futures for many small calls: requests gathered into batches by a thread of the library.
pub use hipfile_core::submit;
pub use hipfile_core::{
    API_VERSION, AsyncParams, BackendChoice, BackendKind, BatchEntry, BatchEvent, BatchId, BoolParam, BounceSettings,
    CachePolicy, CacheRule, CacheUse, Capability, Config, Declined, DeviceCopy, DeviceMemory, DeviceSpan, Direction,
    DriverProperties, Error, GpuRuntime, HandleId, HipError, MAX_BATCH_ENTRIES, MAX_VECTORS, MemoryType, OpError,
    PageCache, PointerInfo, Result, SizeParam, Stream, StreamSignal, StringParam, max_rw_count, size_range,
};
pub use hipfile_core::{Completion, Submitter, Words};

/// The mock GPU (a GPU emulated in host memory) and the test-data pattern the tests and the
/// benchmark share.
#[cfg(feature = "mock")]
pub mod mock {
    pub use hipfile_backend_mock::{MockGpu, pattern};
}

/// Objects by URL (`s3://`, `gs://`, `az://`, `http(s)://`): read by ranges in parallel into
/// host memory or, through [`remote::Staging`], device memory; the node cache; uploads that
/// appear once whole (feature `remote`; docs/remote.md).
///
/// # Example
/// ```no_run
/// use std::sync::Arc;
/// use hipfile::remote::{Dest, RemoteObject, Settings, Staging};
/// use hipfile::{Driver, DriverGuard, SystemPlatform};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (platform, _) = SystemPlatform::discover_or_mock();
/// let gpu = Arc::clone(platform.runtime());
/// let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?;
/// let object = RemoteObject::open("s3://bucket/shard.bin")?;
/// let memory = guard.device_alloc(object.size() as usize)?;
/// let staging = Staging::new(gpu, Settings::from_env());
/// // SAFETY: the span is the whole allocation, which outlives the read.
/// let span = unsafe { hipfile::DeviceSpan::new(memory.addr(), memory.len()) };
/// object.read_into(Some(&staging), vec![(0, Dest::Device(span))])?;
/// # Ok(()) }
/// ```
#[cfg(feature = "remote")]
pub mod remote {
    pub use hipfile_remote::*;
}

/// What the boundaries built on this crate (the C library, the C++ bridge, the tool) need and a
/// Rust program does not: hipFile's C conventions, the system-call helpers every backend
/// shares, the process's diagnostics, the driver's lock across `fork`. Not a stable API.
#[doc(hidden)]
pub mod boundary {
    /// The driver's lock held across `fork` (the C library's `pthread_atfork` handlers).
    pub use hipfile_core::driver::ForkHold;
    /// Reports a message once per process, at a level.
    pub use hipfile_core::log::{Level, log_once_at};
    pub use hipfile_core::{FileHandle, error, io, sync};
    pub use hipfile_runtime::{LoadedRuntime, Vendor};

    pub use crate::log::{ProcessLog, Sink, install};
    pub use crate::platform::SystemBackend;
}

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
