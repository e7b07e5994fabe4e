//! `MockGpu`: a GPU emulated in host memory. Device allocations are host allocations the mock
//! tracks in a table, so pointer queries answer `Device` only for them; streams are worker
//! threads that run their work in order.
//!
//! A guarded mock ([`MockGpu::guarded`], the mock HIP runtime's) hands out device addresses the
//! program cannot touch: each is a range mapped with no access, while the bytes live in a
//! second allocation only the mock's own calls reach (copies, fills, AIS). A program that reads
//! or writes device memory from the host then faults here as it would on a GPU, instead of
//! working only because the "GPU" is host memory.

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use hipfile_core::sync::lock;
use hipfile_core::{CopyKind, Event, GatherPiece, GpuRuntime, HipError, HostFn, MemoryType, PointerInfo, Stream};

use crate::faults::Faults;

mod alloc;
mod stream_worker;

use alloc::{Alloc, Kind, no_access};
use stream_worker::{Job, StreamWorker};

/// Alignment of every mock allocation: enough for any direct-I/O rule.
pub const MOCK_ALIGN: usize = 4096;

/// A GPU emulated in host memory, with several devices, streams and fault injection.
pub struct MockGpu {
    devices: i32,
    allocs: Mutex<BTreeMap<usize, Alloc>>,
    current: Mutex<HashMap<ThreadId, i32>>,
    streams: Mutex<HashMap<usize, Arc<StreamWorker>>>,
    next_stream: AtomicUsize,
    events: Mutex<HashMap<usize, Arc<EventState>>>,
    faults: Arc<Faults>,
    /// Device memory is handed out as ranges the host cannot touch.
    guarded: bool,
    /// Threads with a context of their own current ([`MockGpu::enter_own_context`]).
    own_context: Mutex<HashSet<ThreadId>>,
}

/// An event: how many times it was recorded, and how many of those the streams have reached.
#[derive(Default)]
struct EventState {
    recorded: AtomicU64,
    reached: AtomicU64,
    /// When the stream last reached the event (`hipEventElapsedTime`).
    when: Mutex<Option<std::time::Instant>>,
}

impl std::fmt::Debug for MockGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockGpu").field("devices", &self.devices).finish_non_exhaustive()
    }
}

/// A PCI address (function 0), as `hipDeviceProp_t` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PciAddress {
    /// The PCI domain.
    pub domain: i32,
    /// The bus.
    pub bus: i32,
    /// The device on the bus.
    pub device: i32,
}

impl MockGpu {
    /// A mock GPU with `devices` devices (at least one).
    pub fn new(devices: i32) -> Arc<MockGpu> {
        Self::build(devices, false)
    }

    /// A mock GPU whose device memory the host cannot touch (see the module's notes); managed
    /// memory ([`MockGpu::malloc_managed`]) stays reachable from both sides.
    pub fn guarded(devices: i32) -> Arc<MockGpu> {
        Self::build(devices, true)
    }

    fn build(devices: i32, guarded: bool) -> Arc<MockGpu> {
        Arc::new(MockGpu {
            devices: devices.max(1),
            allocs: Mutex::new(BTreeMap::new()),
            current: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            next_stream: AtomicUsize::new(1),
            events: Mutex::new(HashMap::new()),
            faults: Arc::new(Faults::default()),
            guarded,
            own_context: Mutex::new(HashSet::new()),
        })
    }

    /// The calling thread now has a context of its own current, as a CUDA program's
    /// `cuCtxCreate` makes: the streams belong to the primary context, so work queued on them
    /// from this thread fails (`hipErrorInvalidHandle`, as CUDA's invalid resource handle)
    /// until the library makes the primary context current (`enter_primary_context`).
    pub fn enter_own_context(&self) {
        lock(&self.own_context).insert(std::thread::current().id());
    }

    /// Whether the calling thread has a context of its own current.
    pub fn has_own_context(&self) -> bool {
        lock(&self.own_context).contains(&std::thread::current().id())
    }

    /// Whether device memory is out of the host's reach ([`MockGpu::guarded`]).
    pub fn is_guarded(&self) -> bool {
        self.guarded
    }

    /// Device N's made-up PCI address, domain 0, bus `0x10 + N`, device 0 (function 0): no
    /// sysfs knows it, so the device's NUMA node is unknown.
    pub fn pci_address(&self, device: i32) -> Result<PciAddress, HipError> {
        if !(0..self.devices).contains(&device) {
            return Err(HipError::INVALID_DEVICE);
        }
        Ok(PciAddress { domain: 0, bus: 0x10 + device, device: 0 })
    }

