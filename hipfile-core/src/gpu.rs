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
///
/// Safe code gets one only from the runtime ([`GpuRuntime::stream_create`]) or as
/// `Stream::NULL`: a handle made from an integer is `unsafe` ([`Stream::from_raw`]), since the
/// runtime dereferences it.
///
/// ```compile_fail,E0423
/// let forged = hipfile_core::Stream(0x1234);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stream(usize);

impl Stream {
    /// The default (null) stream.
    pub const NULL: Stream = Stream(0);

    /// The stream whose runtime handle is `raw`.
    ///
    /// # Safety
    /// `raw` is 0 or a stream of the runtime in use that stays alive while the handle is used
    /// (what the C ABI's and Python's callers pass on, as their own contract).
    pub const unsafe fn from_raw(raw: usize) -> Stream {
        Stream(raw)
    }

    /// The runtime's handle.
    pub const fn as_raw(self) -> usize {
        self.0
    }
}

/// A runtime event: a marker recorded on a stream, done once the work before it has run.
///
/// As [`Stream`], made only by the runtime ([`GpuRuntime::event_create`]) or, `unsafe`, from
/// its raw handle.
///
/// ```compile_fail,E0423
/// let forged = hipfile_core::Event(0x1234);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event(usize);

impl Event {
    /// The event whose runtime handle is `raw`.
    ///
    /// # Safety
    /// `raw` is an event of the runtime in use that stays alive while the handle is used.
    pub const unsafe fn from_raw(raw: usize) -> Event {
        Event(raw)
    }

    /// The runtime's handle.
    pub const fn as_raw(self) -> usize {
        self.0
    }
}

/// Which sides of a copy are device memory: `hipMemcpyKind`, with HIP's values (the same in
/// every HIP version, and CUDA's `cudaMemcpyKind`). The library's own copies are host to
/// device and device to host; the mock HIP runtime takes every kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum CopyKind {
    /// `hipMemcpyHostToHost`.
    HostToHost = 0,
    /// `hipMemcpyHostToDevice`.
    HostToDevice = 1,
    /// `hipMemcpyDeviceToHost`.
    DeviceToHost = 2,
    /// `hipMemcpyDeviceToDevice`.
    DeviceToDevice = 3,
    /// `hipMemcpyDefault`: the runtime tells from the addresses.
    Default = 4,
}

impl CopyKind {
    /// The kind HIP's value `kind` names, if any.
    pub fn from_hip(kind: i32) -> Option<CopyKind> {
        [
            CopyKind::HostToHost,
            CopyKind::HostToDevice,
            CopyKind::DeviceToHost,
            CopyKind::DeviceToDevice,
            CopyKind::Default,
        ]
        .into_iter()
        .find(|k| *k as i32 == kind)
    }
}

/// A range of device memory known to lie inside one device allocation: what the driver hands
/// a backend after checking a call's buffer (semantics §5). Copies to and from a span need no
/// `unsafe` on the device side; its parts are spans too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceSpan {
    addr: usize,
    len: usize,
    /// `[addr, bound)` lies inside the same allocation (what two spans that meet are joined
    /// by, [`DeviceSpan::join`]).
    bound: usize,
}

impl DeviceSpan {
    /// The span `[addr, addr + len)`.
    ///
    /// # Safety
    /// The range must lie inside one device allocation of the runtime it is used with, and that
    /// allocation must stay allocated while the span (or a part of it) is used.
    pub unsafe fn new(addr: usize, len: usize) -> Self {
        DeviceSpan { addr, len, bound: addr + len }
    }

    /// The span `[addr, addr + len)` of the range `[addr, bound)`, which lies inside one
    /// device allocation (`addr + len <= bound`).
    ///
    /// # Safety
    /// As [`DeviceSpan::new`], for the whole range `[addr, bound)`.
    pub unsafe fn within(addr: usize, len: usize, bound: usize) -> Self {
        debug_assert!(addr.checked_add(len).is_some_and(|end| end <= bound), "{addr}+{len} past {bound}");
        DeviceSpan { addr, len, bound }
    }

