//! The GPU runtimes: HIP (5 and 6+ ABIs, and the mock HIP runtime) and CUDA's runtime, one
//! [`LoadedRuntime`] behind core's `GpuRuntime` (see the crate docs for the order of discovery).

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::fmt;
use std::panic::AssertUnwindSafe;

use hipfile_core::{CopyKind, Event, GatherPiece, GpuRuntime, HipError, HostFn, MemoryType, PointerInfo, Stream};

use crate::abi::{Abi, AttributeRoom, PointerAttributes};
use crate::context::Contexts;
use crate::ffi::{HipResult, RawStream, check};
use crate::gather::Gather;
use crate::loader::{Library, LoadError};

mod vendor;

pub use vendor::{CUDA_LIBRARY_NAMES, HIP_LIBRARY_NAMES, Vendor};

/// The symbol `libhipfile_mockhip.so` exports so that a loader can tell the mock from a real
/// runtime (whose device memory the host cannot address).
pub const MOCK_MARKER: &str = "hipfileMockHipRuntime";

type HostCallback = unsafe extern "C" fn(*mut c_void);
type StreamCallback = unsafe extern "C" fn(RawStream, HipResult, *mut c_void);

/// How a runtime queues host functions: `hipLaunchHostFunc` where it exists; HIP 5.2 (Debian
/// 12) declares it but does not export it, so `hipStreamAddCallback` there.
#[derive(Clone, Copy)]
enum HostFuncEntry {
    LaunchHostFunc(unsafe extern "C" fn(RawStream, HostCallback, *mut c_void) -> HipResult),
    StreamAddCallback(unsafe extern "C" fn(RawStream, StreamCallback, *mut c_void, c_uint) -> HipResult),
}

/// How a runtime queues a wait on a 32-bit word: `hipStreamWaitValue32` (with a mask), or the
/// CUDA driver's `cuStreamWaitValue32` (CUDA's runtime has none; a `CUstream` is a
/// `cudaStream_t`, and pinned host memory has the same address on the device under unified
/// addressing).
#[derive(Clone, Copy)]
enum WaitValueEntry {
    Hip(unsafe extern "C" fn(RawStream, *mut c_void, u32, c_uint, u32) -> HipResult),
    Cuda(unsafe extern "C" fn(RawStream, u64, u32, c_uint) -> HipResult),
}

/// `hipStreamWaitValueGte` / `CU_STREAM_WAIT_VALUE_GEQ`.
const WAIT_VALUE_GEQ: c_uint = 0;
/// `hipStreamNonBlocking` / `cudaStreamNonBlocking`: the library's streams never wait for the
/// legacy default stream (which a stream-ordered operation may hold at a wait).
const STREAM_NON_BLOCKING: c_uint = 1;
/// `hipEventDisableTiming` / `cudaEventDisableTiming`.
const EVENT_DISABLE_TIMING: c_uint = 2;

/// The HIP entry points hipFile uses, resolved once.
#[derive(Clone, Copy)]
struct Api {
    runtime_get_version: unsafe extern "C" fn(*mut c_int) -> HipResult,
    pointer_get_attributes: unsafe extern "C" fn(*mut PointerAttributes, *const c_void) -> HipResult,
    mem_get_address_range: unsafe extern "C" fn(*mut *mut c_void, *mut usize, *mut c_void) -> HipResult,
    malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> HipResult,
    free: unsafe extern "C" fn(*mut c_void) -> HipResult,
    memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> HipResult,
    memcpy_async: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, RawStream) -> HipResult,
    stream_create: unsafe extern "C" fn(*mut RawStream, c_uint) -> HipResult,
    stream_destroy: unsafe extern "C" fn(RawStream) -> HipResult,
    stream_synchronize: unsafe extern "C" fn(RawStream) -> HipResult,
    host_func: HostFuncEntry,
    /// Stream memory operations: `None` where the runtime has none.
    wait_value: Option<WaitValueEntry>,
    event_create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> HipResult,
    event_record: unsafe extern "C" fn(*mut c_void, RawStream) -> HipResult,
    event_query: unsafe extern "C" fn(*mut c_void) -> HipResult,
    event_destroy: unsafe extern "C" fn(*mut c_void) -> HipResult,
    host_malloc: unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> HipResult,
    host_free: unsafe extern "C" fn(*mut c_void) -> HipResult,
    host_register: unsafe extern "C" fn(*mut c_void, usize, c_uint) -> HipResult,
    host_unregister: unsafe extern "C" fn(*mut c_void) -> HipResult,
    get_device_count: unsafe extern "C" fn(*mut c_int) -> HipResult,
    get_device: unsafe extern "C" fn(*mut c_int) -> HipResult,
    set_device: unsafe extern "C" fn(c_int) -> HipResult,
    device_get_pci_bus_id: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipResult,
    get_error_string: unsafe extern "C" fn(HipResult) -> *const c_char,
    /// `hipGetProcAddress` (HIP 6.2 and later; not in CUDA's runtime, nor in HIP 5).
    get_proc_address: Option<GetProcAddress>,
}

