//! `libhipfile_mockhip.so`: the HIP runtime API that hipFile programs use, implemented over
//! one process-wide [`MockGpu`], with the C ABI of Debian 12's HIP 5.2 headers.
//!
//! Link a HIP program against it instead of `libamdhip64` and it runs with no GPU: device
//! memory is host memory the mock tracks, streams are worker threads. libhipfile finds these
//! symbols in the process (its HIP loader looks there first), so the program and the library
//! share one emulated device memory. The marker symbol [`hipfileMockHipRuntime`] tells the
//! loader that device addresses are host addresses here.
//!
//! `HIPFILE_MOCK_DEVICES` (default 1) sets the number of devices, read at the first call.
//! Every entry point returns a `hipError_t` as HIP does, records it for `hipGetLastError`, and
//! never unwinds into C (a panic becomes `hipErrorUnknown`).
#![allow(non_snake_case)]

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use hipfile_backend_mock::{MockGpu, fork_gate};
use hipfile_core::{CopyKind, Event, GpuRuntime, HipError, MemoryType, Stream};
use hipfile_runtime::{AmdFileHandle, AmdFileIo, PointerAttributes, memory_type_v5, memory_type_v6};

pub mod common_calls;
pub mod streams;

/// `HIP_VERSION` the mock reports: the ABI of Debian 12's HIP headers (5.2).
pub const MOCK_HIP_VERSION: c_int = 50_221_153;

/// `HIP_VERSION` the mock reports with `HIPFILE_MOCK_HIP_ABI=6`: ROCm 6.4's.
pub const MOCK_HIP6_VERSION: c_int = 60_443_483;

/// Whether the mock answers with HIP 6's ABI (`HIPFILE_MOCK_HIP_ABI=6`, read at the first
/// call): `hipRuntimeGetVersion` says 6.4 and `hipPointerGetAttributes` uses HIP 6's numbering
/// and rules, for programs built against HIP 6's headers.
fn hip6() -> bool {
    static HIP6: OnceLock<bool> = OnceLock::new();
    *HIP6.get_or_init(|| std::env::var("HIPFILE_MOCK_HIP_ABI").is_ok_and(|v| v.trim() == "6"))
}

fn version() -> c_int {
    if hip6() { MOCK_HIP6_VERSION } else { MOCK_HIP_VERSION }
}

fn gpu() -> &'static Arc<MockGpu> {
    static GPU: OnceLock<Arc<MockGpu>> = OnceLock::new();
    GPU.get_or_init(|| {
        let devices = std::env::var("HIPFILE_MOCK_DEVICES").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        // Device memory the program's own pointers cannot reach, as on a GPU.
        MockGpu::guarded(devices)
    })
}

thread_local! {
    static LAST_ERROR: Cell<c_int> = const { Cell::new(0) };
}

/// Runs one entry point inside a pass of the mock's fork gate (see
/// `hipfile_backend_mock::fork_gate`): records its result for `hipGetLastError` and turns a
/// panic into `hipErrorUnknown`.
fn call(f: impl FnOnce() -> Result<(), HipError>) -> c_int {
    let _pass = fork_gate::pass();
    call_waiting(f)
}

/// [`call`] for an entry point that waits for stream threads: outside a pass (a fork waits
/// for passes, and stream threads take them), its table lookups taking their own.
fn call_waiting(f: impl FnOnce() -> Result<(), HipError>) -> c_int {
    let rc = match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => e.0,
        Err(_) => HipError::UNKNOWN.0,
    };
    if rc != 0 {
        LAST_ERROR.with(|e| e.set(rc));
    }
    rc
}

/// The mock's fork handlers, registered when this library is loaded: before libhipfile's,
/// whose prepare step must run first (see `fork_gate::watch`).
#[used]
#[unsafe(link_section = ".init_array")]
static WATCH_FORKS: extern "C" fn() = {
    extern "C" fn watch_forks() {
        fork_gate::watch();
    }
    watch_forks
};