    /// The first address.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the span is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The part `[from, from + len)` of this span.
    ///
    /// # Panics
    /// When the part does not lie inside the span.
    pub fn part(&self, from: usize, len: usize) -> DeviceSpan {
        assert!(from <= self.len && len <= self.len - from, "{from}+{len} outside a span of {}", self.len);
        DeviceSpan { addr: self.addr + from, len, bound: self.bound }
    }

    /// This span and `next` as one, where `next` starts where this one ends and both are
    /// known to lie in the same allocation: each lies in one allocation up to the same bound,
    /// and the byte before the bound belongs to one allocation only.
    pub fn join(&self, next: &DeviceSpan) -> Option<DeviceSpan> {
        (self.addr + self.len == next.addr && self.bound == next.bound).then_some(DeviceSpan {
            addr: self.addr,
            len: self.len + next.len,
            bound: self.bound,
        })
    }
}

#[cfg(any(test, feature = "mock"))]
impl MockGpuRuntime {
    /// A mocked runtime whose one allocation is device 0's `[base, base + size)`: pointer
    /// queries inside it answer device memory, any other address unregistered memory; every
    /// thread is on its device's primary context.
    pub fn with_allocation(base: usize, size: usize) -> Self {
        let mut rt = MockGpuRuntime::new();
        rt.expect_enter_primary_context().returning(|| None);
        rt.expect_pointer_info().returning(move |addr| {
            Ok(if (base..base + size).contains(&addr) {
                PointerInfo { memory_type: MemoryType::Device, device: 0, base, size }
            } else {
                PointerInfo { memory_type: MemoryType::Unregistered, device: -1, base: 0, size: 0 }
            })
        });
        rt
    }
}

/// A host function queued on a stream: runs once all earlier work on the stream has finished.
pub type HostFn = Box<dyn FnOnce() + Send + 'static>;

/// One piece of a gathered copy ([`GpuRuntime::gather`]): `dst.len()` bytes of pinned host
/// memory at `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatherPiece {
    /// The host bytes' address.
    pub src: usize,
    /// Where they go.
    pub dst: DeviceSpan,
}

/// The GPU runtime operations hipFile uses. Every method returns the runtime's own error code
/// unchanged, so the C ABI can report it as `hip_drv_err`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait GpuRuntime: Send + Sync {
    /// The memory type and allocation of `addr`. Addresses the runtime does not know are
    /// `MemoryType::Unregistered`, not an error.
    fn pointer_info(&self, addr: usize) -> Result<PointerInfo, HipError>;

    /// The one copy primitive: `len` bytes from `src` to `dst` in the direction `kind` says,
    /// queued on `stream` (`Some`) or done and waited for (`None`). The typed copies of
    /// [`DeviceCopy`] are built on it.
    ///
    /// # Safety
    /// The host range must be valid host memory (for reads when copying to the device, for
    /// writes when copying from it), and the device range must lie inside a device allocation
    /// of this runtime; both must stay valid, and the host range otherwise untouched, until the
    /// copy has run (when it returns for `None`, when the stream reaches it for `Some`).
    unsafe fn memcpy(
        &self,
        kind: CopyKind,
        dst: usize,
        src: usize,
        len: usize,
        stream: Option<Stream>,
    ) -> Result<(), HipError>;

    /// Whether [`GpuRuntime::gather`] copies its pieces as one operation (a kernel that copies
    /// them all, one launch), not one copy each: whether copies of small reads from several
    /// threads are worth gathering (docs/performance.md, "Small reads and many callers").
    fn gathers(&self) -> bool {
        false
    }

    /// Queues copies of `pieces` to the device on `stream`: one operation where the runtime
    /// [`gathers`](GpuRuntime::gathers), else a copy each (the same bytes either way).
    ///
    /// # Safety
    /// As [`GpuRuntime::memcpy`] to the device for each piece; the host ranges must be pinned
    /// memory from [`GpuRuntime::host_alloc`] or [`GpuRuntime::host_register`].
    unsafe fn gather(&self, pieces: &[GatherPiece], stream: Stream) -> Result<(), HipError> {
        // SAFETY: the caller's contract.
        unsafe { copy_each(self, pieces, stream) }
    }

    /// Creates a stream on the current device.
    fn stream_create(&self) -> Result<Stream, HipError>;

    /// Destroys a stream after the work queued on it has finished.
    fn stream_destroy(&self, stream: Stream) -> Result<(), HipError>;

    /// Waits until all work queued on `stream` has finished; reports the first failure.
    fn stream_synchronize(&self, stream: Stream) -> Result<(), HipError>;

    /// Queues `f` on `stream`, to run after the work queued before it.
    fn launch_host_func(&self, stream: Stream, f: HostFn) -> Result<(), HipError>;

    /// Queues on `stream` a wait until the 32-bit word at `addr` reaches `value` (cyclic
    /// comparison: `(word - value) as i32 >= 0`), a stream memory operation: the stream stops
    /// there, and nothing else of the context does.
    ///
    /// # Safety
    /// `addr` must be a 4-byte aligned word of pinned host memory from `host_alloc`, which
    /// stays allocated until the stream has passed the wait.
    unsafe fn stream_wait_value32(&self, stream: Stream, addr: usize, value: u32) -> Result<(), HipError>;

    /// Creates an event (without timing).
    fn event_create(&self) -> Result<Event, HipError>;

    /// Records `event` on `stream`: it completes when the work queued before it has run.
    fn event_record(&self, event: Event, stream: Stream) -> Result<(), HipError>;

    /// Whether `event` has completed (`false` while the work before it is still to run).
    fn event_query(&self, event: Event) -> Result<bool, HipError>;

    /// Destroys an event.
    fn event_destroy(&self, event: Event) -> Result<(), HipError>;

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

    /// Where the calling thread's current context is not its device's primary one (a CUDA
    /// program's own, `cuCtxCreate`), makes the primary context current, which the library's
    /// streams and staging belong to, and returns the thread's to give back
    /// ([`restore_context`](Self::restore_context)); `None` otherwise, and on runtimes without
    /// such contexts (semantics §4).
    fn enter_primary_context(&self) -> Option<usize> {
        None
    }

    /// Makes `saved`, from [`enter_primary_context`](Self::enter_primary_context), the calling
    /// thread's context again.
    fn restore_context(&self, _saved: usize) {}

    /// The PCI address of `device` (`domain:bus:device.function`, as `hipDeviceGetPCIBusId`
    /// writes it), which says where the device sits in the machine (its NUMA node).
    fn pci_bus_id(&self, device: i32) -> Result<String, HipError>;
}