type GetProcAddress = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> HipResult;

impl Api {
    /// Resolves every entry point of `vendor`'s runtime in `lib` (and, for CUDA, the driver
    /// library's address-range query).
    fn resolve(lib: Library, vendor: Vendor) -> Result<Api, String> {
        let driver = match vendor {
            Vendor::Hip => lib,
            Vendor::Cuda => Library::open("libcuda.so.1", libc::RTLD_NOW | libc::RTLD_LOCAL)?,
        };
        macro_rules! optional {
            ($lib:expr, $name:expr) => {
                $lib.symbol($name).map(|sym| {
                    // SAFETY: `sym` is the address of the runtime function `$name`, whose C
                    // signature (HIP 5.x, HIP 6+ and CUDA agree on all of these) is the target
                    // type; data and function pointers have the same size on supported targets.
                    unsafe { std::mem::transmute::<*mut c_void, _>(sym) }
                })
            };
        }
        macro_rules! resolve {
            ($host_func:ident, $wait_value:ident, $get_proc_address:ident; $($field:ident = $lib:ident $hip:literal $cuda:literal),* $(,)?) => {
                Api { $($field: {
                    let name = match vendor { Vendor::Hip => $hip, Vendor::Cuda => $cuda };
                    optional!($lib, name).ok_or_else(|| format!("missing symbol {name}"))?
                },)* $host_func, $wait_value, $get_proc_address }
            };
        }
        let (launch, add_callback) = match vendor {
            Vendor::Hip => ("hipLaunchHostFunc", "hipStreamAddCallback"),
            Vendor::Cuda => ("cudaLaunchHostFunc", "cudaStreamAddCallback"),
        };
        let host_func = optional!(lib, launch)
            .map(HostFuncEntry::LaunchHostFunc)
            .or_else(|| optional!(lib, add_callback).map(HostFuncEntry::StreamAddCallback))
            .ok_or_else(|| format!("missing symbols {launch} and {add_callback}"))?;
        let get_proc_address = match vendor {
            Vendor::Hip => optional!(lib, "hipGetProcAddress"),
            Vendor::Cuda => None,
        };
        let wait_value = match vendor {
            Vendor::Hip => optional!(lib, "hipStreamWaitValue32").map(WaitValueEntry::Hip),
            Vendor::Cuda => optional!(driver, "cuStreamWaitValue32_v2")
                .or_else(|| optional!(driver, "cuStreamWaitValue32"))
                .map(WaitValueEntry::Cuda),
        };
        Ok(resolve! {
            host_func, wait_value, get_proc_address;
            runtime_get_version = lib "hipRuntimeGetVersion" "cudaRuntimeGetVersion",
            pointer_get_attributes = lib "hipPointerGetAttributes" "cudaPointerGetAttributes",
            // CUdeviceptr is a 64-bit integer: the same ABI as HIP's pointers on 64-bit targets.
            mem_get_address_range = driver "hipMemGetAddressRange" "cuMemGetAddressRange_v2",
            malloc = lib "hipMalloc" "cudaMalloc",
            free = lib "hipFree" "cudaFree",
            memcpy = lib "hipMemcpy" "cudaMemcpy",
            memcpy_async = lib "hipMemcpyAsync" "cudaMemcpyAsync",
            stream_create = lib "hipStreamCreateWithFlags" "cudaStreamCreateWithFlags",
            stream_destroy = lib "hipStreamDestroy" "cudaStreamDestroy",
            stream_synchronize = lib "hipStreamSynchronize" "cudaStreamSynchronize",
            event_create = lib "hipEventCreateWithFlags" "cudaEventCreateWithFlags",
            event_record = lib "hipEventRecord" "cudaEventRecord",
            event_query = lib "hipEventQuery" "cudaEventQuery",
            event_destroy = lib "hipEventDestroy" "cudaEventDestroy",
            host_malloc = lib "hipHostMalloc" "cudaHostAlloc",
            host_free = lib "hipHostFree" "cudaFreeHost",
            host_register = lib "hipHostRegister" "cudaHostRegister",
            host_unregister = lib "hipHostUnregister" "cudaHostUnregister",
            get_device_count = lib "hipGetDeviceCount" "cudaGetDeviceCount",
            get_device = lib "hipGetDevice" "cudaGetDevice",
            set_device = lib "hipSetDevice" "cudaSetDevice",
            device_get_pci_bus_id = lib "hipDeviceGetPCIBusId" "cudaDeviceGetPCIBusId",
            get_error_string = lib "hipGetErrorString" "cudaGetErrorString",
        })
    }
}