/// Writes `value` through an output pointer, or fails with `hipErrorInvalidValue` if null.
///
/// # Safety
/// `out` must be null or valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) -> Result<(), HipError> {
    if out.is_null() {
        return Err(HipError::INVALID_VALUE);
    }
    // SAFETY: non-null, and the caller guarantees it is writable.
    unsafe { out.write(value) };
    Ok(())
}

/// Writes the address of a new allocation through `ptr`: `hipErrorInvalidValue` for a null
/// `ptr`, checked before `alloc` allocates anything; else `alloc`'s error or its address.
///
/// # Safety
/// `ptr` must be null or writable.
unsafe fn put_allocation(
    ptr: *mut *mut c_void,
    alloc: impl FnOnce() -> Result<*mut c_void, HipError>,
) -> Result<(), HipError> {
    if ptr.is_null() {
        return Err(HipError::INVALID_VALUE);
    }
    let addr = alloc()?;
    // SAFETY: the caller's contract; checked non-null above.
    unsafe { put(ptr, addr) }
}

fn stream(s: *mut c_void) -> Stream {
    // SAFETY: the mock GPU's streams are keys of its table, which checks every handle it is
    // given (an unknown one is hipErrorInvalidHandle).
    unsafe { Stream::from_raw(s as usize) }
}

fn event(e: *mut c_void) -> Event {
    // SAFETY: as [`stream`]'s: the mock GPU checks every event handle it is given.
    unsafe { Event::from_raw(e as usize) }
}

fn copy_kind(kind: c_int) -> Result<CopyKind, HipError> {
    CopyKind::from_hip(kind).ok_or(HipError(21)) // hipErrorInvalidMemcpyDirection
}

/// Marks this library as the mock runtime (see the crate docs); returns the version it reports.
#[unsafe(no_mangle)]
pub extern "C" fn hipfileMockHipRuntime() -> c_int {
    version()
}

/// Fault injection for tests of programs: the `nth` copy from now (1 = the next one) fails
/// with `error` (a `hipError_t`); `nth == 0` disarms every fault.
#[unsafe(no_mangle)]
pub extern "C" fn hipfileMockFailCopy(nth: u64, error: c_int) {
    match nth {
        0 => gpu().faults().clear(),
        n => gpu().faults().fail_copy(n, HipError(error)),
    }
}

/// `hipInit`: flags must be 0.
#[unsafe(no_mangle)]
pub extern "C" fn hipInit(flags: c_uint) -> c_int {
    call(|| if flags == 0 { Ok(()) } else { Err(HipError::INVALID_VALUE) })
}

/// `hipRuntimeGetVersion`.
///
/// # Safety
/// `version` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipRuntimeGetVersion(version: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    call(|| unsafe { put(version, self::version()) })
}

/// `hipGetDeviceCount`.
///
/// # Safety
/// `count` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceCount(count: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    call(|| unsafe { put(count, gpu().device_count()?) })
}

/// `hipGetDevice`: the calling thread's current device.
///
/// # Safety
/// `device` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevice(device: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    call(|| unsafe { put(device, gpu().current_device()?) })
}

/// `hipSetDevice`.
#[unsafe(no_mangle)]
pub extern "C" fn hipSetDevice(device: c_int) -> c_int {
    call(|| gpu().set_device(device))
}

/// `hipDeviceGetPCIBusId`: the mock's made-up PCI address of `device`, NUL-terminated, cut to
/// `len` bytes.
///
/// # Safety
/// `id` must be null or writable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetPCIBusId(id: *mut c_char, len: c_int, device: c_int) -> c_int {
    call(|| {
        let text = gpu().pci_bus_id(device)?;
        let len = usize::try_from(len).map_err(|_| HipError::INVALID_VALUE)?;
        if id.is_null() || len == 0 {
            return Err(HipError::INVALID_VALUE);
        }
        // SAFETY: the caller's contract: `len` writable bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(id.cast::<u8>(), len) };
        let n = text.len().min(len - 1);
        out[..n].copy_from_slice(&text.as_bytes()[..n]);
        out[n] = 0;
        Ok(())
    })
}