/// Queues a copy of each of `pieces` on `stream`: a gathered copy where the runtime has no
/// single operation for it ([`GpuRuntime::gather`]).
///
/// # Safety
/// As [`GpuRuntime::gather`].
pub unsafe fn copy_each<G: GpuRuntime + ?Sized>(
    gpu: &G,
    pieces: &[GatherPiece],
    stream: Stream,
) -> Result<(), HipError> {
    for p in pieces {
        // SAFETY: the caller's contract, piece by piece.
        unsafe { gpu.memcpy(CopyKind::HostToDevice, p.dst.addr(), p.src, p.dst.len(), Some(stream))? };
    }
    Ok(())
}

/// Typed copies between host slices and device spans, built on [`GpuRuntime::memcpy`] for every
/// runtime. A copy longer than its destination is refused with `hipErrorInvalidValue`.
pub trait DeviceCopy: GpuRuntime {
    /// Copies `src` to the start of `dst` and waits for the copy.
    fn copy_to_device(&self, dst: DeviceSpan, src: &[u8]) -> Result<(), HipError> {
        fits(src.len(), dst.len())?;
        // SAFETY: `src` is borrowed for the whole (waited) copy; the span's contract covers
        // the device side.
        unsafe { self.memcpy(CopyKind::HostToDevice, dst.addr(), src.as_ptr() as usize, src.len(), None) }
    }

    /// Copies the start of `src` into all of `dst` and waits for the copy.
    fn copy_from_device(&self, dst: &mut [u8], src: DeviceSpan) -> Result<(), HipError> {
        fits(dst.len(), src.len())?;
        // SAFETY: `dst` is borrowed mutably for the whole (waited) copy; the span's contract
        // covers the device side.
        unsafe { self.memcpy(CopyKind::DeviceToHost, dst.as_mut_ptr() as usize, src.addr(), dst.len(), None) }
    }