/// A loaded GPU runtime (HIP or CUDA).
pub struct LoadedRuntime {
    api: Api,
    vendor: Vendor,
    version: i32,
    abi: Abi,
    path: String,
    mock: bool,
    /// CUDA's gathered copy, where the runtime can launch it.
    gather: Option<Gather>,
    /// CUDA's contexts, for the threads that call with one of their own.
    contexts: Option<Contexts>,
}

impl fmt::Debug for LoadedRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedRuntime")
            .field("vendor", &self.vendor)
            .field("path", &self.path)
            .field("version", &self.version)
            .field("abi", &self.abi)
            .field("mock", &self.mock)
            .finish()
    }
}

impl LoadedRuntime {
    /// Finds the runtime the application uses, else one with a device (see the module docs).
    pub fn discover() -> Result<LoadedRuntime, LoadError> {
        for vendor in [Vendor::Hip, Vendor::Cuda] {
            if let Some(sym) = Library::process().symbol(vendor.version_symbol()) {
                let (lib, path) =
                    Library::defining(sym).unwrap_or_else(|| (Library::process(), "symbols in the process".into()));
                return Self::from_library(lib, path).map_err(LoadError);
            }
        }
        let mut tried = Vec::new();
        for vendor in [Vendor::Hip, Vendor::Cuda] {
            for name in vendor.library_names() {
                match Self::open(name) {
                    Ok(rt) => match rt.device_count() {
                        Ok(n) if n > 0 => return Ok(rt),
                        Ok(_) => tried.push(format!("{name}: no device")),
                        Err(e) => tried.push(format!("{name}: no device ({})", rt.error_string(e))),
                    },
                    Err(e) => tried.push(e.0),
                }
            }
        }
        Err(LoadError(format!("no GPU runtime in the process and no GPU found: {}", tried.join("; "))))
    }

    /// Loads the runtime in the library `name_or_path` (as `dlopen` finds it), HIP or CUDA.
    pub fn open(name_or_path: &str) -> Result<LoadedRuntime, LoadError> {
        let lib = Library::open(name_or_path, libc::RTLD_NOW | libc::RTLD_LOCAL).map_err(LoadError)?;
        Self::from_library(lib, name_or_path.to_owned()).map_err(|e| LoadError(format!("{name_or_path}: {e}")))
    }