/// `hipDeviceSynchronize`: waits for every stream.
#[unsafe(no_mangle)]
pub extern "C" fn hipDeviceSynchronize() -> c_int {
    call_waiting(|| gpu().synchronize_all())
}

/// `hipMalloc`: zero-filled device memory on the current device (size 0 gives null).
///
/// # Safety
/// `ptr` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> c_int {
    // SAFETY: the caller's contract.
    call(|| unsafe { put_allocation(ptr, || gpu().malloc(size).map(|addr| addr as *mut c_void)) })
}

/// `hipFree` (null is a no-op).
#[unsafe(no_mangle)]
pub extern "C" fn hipFree(ptr: *mut c_void) -> c_int {
    call(|| gpu().free(ptr as usize))
}

/// `hipHostMalloc`'s flags: `Portable`, `Mapped`, `WriteCombined`, HIP 6's `Uncached`,
/// `NumaUser`, `Coherent` and `NonCoherent` (every pinned allocation here is all of them that
/// make sense together).
const HOST_MALLOC_FLAGS: c_uint = 0x1 | 0x2 | 0x4 | 0x1000_0000 | 0x2000_0000 | 0x4000_0000 | 0x8000_0000;

/// `hipHostMallocCoherent | hipHostMallocNonCoherent`: asking for both is an error.
const COHERENT_AND_NOT: c_uint = 0x4000_0000 | 0x8000_0000;

/// `hipHostRegister`'s flags: `Portable`, `Mapped`, `IoMemory`, `ReadOnly` (HIP 5.2's
/// `hipExtHostRegisterCoarseGrained` has its value) and HIP 6's coarse-grained flag.
const HOST_REGISTER_FLAGS: c_uint = 0x1 | 0x2 | 0x4 | 0x8 | 0x10;

/// `hipHostMalloc`: pinned host memory. Flags other than the ones HIP defines, or both
/// coherent and non-coherent, are `hipErrorInvalidValue`, as HIP's.
///
/// # Safety
/// `ptr` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostMalloc(ptr: *mut *mut c_void, size: usize, flags: c_uint) -> c_int {
    if flags & !HOST_MALLOC_FLAGS != 0 || flags & COHERENT_AND_NOT == COHERENT_AND_NOT {
        return call(|| Err(HipError::INVALID_VALUE));
    }
    // SAFETY: the caller's contract.
    call(|| unsafe { put_allocation(ptr, || gpu().host_alloc(size).map(<*mut u8>::cast)) })
}

/// `hipHostFree`.
///
/// # Safety
/// `ptr` must be null or come from `hipHostMalloc` and not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostFree(ptr: *mut c_void) -> c_int {
    // SAFETY: the caller's contract; the mock refuses pointers it did not allocate.
    call(|| unsafe { gpu().host_free(ptr.cast()) })
}

/// `hipHostRegister`: flags other than the ones HIP defines are `hipErrorInvalidValue`; a
/// range already registered `hipErrorHostMemoryAlreadyRegistered`.
///
/// # Safety
/// `[ptr, ptr + size)` must be host memory that outlives the registration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostRegister(ptr: *mut c_void, size: usize, flags: c_uint) -> c_int {
    call(|| {
        if flags & !HOST_REGISTER_FLAGS != 0 {
            return Err(HipError::INVALID_VALUE);
        }
        // SAFETY: the caller's contract.
        unsafe { gpu().host_register(ptr.cast(), size) }
    })
}

/// `hipHostUnregister`.
///
/// # Safety
/// `ptr` should have been registered with `hipHostRegister` (others get an error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostUnregister(ptr: *mut c_void) -> c_int {
    // SAFETY: the caller's contract; unknown pointers are refused.
    call(|| unsafe { gpu().host_unregister(ptr.cast()) })
}

