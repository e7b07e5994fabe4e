//! Device memory the program owns: allocated through a runtime, freed when the last owner lets
//! go. The owners are the [`DeviceMemory`] itself, a registration of it
//! ([`DriverGuard::register_memory`](crate::DriverGuard::register_memory)), and each
//! stream-ordered operation queued on that registration until the stream has run it, so safe
//! code cannot free memory the library may still read or write.

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::error::HipError;
use crate::gpu::{DeviceCopy, DeviceSpan, GpuRuntime};
use crate::sync::lock;

/// One allocation, freed on drop.
pub(crate) struct Allocation {
    gpu: Arc<dyn GpuRuntime>,
    device: i32,
    addr: usize,
    len: usize,
}

impl fmt::Debug for Allocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Allocation({:#x}, {} bytes, device {})", self.addr, self.len, self.device)
    }
}

/// Allocations whose last owner went on a library thread, freed by the program's next
/// allocation or free (or never, at exit).
static DEFERRED: Mutex<Vec<Allocation>> = Mutex::new(Vec::new());

/// Whether the calling thread is one of the library's (named `hipfile-...`).
fn on_library_thread() -> bool {
    std::thread::current().name().is_some_and(|name| name.starts_with("hipfile-"))
}

/// Frees what library threads left.
fn free_deferred() {
    let left = std::mem::take(&mut *lock(&DEFERRED));
    drop(left);
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if on_library_thread() {
            // A stream-ordered operation was the last owner. The runtime's free waits for the
            // whole device, whose streams may wait for the library's threads (a gated
            // operation after this one): freeing here could wait forever.
            lock(&DEFERRED).push(Allocation { gpu: Arc::clone(&self.gpu), ..*self });
            return;
        }
        // SAFETY: the address came from this runtime's `device_alloc` (`DeviceMemory::alloc`),
        // and this is its last owner: nothing reads or writes it after this. A failure to free
        // (the runtime already torn down at exit) leaves nothing to do.
        let _ = unsafe { self.gpu.device_free(self.addr) };
        free_deferred();
    }
}

/// Device memory allocated through a runtime (`hipMalloc`), freed when dropped (`hipFree`) and
/// no registration or queued operation uses it any more.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use hipfile_core::{DeviceMemory, GpuRuntime};
/// let gpu: Arc<dyn GpuRuntime> = hipfile_backend_mock::MockGpu::new(1); // a GPU in host memory
/// let memory = DeviceMemory::alloc(&gpu, 0, 4096)?;
/// memory.copy_from_host(100, b"hello")?;
/// let mut back = [0u8; 5];
/// memory.copy_to_host(100, &mut back)?;
/// assert_eq!(&back, b"hello");
/// assert!(memory.copy_from_host(4095, b"no").is_err()); // past the end: refused
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DeviceMemory {
    alloc: Arc<Allocation>,
}

impl DeviceMemory {
    /// `len` bytes (at least one is allocated) on `device` of `gpu`; the calling thread's
    /// current device is left as it was.
    pub fn alloc(gpu: &Arc<dyn GpuRuntime>, device: i32, len: usize) -> Result<DeviceMemory, HipError> {
        free_deferred();
        let previous = gpu.current_device()?;
        if previous != device {
            gpu.set_device(device)?;
        }
        let addr = gpu.device_alloc(len.max(1));
        if previous != device {
            let restored = gpu.set_device(previous);
            if let (Ok(addr), Err(e)) = (&addr, restored) {
                // SAFETY: allocated just above, never handed out.
                let _ = unsafe { gpu.device_free(*addr) };
                return Err(e);
            }
        }
        Ok(DeviceMemory { alloc: Arc::new(Allocation { gpu: Arc::clone(gpu), device, addr: addr?, len }) })
    }

    /// The device address of its first byte.
    pub fn addr(&self) -> usize {
        self.alloc.addr
    }

    /// Its length in bytes (as asked for).
    pub fn len(&self) -> usize {
        self.alloc.len
    }

    /// Whether it was asked for with no bytes.
    pub fn is_empty(&self) -> bool {
        self.alloc.len == 0
    }

    /// The device it is on.
    pub fn device(&self) -> i32 {
        self.alloc.device
    }

    /// Copies `src` to the memory at `offset`; `hipErrorInvalidValue` where it does not fit.
    pub fn copy_from_host(&self, offset: usize, src: &[u8]) -> Result<(), HipError> {
        self.alloc.gpu.copy_to_device(self.span(offset, src.len())?, src)
    }

    /// Copies the memory at `offset` into `dst`; `hipErrorInvalidValue` where it does not fit.
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> Result<(), HipError> {
        self.alloc.gpu.copy_from_device(dst, self.span(offset, dst.len())?)
    }

    /// `[offset, offset + len)` of the memory, checked against its length.
    fn span(&self, offset: usize, len: usize) -> Result<DeviceSpan, HipError> {
        if offset.checked_add(len).is_none_or(|end| end > self.len()) {
            return Err(HipError::INVALID_VALUE);
        }
        // SAFETY: the range lies inside the allocation, which this value keeps allocated for
        // as long as the span is used (the copy above, within the borrow of `self`).
        Ok(unsafe { DeviceSpan::within(self.addr() + offset, len, self.addr() + self.len()) })
    }

    /// Another owner of the allocation (a registration, a queued operation).
    pub(crate) fn owner(&self) -> Arc<Allocation> {
        Arc::clone(&self.alloc)
    }
}