    fn from_library(lib: Library, path: String) -> Result<LoadedRuntime, String> {
        let vendor = [Vendor::Hip, Vendor::Cuda]
            .into_iter()
            .find(|v| lib.symbol(v.version_symbol()).is_some())
            .ok_or("neither a HIP nor a CUDA runtime")?;
        let api = Api::resolve(lib, vendor)?;
        let mut version = 0;
        // SAFETY: resolved `*RuntimeGetVersion`; `version` is writable.
        check(unsafe { (api.runtime_get_version)(&mut version) })
            .map_err(|e| format!("{} failed: {e}", vendor.version_symbol()))?;
        let abi = match vendor {
            Vendor::Hip => Abi::from_version(version),
            Vendor::Cuda => Abi::V6,
        };
        let mock = lib.symbol(MOCK_MARKER).is_some();
        let (gather, contexts) = match vendor {
            Vendor::Cuda => (Gather::resolve(lib), Contexts::resolve()),
            Vendor::Hip => (None, None),
        };
        Ok(LoadedRuntime { api, vendor, version, abi, path, mock, gather, contexts })
    }

    /// Whose runtime this is.
    pub fn vendor(&self) -> Vendor {
        self.vendor
    }

    /// The runtime's version number (`HIP_VERSION`, or CUDA's `major * 1000 + minor * 10`).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// The runtime's name and version, e.g. `HIP 5.2.21153` or `CUDA 13.0`.
    pub fn version_string(&self) -> String {
        let v = self.version;
        match self.vendor {
            Vendor::Hip => format!("HIP {}.{}.{}", v / 10_000_000, v / 100_000 % 100, v % 100_000),
            Vendor::Cuda => format!("CUDA {}.{}", v / 1000, v % 1000 / 10),
        }
    }

    /// The ABI the runtime has.
    pub fn abi(&self) -> Abi {
        self.abi
    }

    /// Where the runtime was found.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether this is the mock HIP runtime, whose device memory is host memory.
    pub fn is_mock(&self) -> bool {
        self.mock
    }

    /// An entry point the runtime hands out through `hipGetProcAddress` (how AMD's storage
    /// entry points `hipAmdFileRead`/`hipAmdFileWrite` are found: they are not exported), or
    /// why there is none, in words.
    pub fn proc_address(&self, name: &str) -> Result<*mut c_void, String> {
        let runtime = self.version_string();
        let Some(get) = self.api.get_proc_address else {
            return Err(format!("{runtime} has no hipGetProcAddress, so no {name}"));
        };
        let c_name = CString::new(name).map_err(|_| format!("{name}: not a symbol name"))?;
        let mut pfn: *mut c_void = std::ptr::null_mut();
        // SAFETY: resolved `hipGetProcAddress`; the name is NUL-terminated and `pfn` writable;
        // the status pointer may be null.
        let rc = unsafe { get(c_name.as_ptr(), &mut pfn, self.version, 0, std::ptr::null_mut()) };
        match check(rc) {
            Ok(()) if !pfn.is_null() => Ok(pfn),
            Ok(()) => Err(format!("{runtime} has no {name}")),
            Err(e) => Err(format!("{runtime} has no {name} (hipGetProcAddress: {})", self.error_string(e))),
        }
    }

