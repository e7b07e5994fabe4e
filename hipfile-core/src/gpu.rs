//! What hipFile needs from a GPU runtime (HIP on AMD, CUDA on NVIDIA, or the mock GPU), as one
//! trait the backends and the driver share.
//!
//! Device addresses are plain `usize` values: device memory is not, in general, addressable by
//! the host, so nothing here dereferences one; only a runtime knows what an address means.

use crate::error::HipError;

/// What kind of memory an address belongs to, as the runtime reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryType {
    /// Memory the runtime does not know (plain pageable host memory).
    Unregistered,
    /// Host memory the runtime pinned or registered.
    Host,
    /// Device memory (what hipFile reads into and writes from).
    Device,
    /// Managed (unified) memory.
    Managed,
}

/// A runtime's answer about an address: its memory type and the allocation it lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointerInfo {
    /// The kind of memory.
    pub memory_type: MemoryType,
    /// The device that owns it (meaningful for device memory).
    pub device: i32,
    /// The allocation's first address.
    pub base: usize,
    /// The allocation's length in bytes.
    pub size: usize,
}

impl PointerInfo {
    /// Bytes from `addr` to the end of its allocation (0 if `addr` lies outside it).
    pub fn bytes_after(&self, addr: usize) -> usize {
        (self.base + self.size).saturating_sub(addr.max(self.base))
    }
}

/// A runtime stream: work queued on it runs in order. `Stream::NULL` is the default stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stream(pub usize);

impl Stream {
    /// The default (null) stream.
    pub const NULL: Stream = Stream(0);
}

/// A host function queued on a stream: runs once all earlier work on the stream has finished.
pub type HostFn = Box<dyn FnOnce() + Send + 'static>;

/// The GPU runtime operations hipFile uses. Every method returns the runtime's own error code
/// unchanged, so the C ABI can report it as `hip_drv_err`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait GpuRuntime: Send + Sync {
    /// The memory type and allocation of `addr`. Addresses the runtime does not know are
    /// `MemoryType::Unregistered`, not an error.
    fn pointer_info(&self, addr: usize) -> Result<PointerInfo, HipError>;

    /// Copies `len` bytes from host memory to device memory and waits for the copy.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes, and `[dst, dst + len)` must lie inside a
    /// device allocation of this runtime that nothing else accesses during the copy.
    unsafe fn copy_to_device(&self, dst: usize, src: *const u8, len: usize) -> Result<(), HipError>;

    /// Copies `len` bytes from device memory to host memory and waits for the copy.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` bytes, and `[src, src + len)` must lie inside a
    /// device allocation of this runtime.
    unsafe fn copy_from_device(&self, dst: *mut u8, src: usize, len: usize) -> Result<(), HipError>;

    /// Queues a host-to-device copy on `stream`.
    ///
    /// # Safety
    /// As `copy_to_device`, and both ranges must stay valid until the stream has run the copy.
    unsafe fn copy_to_device_async(
        &self,
        dst: usize,
        src: *const u8,
        len: usize,
        stream: Stream,
    ) -> Result<(), HipError>;

    /// Queues a device-to-host copy on `stream`.
    ///
    /// # Safety
    /// As `copy_from_device`, and both ranges must stay valid until the stream has run the copy.
    unsafe fn copy_from_device_async(
        &self,
        dst: *mut u8,
        src: usize,
        len: usize,
        stream: Stream,
    ) -> Result<(), HipError>;

    /// Creates a stream on the current device.
    fn stream_create(&self) -> Result<Stream, HipError>;

    /// Destroys a stream after the work queued on it has finished.
    fn stream_destroy(&self, stream: Stream) -> Result<(), HipError>;

    /// Waits until all work queued on `stream` has finished; reports the first failure.
    fn stream_synchronize(&self, stream: Stream) -> Result<(), HipError>;

    /// Queues `f` on `stream`, to run after the work queued before it.
    fn launch_host_func(&self, stream: Stream, f: HostFn) -> Result<(), HipError>;

    /// Allocates `len` bytes of device memory on the current device.
    fn device_alloc(&self, len: usize) -> Result<usize, HipError>;

    /// Frees memory from `device_alloc`.
    ///
    /// # Safety
    /// `addr` must come from `device_alloc` of this runtime and not be used afterwards.
    unsafe fn device_free(&self, addr: usize) -> Result<(), HipError>;

    /// Allocates `len` bytes of pinned host memory.
    fn host_alloc(&self, len: usize) -> Result<*mut u8, HipError>;

    /// Frees memory from `host_alloc`.
    ///
    /// # Safety
    /// `ptr` must come from `host_alloc` of this runtime and not be used afterwards.
    unsafe fn host_free(&self, ptr: *mut u8) -> Result<(), HipError>;

    /// Pins (page-locks) existing host memory for fast copies.
    ///
    /// # Safety
    /// `[ptr, ptr + len)` must be valid host memory that outlives the registration.
    unsafe fn host_register(&self, ptr: *mut u8, len: usize) -> Result<(), HipError>;

    /// Undoes `host_register`.
    ///
    /// # Safety
    /// `ptr` must have been registered with `host_register` of this runtime.
    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<(), HipError>;

    /// The number of devices.
    fn device_count(&self) -> Result<i32, HipError>;

    /// The calling thread's current device.
    fn current_device(&self) -> Result<i32, HipError>;

    /// Makes `device` the calling thread's current device.
    fn set_device(&self, device: i32) -> Result<(), HipError>;
}
