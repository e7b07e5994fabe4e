//! The runtime of a process with none: every call is `hipErrorNoDevice`. A driver over it keeps
//! everything that needs no GPU (parameters, properties, statistics, streams' flags; semantics
//! §13) and fails its open with `hipFilePlatformNotSupported`.

use hipfile_core::gpu::{CopyKind, Event, HostFn, PointerInfo};
use hipfile_core::{GpuRuntime, HipError, Stream};

/// No GPU runtime could be loaded.
pub(crate) struct NoRuntime;

const NONE: HipError = HipError::NO_DEVICE;

impl GpuRuntime for NoRuntime {
    fn pointer_info(&self, _addr: usize) -> Result<PointerInfo, HipError> {
        Err(NONE)
    }
    unsafe fn memcpy(&self, _: CopyKind, _: usize, _: usize, _: usize, _: Option<Stream>) -> Result<(), HipError> {
        Err(NONE)
    }
    fn stream_create(&self) -> Result<Stream, HipError> {
        Err(NONE)
    }
    fn stream_destroy(&self, _stream: Stream) -> Result<(), HipError> {
        Err(NONE)
    }
    fn stream_synchronize(&self, _stream: Stream) -> Result<(), HipError> {
        Err(NONE)
    }
    fn launch_host_func(&self, _stream: Stream, _f: HostFn) -> Result<(), HipError> {
        Err(NONE)
    }
    unsafe fn stream_wait_value32(&self, _stream: Stream, _addr: usize, _value: u32) -> Result<(), HipError> {
        Err(NONE)
    }
    fn event_create(&self) -> Result<Event, HipError> {
        Err(NONE)
    }
    fn event_record(&self, _event: Event, _stream: Stream) -> Result<(), HipError> {
        Err(NONE)
    }
    fn event_query(&self, _event: Event) -> Result<bool, HipError> {
        Err(NONE)
    }
    fn event_destroy(&self, _event: Event) -> Result<(), HipError> {
        Err(NONE)
    }
    fn device_alloc(&self, _len: usize) -> Result<usize, HipError> {
        Err(NONE)
    }
    unsafe fn device_free(&self, _addr: usize) -> Result<(), HipError> {
        Err(NONE)
    }
    fn host_alloc(&self, _len: usize) -> Result<*mut u8, HipError> {
        Err(NONE)
    }
    unsafe fn host_free(&self, _ptr: *mut u8) -> Result<(), HipError> {
        Err(NONE)
    }
    unsafe fn host_register(&self, _ptr: *mut u8, _len: usize) -> Result<(), HipError> {
        Err(NONE)
    }
    unsafe fn host_unregister(&self, _ptr: *mut u8) -> Result<(), HipError> {
        Err(NONE)
    }
    fn device_count(&self) -> Result<i32, HipError> {
        Err(NONE)
    }
    fn current_device(&self) -> Result<i32, HipError> {
        Err(NONE)
    }
    fn set_device(&self, _device: i32) -> Result<(), HipError> {
        Err(NONE)
    }
    fn pci_bus_id(&self, _device: i32) -> Result<String, HipError> {
        Err(NONE)
    }
}