    /// The runtime's description of `error`.
    pub fn error_string(&self, error: HipError) -> String {
        // SAFETY: resolved `hipGetErrorString`; it accepts any value.
        let s = unsafe { (self.api.get_error_string)(error.0) };
        if s.is_null() {
            return error.to_string();
        }
        // SAFETY: non-null, NUL-terminated, static in the runtime.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    }

    /// `hipMemcpy` (`stream` `None`) or `hipMemcpyAsync` of any `hipMemcpyKind`, the
    /// runtime's own copy, for the trait's [`GpuRuntime::memcpy`] and for tests of kinds
    /// hipFile does not use.
    ///
    /// # Safety
    /// Both ranges must be valid for the copy, as the runtime defines for `kind`, until the
    /// copy has run.
    pub unsafe fn memcpy_raw(
        &self,
        dst: usize,
        src: usize,
        len: usize,
        kind: i32,
        stream: Option<Stream>,
    ) -> Result<(), HipError> {
        let (dst, src) = (dst as *mut c_void, src as *const c_void);
        check(match stream {
            // SAFETY: resolved `*Memcpy`; the ranges are the caller's (see above).
            None => unsafe { (self.api.memcpy)(dst, src, len, kind) },
            // SAFETY: resolved `*MemcpyAsync`; as above, and a stream value is the runtime's own
            // handle.
            Some(stream) => unsafe { (self.api.memcpy_async)(dst, src, len, kind, stream.as_raw() as RawStream) },
        })
    }
}

/// Runs a [`HostFn`] queued with `hipLaunchHostFunc`. A panic stops here: unwinding into the
/// runtime's thread would abort the process.
unsafe extern "C" fn run_host_fn(data: *mut c_void) {
    // SAFETY: `data` is the `Box<HostFn>` leaked by `launch_host_func`; the runtime calls each
    // queued function exactly once.
    let f = unsafe { Box::from_raw(data.cast::<HostFn>()) };
    let _ = std::panic::catch_unwind(AssertUnwindSafe(f));
}

/// `run_host_fn` in the shape of a `hipStreamAddCallback` callback. The stream's status is
/// not passed on: a host function runs after the work before it either way, and stream
/// failures are reported by `stream_synchronize`.
unsafe extern "C" fn run_stream_callback(_stream: RawStream, _status: HipResult, data: *mut c_void) {
    // SAFETY: as `run_host_fn`.
    unsafe { run_host_fn(data) }
}

/// `CUDA_ERROR_INVALID_CONTEXT`: a driver API call on a thread with no current context.
const CUDA_ERROR_INVALID_CONTEXT: HipResult = 201;

impl GpuRuntime for LoadedRuntime {
    fn pointer_info(&self, addr: usize) -> Result<PointerInfo, HipError> {
        let unknown = PointerInfo { memory_type: MemoryType::Unregistered, device: -1, base: 0, size: 0 };
        // Room to spare: runtimes grow this structure (CUDA 13 writes 40 bytes and more where
        // CUDA 11 wrote 24), and a runtime writing past our view of it must not hit the stack.
        let mut room = AttributeRoom { attr: PointerAttributes::default(), _spare: [0; 32] };
        // SAFETY: resolved `*PointerGetAttributes`; `room` starts with the runtime's layout
        // and has 256 bytes of slack. The address is only looked up, never dereferenced.
        match unsafe { (self.api.pointer_get_attributes)(&mut room.attr, addr as *const c_void) } {
            0 => {}
            // HIP 5 reports memory it does not know as an invalid value.
            rc if HipError(rc) == HipError::INVALID_VALUE => return Ok(unknown),
            rc => return Err(HipError(rc)),
        }
        let mut attr = room.attr;
        if self.vendor == Vendor::Cuda {
            // CUDA has no `isManaged` (its type says `Managed`); what lies there is not ours.
            attr.is_managed = 0;
        }
        let memory_type = self.abi.memory_type(&attr);
        if !matches!(memory_type, MemoryType::Device | MemoryType::Managed) {
            return Ok(PointerInfo { memory_type, device: attr.device, ..unknown });
        }
        let (mut base, mut size) = (std::ptr::null_mut(), 0usize);
        let mut query = || {
            // SAFETY: resolved `hipMemGetAddressRange`; both outputs are writable.
            unsafe { (self.api.mem_get_address_range)(&mut base, &mut size, addr as *mut c_void) }
        };
        let current = self.current_device()?;
        let mut rc = if current == attr.device {
            query()
        } else {
            // CUDA's range query is a driver API call that sees only the current context's
            // allocations (memory of device 1 with device 0 current is "not found"): ask with
            // the buffer's device current, then give the caller its device back (semantics §4).
            self.set_device(attr.device)?;
            let rc = query();
            self.set_device(current)?;
            rc
        };
        if rc == CUDA_ERROR_INVALID_CONTEXT && self.vendor == Vendor::Cuda {
            // A thread whose first GPU call is this one has no current context yet (the
            // runtime API binds one lazily; the pointer query above does not). Bind the
            // primary context of its device (the buffer's, checked above), as the runtime's
            // next call on this thread would, and ask again.
            self.set_device(attr.device)?;
            rc = query();
        }
        check(rc)?;
        Ok(PointerInfo { memory_type, device: attr.device, base: base as usize, size })
    }