    /// The faults armed on this GPU and the data paths built on it.
    pub fn faults(&self) -> &Arc<Faults> {
        &self.faults
    }

    fn allocate(&self, len: usize, kind: Kind, managed: bool) -> Result<usize, HipError> {
        if len == 0 {
            return Ok(0); // as hipMalloc: success and a null pointer
        }
        let device = self.current_device()?;
        let layout = Layout::from_size_align(len, MOCK_ALIGN).map_err(|_| HipError::OUT_OF_MEMORY)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(HipError::OUT_OF_MEMORY);
        }
        let view = ptr as usize;
        let handed = if self.guarded && kind == Kind::Device && !managed {
            match no_access(len) {
                Some(addr) => addr,
                None => {
                    // SAFETY: allocated above with this layout, not handed out.
                    unsafe { std::alloc::dealloc(ptr, layout) };
                    return Err(HipError::OUT_OF_MEMORY);
                }
            }
        } else {
            view
        };
        lock(&self.allocs).insert(handed, Alloc { size: len, device, kind, managed, view });
        Ok(handed)
    }

    fn release(&self, addr: usize, kind: Kind) -> Result<(), HipError> {
        if addr == 0 {
            return Ok(());
        }
        let mut allocs = lock(&self.allocs);
        match allocs.get(&addr) {
            Some(a) if a.kind == kind => {}
            _ => return Err(HipError::INVALID_VALUE),
        }
        let alloc = allocs.remove(&addr).expect("present above");
        alloc.free(addr);
        Ok(())
    }

    /// `hipMalloc`: device memory on the current device, zero-filled (out of the host's
    /// reach on a guarded mock).
    pub fn malloc(&self, len: usize) -> Result<usize, HipError> {
        self.allocate(len, Kind::Device, false)
    }

    /// `hipMallocManaged`: device memory on the current device that the host reaches too,
    /// guarded mock or not, reported as managed memory.
    pub fn malloc_managed(&self, len: usize) -> Result<usize, HipError> {
        self.allocate(len, Kind::Device, true)
    }

    /// `hipFree`.
    pub fn free(&self, addr: usize) -> Result<(), HipError> {
        self.release(addr, Kind::Device)
    }

    /// Where the bytes of device range `[addr, addr + len)` are (the same address, unless the
    /// mock is guarded), once checked to lie inside one device allocation.
    pub fn device_view(&self, addr: usize, len: usize) -> Result<usize, HipError> {
        let allocs = lock(&self.allocs);
        match allocs.range(..=addr).next_back() {
            Some((base, a))
                if a.kind == Kind::Device && addr.checked_add(len).is_some_and(|end| end <= base + a.size) =>
            {
                Ok(a.view + (addr - base))
            }
            _ => Err(HipError::INVALID_VALUE),
        }
    }

    /// Where the bytes at `addr` are: a device address's view, any other address itself.
    fn view_of(&self, addr: usize) -> usize {
        self.device_view(addr, 1).unwrap_or(addr)
    }

    /// Copies device memory out to `dst` (a test's view of GPU memory; not counted as a copy).
    pub fn read_device(&self, addr: usize, dst: &mut [u8]) -> Result<(), HipError> {
        let at = self.device_view(addr, dst.len())?;
        // SAFETY: the range lies inside a live device allocation's bytes, host memory.
        unsafe { std::ptr::copy_nonoverlapping(at as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `src` into device memory (a test's way to fill GPU memory; not counted).
    pub fn write_device(&self, addr: usize, src: &[u8]) -> Result<(), HipError> {
        let at = self.device_view(addr, src.len())?;
        // SAFETY: the range lies inside a live device allocation's bytes, host memory.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), at as *mut u8, src.len()) };
        Ok(())
    }

    /// `hipMemset`.
    pub fn memset(&self, addr: usize, value: u8, len: usize) -> Result<(), HipError> {
        let at = self.device_view(addr, len)?;
        // SAFETY: the range lies inside a live device allocation's bytes, host memory.
        unsafe { std::ptr::write_bytes(at as *mut u8, value, len) };
        Ok(())
    }

    /// `hipMemcpyAsync` (on the null stream, `hipMemcpy`): the sides that `kind` names as
    /// device memory must lie inside device allocations (`hipErrorInvalidValue` otherwise);
    /// `CopyKind::Default` accepts any memory, as unified addressing does.
    ///
    /// # Safety
    /// Host sides must be valid for `len` bytes until the stream has run the copy.
    pub unsafe fn hip_memcpy(
        &self,
        dst: usize,
        src: usize,
        len: usize,
        kind: CopyKind,
        stream: Stream,
    ) -> Result<(), HipError> {
        let (dst_device, src_device) = match kind {
            CopyKind::HostToHost | CopyKind::Default => (false, false),
            CopyKind::HostToDevice => (true, false),
            CopyKind::DeviceToHost => (false, true),
            CopyKind::DeviceToDevice => (true, true),
        };
        let side =
            |addr: usize, device: bool| if device { self.device_view(addr, len) } else { Ok(self.view_of(addr)) };
        let (dst_at, src_at) = (side(dst, dst_device)?, side(src, src_device)?);
        if len > 0 && (dst == 0 || src == 0) {
            return Err(HipError::INVALID_VALUE);
        }
        // SAFETY: device sides were just checked and translated to their bytes; the caller
        // guarantees host sides.
        unsafe { self.enqueue_copy(dst_at, src_at, len, stream) }
    }

    /// Pinned host memory alive now (allocated or registered), ranges per device: a test's
    /// view of staging memory.
    pub fn pinned_allocations(&self) -> BTreeMap<i32, usize> {
        let mut count = BTreeMap::new();
        let pinned = |a: &&Alloc| matches!(a.kind, Kind::PinnedHost | Kind::RegisteredHost);
        for a in lock(&self.allocs).values().filter(pinned) {
            *count.entry(a.device).or_insert(0) += 1;
        }
        count
    }

    /// Device memory allocated on `device` now (bytes): what `hipMemGetInfo` counts as used.
    pub fn device_bytes(&self, device: i32) -> usize {
        lock(&self.allocs).values().filter(|a| a.kind == Kind::Device && a.device == device).map(|a| a.size).sum()
    }

    /// `hipEventElapsedTime`: milliseconds between the times the streams reached `start` and
    /// `stop`; `hipErrorInvalidHandle` for an event never recorded (or unknown),
    /// `hipErrorNotReady` while either is still to be reached.
    pub fn event_elapsed_ms(&self, start: Event, stop: Event) -> Result<f32, HipError> {
        let times = [start, stop].map(|e| {
            let state = lock(&self.events).get(&e.as_raw()).cloned().ok_or(HipError::INVALID_HANDLE)?;
            if state.recorded.load(Ordering::Acquire) == 0 {
                return Err(HipError::INVALID_HANDLE);
            }
            if state.reached.load(Ordering::Acquire) < state.recorded.load(Ordering::Acquire) {
                return Err(HipError::NOT_READY);
            }
            lock(&state.when).ok_or(HipError::NOT_READY)
        });
        let [start, stop] = times;
        let (start, stop) = (start?, stop?);
        let ms = |later: std::time::Instant, earlier: std::time::Instant| {
            later.saturating_duration_since(earlier).as_secs_f64() as f32 * 1000.0
        };
        Ok(if stop >= start { ms(stop, start) } else { -ms(start, stop) })
    }

    /// `hipStreamQuery`: whether the work queued on `stream` has all run (the null stream's
    /// always has: it runs at once).
    pub fn stream_idle(&self, stream: Stream) -> Result<bool, HipError> {
        Ok(self.stream(stream)?.is_none_or(|w| w.idle()))
    }

    /// `hipDeviceSynchronize`: waits for every stream; reports the first failure.
    pub fn synchronize_all(&self) -> Result<(), HipError> {
        let workers: Vec<_> = {
            let _pass = crate::fork_gate::pass(); // not across the wait below
            lock(&self.streams).values().cloned().collect()
        };
        workers.iter().map(|w| w.synchronize()).fold(Ok(()), Result::and)
    }

    fn stream(&self, stream: Stream) -> Result<Option<Arc<StreamWorker>>, HipError> {
        if stream == Stream::NULL {
            return Ok(None);
        }
        lock(&self.streams).get(&stream.as_raw()).cloned().map(Some).ok_or(HipError::INVALID_HANDLE)
    }

    /// Runs `job` on `stream`, or now on the null stream.
    fn enqueue(&self, stream: Stream, job: Job) -> Result<(), HipError> {
        if self.has_own_context() {
            return Err(HipError::INVALID_HANDLE);
        }
        match self.stream(stream)? {
            Some(worker) => worker.submit(job),
            None => job(),
        }
    }

    /// Queues (or, on the null stream, runs) one copy, counted against the armed faults.
    ///
    /// # Safety
    /// Both ranges must be valid and stay so until the copy has run.
    unsafe fn enqueue_copy(&self, dst: usize, src: usize, len: usize, stream: Stream) -> Result<(), HipError> {
        let faults = Arc::clone(&self.faults);
        self.enqueue(
            stream,
            Box::new(move || {
                let _pass = crate::fork_gate::pass(); // the faults' table (see fork_gate)
                faults.before_copy()?;
                // SAFETY: the caller of `enqueue_copy` keeps both ranges valid until now; mock
                // device memory is host memory.
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
                Ok(())
            }),
        )
    }
}

impl Drop for MockGpu {
    fn drop(&mut self) {
        lock(&self.streams).clear();
        for (addr, alloc) in std::mem::take(&mut *lock(&self.allocs)) {
            alloc.free(addr); // out of the table: freed once, as the GPU goes away
        }
    }
}

impl GpuRuntime for MockGpu {
    fn pointer_info(&self, addr: usize) -> Result<PointerInfo, HipError> {
        let allocs = lock(&self.allocs);
        Ok(match allocs.range(..=addr).next_back() {
            Some((&base, a)) if addr < base + a.size => PointerInfo {
                memory_type: match (a.kind, a.managed) {
                    (Kind::Device, true) => MemoryType::Managed,
                    (Kind::Device, false) => MemoryType::Device,
                    _ => MemoryType::Host,
                },
                device: a.device,
                base,
                size: a.size,
            },
            _ => PointerInfo { memory_type: MemoryType::Unregistered, device: -1, base: 0, size: 0 },
        })
    }

    unsafe fn memcpy(
        &self,
        kind: CopyKind,
        dst: usize,
        src: usize,
        len: usize,
        stream: Option<Stream>,
    ) -> Result<(), HipError> {
        // SAFETY: the trait's contract; without a stream the null stream runs the copy now.
        unsafe { self.hip_memcpy(dst, src, len, kind, stream.unwrap_or(Stream::NULL)) }
    }

    /// The mock gathers as a GPU's kernel would: all the pieces in one operation on the stream
    /// (so that the bounce path's gathering runs in every test).
    fn gathers(&self) -> bool {
        true
    }

    unsafe fn gather(&self, pieces: &[GatherPiece], stream: Stream) -> Result<(), HipError> {
        // Each piece's device side checked and translated to its bytes, as a copy's is.
        let at = |p: &GatherPiece| Ok((self.device_view(p.dst.addr(), p.dst.len())?, self.view_of(p.src), p.dst.len()));
        let pieces = pieces.iter().map(at).collect::<Result<Vec<_>, HipError>>()?;
        self.faults.gathered();
        let faults = Arc::clone(&self.faults);
        self.enqueue(
            stream,
            Box::new(move || {
                let _pass = crate::fork_gate::pass(); // the faults' table (see fork_gate)
                for (dst, src, len) in pieces {
                    faults.before_copy()?;
                    // SAFETY: the caller keeps every piece's ranges valid until the stream has
                    // run it; mock device memory is host memory.
                    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
                }
                Ok(())
            }),
        )
    }

    fn stream_create(&self) -> Result<Stream, HipError> {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        lock(&self.streams).insert(id, Arc::new(StreamWorker::start()));
        // SAFETY: a key of this GPU's stream table, which checks every handle it is given.
        Ok(unsafe { Stream::from_raw(id) })
    }

    fn stream_destroy(&self, stream: Stream) -> Result<(), HipError> {
        let worker = {
            let _pass = crate::fork_gate::pass(); // not across the wait below
            lock(&self.streams).remove(&stream.as_raw()).ok_or(HipError::INVALID_HANDLE)?
        };
        // Queued work finishes before the thread ends (dropping the last reference joins it).
        let _ = worker.synchronize();
        Ok(())
    }

    fn stream_synchronize(&self, stream: Stream) -> Result<(), HipError> {
        let worker = {
            let _pass = crate::fork_gate::pass(); // not across the wait below
            self.stream(stream)?
        };
        match worker {
            Some(worker) => worker.synchronize(),
            None => Ok(()),
        }
    }

    fn launch_host_func(&self, stream: Stream, f: HostFn) -> Result<(), HipError> {
        self.enqueue(
            stream,
            Box::new(move || {
                f();
                Ok(())
            }),
        )
    }

    unsafe fn stream_wait_value32(&self, stream: Stream, addr: usize, value: u32) -> Result<(), HipError> {
        self.faults.before_stream_wait()?;
        if !addr.is_multiple_of(4) || self.pointer_info(addr)?.memory_type != MemoryType::Host {
            return Err(HipError::INVALID_VALUE);
        }
        self.enqueue(
            stream,
            Box::new(move || {
                // SAFETY: an aligned word of pinned memory the caller keeps until the stream
                // has passed this wait (the trait's contract); others change it atomically.
                let word = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
                while (word.load(Ordering::Acquire).wrapping_sub(value) as i32) < 0 {
                    std::thread::sleep(std::time::Duration::from_micros(20));
                }
                Ok(())
            }),
        )
    }

    fn event_create(&self) -> Result<Event, HipError> {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        lock(&self.events).insert(id, Arc::default());
        // SAFETY: a key of this GPU's event table, which checks every handle it is given.
        Ok(unsafe { Event::from_raw(id) })
    }

    fn event_record(&self, event: Event, stream: Stream) -> Result<(), HipError> {
        let state = lock(&self.events).get(&event.as_raw()).cloned().ok_or(HipError::INVALID_HANDLE)?;
        let n = state.recorded.fetch_add(1, Ordering::AcqRel) + 1;
        self.faults.event_recorded();
        self.enqueue(
            stream,
            Box::new(move || {
                *lock(&state.when) = Some(std::time::Instant::now());
                state.reached.fetch_max(n, Ordering::AcqRel);
                Ok(())
            }),
        )
    }

    fn event_query(&self, event: Event) -> Result<bool, HipError> {
        let state = lock(&self.events).get(&event.as_raw()).cloned().ok_or(HipError::INVALID_HANDLE)?;
        Ok(state.reached.load(Ordering::Acquire) >= state.recorded.load(Ordering::Acquire))
    }

    fn event_destroy(&self, event: Event) -> Result<(), HipError> {
        lock(&self.events).remove(&event.as_raw()).map(drop).ok_or(HipError::INVALID_HANDLE)
    }

    fn device_alloc(&self, len: usize) -> Result<usize, HipError> {
        self.malloc(len)
    }

    unsafe fn device_free(&self, addr: usize) -> Result<(), HipError> {
        self.free(addr)
    }

    fn host_alloc(&self, len: usize) -> Result<*mut u8, HipError> {
        self.allocate(len, Kind::PinnedHost, false).map(|a| a as *mut u8)
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<(), HipError> {
        self.release(ptr as usize, Kind::PinnedHost)
    }

    unsafe fn host_register(&self, ptr: *mut u8, len: usize) -> Result<(), HipError> {
        if ptr.is_null() || len == 0 {
            return Err(HipError::INVALID_VALUE);
        }
        self.faults.before_host_register()?;
        let device = self.current_device()?;
        let mut allocs = lock(&self.allocs);
        let addr = ptr as usize;
        let overlaps = allocs.range(..addr.saturating_add(len)).next_back().is_some_and(|(b, a)| b + a.size > addr);
        if overlaps {
            return Err(HipError(712)); // hipErrorHostMemoryAlreadyRegistered
        }
        allocs.insert(addr, Alloc { size: len, device, kind: Kind::RegisteredHost, managed: false, view: addr });
        Ok(())
    }

    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<(), HipError> {
        self.release(ptr as usize, Kind::RegisteredHost).map_err(|_| HipError(713)) // hipErrorHostMemoryNotRegistered
    }

    fn device_count(&self) -> Result<i32, HipError> {
        Ok(self.devices)
    }

    fn current_device(&self) -> Result<i32, HipError> {
        Ok(lock(&self.current).get(&std::thread::current().id()).copied().unwrap_or(0))
    }

    fn enter_primary_context(&self) -> Option<usize> {
        lock(&self.own_context).remove(&std::thread::current().id()).then_some(1)
    }

    fn restore_context(&self, _saved: usize) {
        self.enter_own_context();
    }

    fn set_device(&self, device: i32) -> Result<(), HipError> {
        if !(0..self.devices).contains(&device) {
            return Err(HipError::INVALID_DEVICE);
        }
        lock(&self.current).insert(std::thread::current().id(), device);
        Ok(())
    }

    /// `0000:1N:00.0` for device N ([`MockGpu::pci_address`]).
    fn pci_bus_id(&self, device: i32) -> Result<String, HipError> {
        let PciAddress { domain, bus, device } = self.pci_address(device)?;
        Ok(format!("{domain:04x}:{bus:02x}:{device:02x}.0"))
    }
}

#[cfg(test)]
mod tests;