/// `hipMemcpy`: device sides are checked against the allocation table.
///
/// # Safety
/// Host sides must be valid for `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpy(dst: *mut c_void, src: *const c_void, size: usize, kind: c_int) -> c_int {
    // SAFETY: the caller's contract; the null stream copies now.
    call(|| unsafe { gpu().hip_memcpy(dst as usize, src as usize, size, copy_kind(kind)?, Stream::NULL) })
}

/// `hipMemcpyAsync`.
///
/// # Safety
/// Host sides must be valid for `size` bytes until the stream has run the copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyAsync(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    kind: c_int,
    s: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract.
    call(|| unsafe { gpu().hip_memcpy(dst as usize, src as usize, size, copy_kind(kind)?, stream(s)) })
}

/// `hipMemset` of device memory.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemset(dst: *mut c_void, value: c_int, size: usize) -> c_int {
    // HIP uses the low byte of `value`.
    call(|| gpu().memset(dst as usize, value as u8, size))
}

/// `hipPointerGetAttributes` (one layout in HIP 5 and 6). HIP 5's numbering and rule by
/// default: device memory is `hipMemoryTypeDevice`, pinned or registered host memory
/// `hipMemoryTypeHost`, other addresses `hipErrorInvalidValue` (HIP 5's answer for memory it
/// does not know). With HIP 6's ABI (`HIPFILE_MOCK_HIP_ABI=6`): HIP 6's numbering, and other
/// addresses succeed as `hipMemoryTypeUnregistered` (device -1, no pointers), as HIP 6 and
/// CUDA answer.
///
/// # Safety
/// `attributes` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipPointerGetAttributes(attributes: *mut PointerAttributes, ptr: *const c_void) -> c_int {
    call(|| {
        let info = gpu().pointer_info(ptr as usize)?;
        let p = ptr.cast_mut();
        let (device, host) = if hip6() {
            (memory_type_v6::DEVICE, memory_type_v6::HOST)
        } else {
            (memory_type_v5::DEVICE, memory_type_v5::HOST)
        };
        let attr = match info.memory_type {
            MemoryType::Device => PointerAttributes {
                memory_type: device,
                device: info.device,
                device_pointer: p,
                host_pointer: std::ptr::null_mut(),
                is_managed: 0,
                allocation_flags: 0,
            },
            MemoryType::Host => PointerAttributes {
                memory_type: host,
                device: info.device,
                device_pointer: p,
                host_pointer: p,
                is_managed: 0,
                allocation_flags: 0,
            },
            // Managed memory: HIP 6 says so in `type`, HIP 5 reports device memory; both set
            // `isManaged`, and the host reaches it at the same address.
            MemoryType::Managed => PointerAttributes {
                memory_type: if hip6() { memory_type_v6::MANAGED } else { device },
                device: info.device,
                device_pointer: p,
                host_pointer: p,
                is_managed: 1,
                allocation_flags: 0,
            },
            MemoryType::Unregistered if hip6() && !ptr.is_null() => PointerAttributes {
                memory_type: memory_type_v6::UNREGISTERED,
                device: -1,
                device_pointer: std::ptr::null_mut(),
                host_pointer: std::ptr::null_mut(),
                is_managed: 0,
                allocation_flags: 0,
            },
            MemoryType::Unregistered => return Err(HipError::INVALID_VALUE),
        };
        // SAFETY: the caller's contract.
        unsafe { put(attributes, attr) }
    })
}

/// `hipMemGetAddressRange`: the device allocation containing `dptr`, managed allocations
/// included, as HIP answers (`hipErrorNotFound` for other addresses). Either output may be null. As strict as CUDA's `cuMemGetAddressRange`,
/// which sees only the current context: memory of another device than the calling thread's
/// current one is "not found" too, so libhipfile is tested against the strictest runtime.
///
/// # Safety
/// `base` and `size` must each be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemGetAddressRange(base: *mut *mut c_void, size: *mut usize, dptr: *mut c_void) -> c_int {
    call(|| {
        let info = gpu().pointer_info(dptr as usize)?;
        let device_side = matches!(info.memory_type, MemoryType::Device | MemoryType::Managed);
        if !device_side || info.device != gpu().current_device()? {
            return Err(HipError::NOT_FOUND);
        }
        if !base.is_null() {
            // SAFETY: the caller's contract.
            unsafe { put(base, info.base as *mut c_void) }?;
        }
        if !size.is_null() {
            // SAFETY: the caller's contract.
            unsafe { put(size, info.size) }?;
        }
        Ok(())
    })
}