    unsafe fn memcpy(
        &self,
        kind: CopyKind,
        dst: usize,
        src: usize,
        len: usize,
        stream: Option<Stream>,
    ) -> Result<(), HipError> {
        // SAFETY: the trait's contract, which is `memcpy_raw`'s.
        unsafe { self.memcpy_raw(dst, src, len, kind as i32, stream) }
    }

    fn gathers(&self) -> bool {
        self.gather.is_some()
    }

    unsafe fn gather(&self, pieces: &[GatherPiece], stream: Stream) -> Result<(), HipError> {
        // SAFETY: the trait's contract.
        unsafe { crate::gather::launch_or_copy(self.gather.as_ref(), self, pieces, stream) }
    }

    fn stream_create(&self) -> Result<Stream, HipError> {
        let mut stream = std::ptr::null_mut();
        // SAFETY: resolved `hipStreamCreateWithFlags`; `stream` is writable.
        check(unsafe { (self.api.stream_create)(&mut stream, STREAM_NON_BLOCKING) })?;
        // SAFETY: a stream the runtime just created; it lives until `stream_destroy`.
        Ok(unsafe { Stream::from_raw(stream as usize) })
    }

    fn stream_destroy(&self, stream: Stream) -> Result<(), HipError> {
        // SAFETY: resolved `hipStreamDestroy`; the runtime validates the handle.
        check(unsafe { (self.api.stream_destroy)(stream.as_raw() as RawStream) })
    }

    fn stream_synchronize(&self, stream: Stream) -> Result<(), HipError> {
        // SAFETY: resolved `hipStreamSynchronize`; the runtime validates the handle.
        check(unsafe { (self.api.stream_synchronize)(stream.as_raw() as RawStream) })
    }

    fn launch_host_func(&self, stream: Stream, f: HostFn) -> Result<(), HipError> {
        let data = Box::into_raw(Box::new(f)).cast::<c_void>();
        let raw = stream.as_raw() as RawStream;
        let rc = match self.api.host_func {
            // SAFETY: a resolved entry point; `run_host_fn` takes ownership of `data` when the
            // runtime calls it.
            HostFuncEntry::LaunchHostFunc(f) => unsafe { f(raw, run_host_fn, data) },
            // SAFETY: as above; callback flags must be 0.
            HostFuncEntry::StreamAddCallback(f) => unsafe { f(raw, run_stream_callback, data, 0) },
        };
        if rc != 0 {
            // SAFETY: the runtime refused the function, so it never runs: reclaim it.
            drop(unsafe { Box::from_raw(data.cast::<HostFn>()) });
        }
        check(rc)
    }

    unsafe fn stream_wait_value32(&self, stream: Stream, addr: usize, value: u32) -> Result<(), HipError> {
        let raw = stream.as_raw() as RawStream;
        check(match self.api.wait_value {
            // SAFETY: resolved `hipStreamWaitValue32`; the word is the caller's (pinned, kept).
            Some(WaitValueEntry::Hip(f)) => unsafe { f(raw, addr as *mut c_void, value, WAIT_VALUE_GEQ, u32::MAX) },
            // SAFETY: resolved `cuStreamWaitValue32`; as above (the host address is the
            // device address under unified addressing).
            Some(WaitValueEntry::Cuda(f)) => unsafe { f(raw, addr as u64, value, WAIT_VALUE_GEQ) },
            None => HipError::NOT_SUPPORTED.0,
        })
    }

    fn event_create(&self) -> Result<Event, HipError> {
        let mut event = std::ptr::null_mut();
        // SAFETY: resolved `hipEventCreateWithFlags`; `event` is writable.
        check(unsafe { (self.api.event_create)(&mut event, EVENT_DISABLE_TIMING) })?;
        // SAFETY: an event the runtime just created; it lives until `event_destroy`.
        Ok(unsafe { Event::from_raw(event as usize) })
    }