    /// Queues a copy of `src` to the start of `dst` on `stream`.
    ///
    /// # Safety
    /// `src` must stay valid and unmodified until the stream has run the copy (a
    /// synchronisation of the stream says so).
    unsafe fn copy_to_device_async(&self, dst: DeviceSpan, src: &[u8], stream: Stream) -> Result<(), HipError> {
        fits(src.len(), dst.len())?;
        // SAFETY: the caller keeps `src` until the copy has run; the span covers the device.
        unsafe { self.memcpy(CopyKind::HostToDevice, dst.addr(), src.as_ptr() as usize, src.len(), Some(stream)) }
    }

    /// Queues a copy of the start of `src` into all of `dst` on `stream`.
    ///
    /// # Safety
    /// `dst` must stay valid, and be neither read nor written, until the stream has run the
    /// copy.
    unsafe fn copy_from_device_async(&self, dst: &mut [u8], src: DeviceSpan, stream: Stream) -> Result<(), HipError> {
        fits(dst.len(), src.len())?;
        // SAFETY: the caller keeps `dst` until the copy has run; the span covers the device.
        unsafe { self.memcpy(CopyKind::DeviceToHost, dst.as_mut_ptr() as usize, src.addr(), dst.len(), Some(stream)) }
    }
}

impl<G: GpuRuntime + ?Sized> DeviceCopy for G {}

/// A copy of `len` bytes into a destination of `room` bytes: refused when it does not fit.
fn fits(len: usize, room: usize) -> Result<(), HipError> {
    if len <= room { Ok(()) } else { Err(HipError::INVALID_VALUE) }
}

/// The calling thread on its device's primary context for a scope
/// ([`GpuRuntime::enter_primary_context`]), its own context given back when the scope ends.
pub(crate) struct PrimaryContext<'a> {
    gpu: &'a dyn GpuRuntime,
    saved: Option<usize>,
}

impl<'a> PrimaryContext<'a> {
    pub(crate) fn enter(gpu: &'a dyn GpuRuntime) -> Self {
        PrimaryContext { gpu, saved: gpu.enter_primary_context() }
    }
}

impl Drop for PrimaryContext<'_> {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            self.gpu.restore_context(saved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_join_only_when_they_meet_inside_one_allocation() {
        // SAFETY: never copied to or from.
        let within = |addr, len, bound| unsafe { DeviceSpan::within(addr, len, bound) };
        let (a, b) = (within(0x1000, 16, 0x1100), within(0x1010, 8, 0x1100));
        let joined = a.join(&b).expect("they meet below the same bound");
        assert_eq!((joined.addr(), joined.len()), (0x1000, 24));
        assert_eq!(joined.part(16, 8), b, "its parts keep the bound");
        assert_eq!(b.join(&a), None, "not in that order");
        assert_eq!(a.join(&b.part(1, 7)), None, "a gap");
        // Two allocations side by side: each span known only up to its own end.
        // SAFETY: as above.
        let new = |addr, len| unsafe { DeviceSpan::new(addr, len) };
        let (c, d) = (new(0x2000, 16), new(0x2010, 16));
        assert_eq!(c.join(&d), None, "maybe two allocations");
    }

    #[test]
    fn parts_of_a_span_stay_inside_it() {
        // SAFETY: never copied to or from.
        let span = unsafe { DeviceSpan::new(0x1000, 100) };
        assert_eq!((span.part(10, 90).addr(), span.part(10, 90).len()), (0x100a, 90));
        assert!(span.part(100, 0).is_empty());
        for (from, len) in [(0, 101), (101, 0), (50, 51), (usize::MAX, 2)] {
            assert!(std::panic::catch_unwind(|| span.part(from, len)).is_err(), "{from}+{len}");
        }
    }

    #[test]
    fn typed_copies_refuse_what_does_not_fit_before_reaching_the_runtime() {
        let gpu = MockGpuRuntime::new(); // no expectations: any call to the runtime fails the test
        // SAFETY: never reached (refused first).
        let span = unsafe { DeviceSpan::new(0x1000, 8) };
        assert_eq!(gpu.copy_to_device(span, &[0; 9]), Err(HipError::INVALID_VALUE));
        assert_eq!(gpu.copy_from_device(&mut [0; 9], span), Err(HipError::INVALID_VALUE));
    }
}