/// `hipGetLastError`: the last error of the calling thread, which it resets.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetLastError() -> c_int {
    LAST_ERROR.with(|e| e.replace(0))
}

/// `hipPeekAtLastError`: as `hipGetLastError`, without resetting.
#[unsafe(no_mangle)]
pub extern "C" fn hipPeekAtLastError() -> c_int {
    LAST_ERROR.with(Cell::get)
}

/// The errors the mock produces: value, name, description.
const ERRORS: [(c_int, &CStr, &CStr); 14] = [
    (0, c"hipSuccess", c"no error"),
    (1, c"hipErrorInvalidValue", c"invalid argument"),
    (2, c"hipErrorOutOfMemory", c"out of memory"),
    (3, c"hipErrorNotInitialized", c"initialization error"),
    (17, c"hipErrorInvalidDevicePointer", c"invalid device pointer"),
    (21, c"hipErrorInvalidMemcpyDirection", c"invalid copy direction for memcpy"),
    (100, c"hipErrorNoDevice", c"no ROCm-capable device is detected"),
    (101, c"hipErrorInvalidDevice", c"invalid device ordinal"),
    (400, c"hipErrorInvalidHandle", c"invalid resource handle"),
    (500, c"hipErrorNotFound", c"named symbol not found"),
    (600, c"hipErrorNotReady", c"device not ready"),
    (712, c"hipErrorHostMemoryAlreadyRegistered", c"part or all of the requested memory range is already mapped"),
    (713, c"hipErrorHostMemoryNotRegistered", c"pointer does not correspond to a registered memory region"),
    (719, c"hipErrorLaunchFailure", c"unspecified launch failure"),
];

fn describe(error: c_int) -> (&'static CStr, &'static CStr) {
    ERRORS
        .iter()
        .find(|(code, ..)| *code == error)
        .map_or((c"hipErrorUnknown", c"unknown error"), |&(_, name, text)| (name, text))
}

/// `hipGetErrorName`.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorName(error: c_int) -> *const c_char {
    describe(error).0.as_ptr()
}

/// `hipGetErrorString`.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorString(error: c_int) -> *const c_char {
    describe(error).1.as_ptr()
}

/// `hipGetProcAddress` (HIP 6.2 and later; the mock has it so that hipFile's AIS path runs
/// over the mock): hands out [`hipAmdFileRead`], [`hipAmdFileWrite`] and [`hipInit`], the
/// only symbols it knows. `HIPFILE_MOCK_AIS=absent` makes the first two unknown, as on a HIP
/// without AIS.
///
/// # Safety
/// `symbol` must be null or a NUL-terminated string; `pfn` and `status` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    _hip_version: c_int,
    _flags: u64,
    status: *mut c_int,
) -> c_int {
    call(|| {
        if symbol.is_null() || pfn.is_null() {
            return Err(HipError::INVALID_VALUE);
        }
        // SAFETY: non-null and NUL-terminated (the caller).
        let name = unsafe { CStr::from_ptr(symbol) };
        let absent = hipfile_backend_mock::ais_absent();
        let found: Option<*mut c_void> = match name.to_bytes() {
            b"hipInit" => Some(hipInit as extern "C" fn(c_uint) -> c_int as *mut c_void),
            _ if absent => None,
            b"hipAmdFileRead" => Some(hipAmdFileRead as AmdFileIo as *mut c_void),
            b"hipAmdFileWrite" => Some(hipAmdFileWrite as AmdFileIo as *mut c_void),
            _ => None,
        };
        // hipDriverProcAddressQueryResult: 0 success, 1 symbol not found.
        if !status.is_null() {
            // SAFETY: non-null and writable (the caller).
            unsafe { status.write(if found.is_some() { 0 } else { 1 }) };
        }
        let f = found.ok_or(HipError::NOT_FOUND)?;
        // SAFETY: writable (checked non-null above; the caller guarantees the rest).
        unsafe { pfn.write(f) };
        Ok(())
    })
}