    fn event_record(&self, event: Event, stream: Stream) -> Result<(), HipError> {
        // SAFETY: resolved `hipEventRecord`; the runtime validates both handles.
        check(unsafe { (self.api.event_record)(event.as_raw() as *mut c_void, stream.as_raw() as RawStream) })
    }

    fn event_query(&self, event: Event) -> Result<bool, HipError> {
        // SAFETY: resolved `hipEventQuery`; the runtime validates the handle.
        match unsafe { (self.api.event_query)(event.as_raw() as *mut c_void) } {
            rc if HipError(rc) == HipError::NOT_READY => Ok(false),
            rc => check(rc).map(|()| true),
        }
    }

    fn event_destroy(&self, event: Event) -> Result<(), HipError> {
        // SAFETY: resolved `hipEventDestroy`; the runtime validates the handle.
        check(unsafe { (self.api.event_destroy)(event.as_raw() as *mut c_void) })
    }

    fn device_alloc(&self, len: usize) -> Result<usize, HipError> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: resolved `*Malloc`; `ptr` is writable.
        check(unsafe { (self.api.malloc)(&mut ptr, len) })?;
        Ok(ptr as usize)
    }

    unsafe fn device_free(&self, addr: usize) -> Result<(), HipError> {
        // SAFETY: forwarded from the caller.
        check(unsafe { (self.api.free)(addr as *mut c_void) })
    }

    fn host_alloc(&self, len: usize) -> Result<*mut u8, HipError> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: resolved `hipHostMalloc`; `ptr` is writable; flags 0 = default.
        check(unsafe { (self.api.host_malloc)(&mut ptr, len, 0) })?;
        Ok(ptr.cast())
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<(), HipError> {
        // SAFETY: forwarded from the caller.
        check(unsafe { (self.api.host_free)(ptr.cast()) })
    }

    unsafe fn host_register(&self, ptr: *mut u8, len: usize) -> Result<(), HipError> {
        // SAFETY: forwarded from the caller; flags 0 = default.
        check(unsafe { (self.api.host_register)(ptr.cast(), len, 0) })
    }

    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<(), HipError> {
        // SAFETY: forwarded from the caller.
        check(unsafe { (self.api.host_unregister)(ptr.cast()) })
    }

    fn device_count(&self) -> Result<i32, HipError> {
        let mut n = 0;
        // SAFETY: resolved `hipGetDeviceCount`; `n` is writable.
        check(unsafe { (self.api.get_device_count)(&mut n) })?;
        Ok(n)
    }

    fn current_device(&self) -> Result<i32, HipError> {
        let mut d = 0;
        // SAFETY: resolved `hipGetDevice`; `d` is writable.
        check(unsafe { (self.api.get_device)(&mut d) })?;
        Ok(d)
    }

    fn enter_primary_context(&self) -> Option<usize> {
        self.contexts.as_ref()?.enter_primary()
    }

    fn restore_context(&self, saved: usize) {
        if let Some(contexts) = &self.contexts {
            contexts.restore(saved);
        }
    }

    fn set_device(&self, device: i32) -> Result<(), HipError> {
        // SAFETY: resolved `hipSetDevice`; the runtime validates the ordinal.
        check(unsafe { (self.api.set_device)(device) })
    }

    fn pci_bus_id(&self, device: i32) -> Result<String, HipError> {
        let mut id = [0 as c_char; 32];
        // SAFETY: resolved `*DeviceGetPCIBusId`; it writes at most `len` bytes, NUL included.
        check(unsafe { (self.api.device_get_pci_bus_id)(id.as_mut_ptr(), id.len() as c_int, device) })?;
        id[id.len() - 1] = 0;
        // SAFETY: NUL-terminated (the last byte at least).
        Ok(unsafe { CStr::from_ptr(id.as_ptr()) }.to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests;