/// `hipAmdFileRead` and `hipAmdFileWrite`: one C signature ([`AmdFileIo`]), written once here;
/// each runs [`amd_file_io`] in its direction and reports through its out-pointers.
macro_rules! amd_file_entry_points {
    ($($(#[doc = $doc:literal])* $name:ident: read = $read:literal;)*) => {$(
        $(#[doc = $doc])*
        ///
        /// # Safety
        /// `size_copied` and `status` must be null or writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            handle: AmdFileHandle,
            device_ptr: *mut c_void,
            size: u64,
            file_offset: i64,
            size_copied: *mut u64,
            status: *mut i32,
        ) -> c_int {
            let (rc, copied, errno) = amd_file_io($read, handle, device_ptr, size, file_offset);
            // SAFETY: null or writable (the caller).
            unsafe { put(size_copied, copied) }.ok();
            // SAFETY: as above.
            unsafe { put(status, errno) }.ok();
            rc
        }
    )*};
}

amd_file_entry_points! {
    /// `hipAmdFileRead`, emulated: `O_DIRECT` reads straight into the mock's device memory (host
    /// memory), as the kernel's P2P DMA would put them into VRAM. `*status` gets an errno on
    /// failure (`EINVAL` for what `O_DIRECT` refuses); `HIPFILE_MOCK_AIS_STATUS=<errno>` makes
    /// every call fail with that errno (19, `ENODEV`: no P2P path).
    hipAmdFileRead: read = true;
    /// `hipAmdFileWrite`, emulated (see [`hipAmdFileRead`]).
    hipAmdFileWrite: read = false;
}

/// One emulated AIS transfer, a read or a write: the call's `hipError_t`, the bytes moved and
/// the errno for `*status` (0 where none).
fn amd_file_io(
    read: bool,
    handle: AmdFileHandle,
    device_ptr: *mut c_void,
    size: u64,
    file_offset: i64,
) -> (c_int, u64, i32) {
    let mut copied = 0u64;
    let mut errno = 0;
    let rc = call(|| {
        if let Some(injected) = hipfile_backend_mock::ais_failing_errno() {
            errno = injected;
            return Ok(());
        }
        // As KFD: the range must be device memory (a VRAM buffer object).
        let addr = device_ptr as usize;
        let info = gpu().pointer_info(addr)?;
        let size = usize::try_from(size).map_err(|_| HipError::INVALID_VALUE)?;
        if info.memory_type != MemoryType::Device || info.bytes_after(addr) < size || file_offset < 0 {
            return Err(HipError::INVALID_VALUE);
        }
        // SAFETY: the union was built with the descriptor (hipFile's AIS convention).
        let fd = unsafe { handle.fd };
        let bytes = gpu().device_view(addr, size)?;
        // SAFETY: `[bytes, bytes + size)` holds the bytes of mock device memory
        // `[addr, addr + size)` (checked above), host memory owned by the mock; the caller does
        // not use the range during the call.
        let memory = unsafe { std::slice::from_raw_parts_mut(bytes as *mut u8, size) };
        let moved = hipfile_core::io::transfer_loop(size, read, |done, left| {
            let (at, off) = (&mut memory[done..done + left], file_offset as u64 + done as u64);
            if read { hipfile_core::io::pread(fd, at, off) } else { hipfile_core::io::pwrite(fd, at, off) }
        });
        match moved {
            Ok(n) => copied = n as u64,
            Err(e) => errno = e.errno().unwrap_or(libc::EIO),
        }
        Ok(())
    });
    (rc, copied, errno)
}
