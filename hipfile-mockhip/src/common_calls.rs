//! HIP calls that programs around file I/O make besides the library's own (upstream hipFile's
//! system tests and their helpers, fio's engine, AMD's examples): the `hipMemset` and
//! `hipMemcpy` forms, memory information and prefetching, stream queries and waits, priorities.
//! Each follows HIP's codes; docs/mockhip.md lists every call with its status.
//!
//! Asynchronous forms here are ordered by their stream the simple way: the call waits for the
//! work queued before it on the stream, then does its own part at once. Work queued after it
//! therefore runs after it, which is what stream order promises.

use std::ffi::{c_char, c_int, c_uint, c_void};

use hipfile_core::{CopyKind, GpuRuntime, HipError};
use hipfile_runtime::{DeviceProp, DevicePropR0600};

use crate::streams::wait_event;
use crate::{call, copy_kind, gpu, put, put_allocation, stream};

/// The device memory the mock reports per device (`hipMemGetInfo`'s total).
pub const DEVICE_MEMORY: usize = 64 << 30;

/// Waits for the work queued on `s` before this call (nothing for the null stream, whose work
/// runs at once).
fn after_queued(s: *mut c_void) -> Result<(), HipError> {
    gpu().stream_synchronize(stream(s))
}

/// Fills `count` elements of `value`'s width at `dest`, checked against a device allocation.
fn fill(dest: *mut c_void, value: &[u8], count: usize) -> Result<(), HipError> {
    let len = count.checked_mul(value.len()).ok_or(HipError::INVALID_VALUE)?;
    if len == 0 {
        return Ok(());
    }
    let at = gpu().device_view(dest as usize, len)?;
    // SAFETY: the range lies inside a live device allocation's bytes, host memory.
    let bytes = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, len) };
    bytes.chunks_exact_mut(value.len()).for_each(|word| word.copy_from_slice(value));
    Ok(())
}

/// `hipMemsetAsync`: as `hipMemset`, in `s`'s order.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetAsync(dst: *mut c_void, value: c_int, size: usize, s: *mut c_void) -> c_int {
    call(|| {
        after_queued(s)?;
        gpu().memset(dst as usize, value as u8, size)
    })
}

/// `hipMemsetD8`, `D16` and `D32`: `count` elements of `value` (a byte, a 16-bit and a 32-bit
/// word); and their `Async` forms, in the stream's order.
macro_rules! memset_elements {
    ($($plain:ident, $queued:ident: $t:ty;)*) => {$(
        #[doc = concat!("`", stringify!($plain), "`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $plain(dest: *mut c_void, value: $t, count: usize) -> c_int {
            call(|| fill(dest, &value.to_ne_bytes(), count))
        }

        #[doc = concat!("`", stringify!($queued), "`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $queued(dest: *mut c_void, value: $t, count: usize, s: *mut c_void) -> c_int {
            call(|| after_queued(s).and_then(|()| fill(dest, &value.to_ne_bytes(), count)))
        }
    )*};
}

memset_elements! {
    hipMemsetD8, hipMemsetD8Async: u8;
    hipMemsetD16, hipMemsetD16Async: u16;
    hipMemsetD32, hipMemsetD32Async: c_int;
}

/// One of the `hipMemcpy{HtoD,DtoH,DtoD}[Async]` forms.
///
/// # Safety
/// Host sides must be valid for `size` bytes until the copy has run.
unsafe fn copy(dst: *mut c_void, src: *const c_void, size: usize, kind: CopyKind, s: *mut c_void) -> c_int {
    // SAFETY: the caller's contract; `hip_memcpy` checks the device sides.
    call(|| unsafe { gpu().hip_memcpy(dst as usize, src as usize, size, kind, stream(s)) })
}

/// `hipMemcpyHtoD`.
///
/// # Safety
/// `src` must be valid for `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyHtoD(dst: *mut c_void, src: *mut c_void, size: usize) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { copy(dst, src, size, CopyKind::HostToDevice, std::ptr::null_mut()) }
}

/// `hipMemcpyDtoH`.
///
/// # Safety
/// `dst` must be valid for `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyDtoH(dst: *mut c_void, src: *mut c_void, size: usize) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { copy(dst, src, size, CopyKind::DeviceToHost, std::ptr::null_mut()) }
}

/// `hipMemcpyDtoD`: both sides checked against device allocations.
///
/// # Safety
/// None beyond C's: both sides are checked to be device memory, and no host memory is touched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyDtoD(dst: *mut c_void, src: *mut c_void, size: usize) -> c_int {
    // SAFETY: no host side.
    unsafe { copy(dst, src, size, CopyKind::DeviceToDevice, std::ptr::null_mut()) }
}

/// `hipMemcpyHtoDAsync`.
///
/// # Safety
/// `src` must be valid for `size` bytes until the stream has run the copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyHtoDAsync(dst: *mut c_void, src: *mut c_void, size: usize, s: *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { copy(dst, src, size, CopyKind::HostToDevice, s) }
}

/// `hipMemcpyDtoHAsync`.
///
/// # Safety
/// `dst` must be valid for `size` bytes until the stream has run the copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyDtoHAsync(dst: *mut c_void, src: *mut c_void, size: usize, s: *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { copy(dst, src, size, CopyKind::DeviceToHost, s) }
}

/// `hipMemcpyDtoDAsync`.
///
/// # Safety
/// As [`hipMemcpyDtoD`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyDtoDAsync(dst: *mut c_void, src: *mut c_void, size: usize, s: *mut c_void) -> c_int {
    // SAFETY: no host side.
    unsafe { copy(dst, src, size, CopyKind::DeviceToDevice, s) }
}

/// `hipMemGetInfo`: the current device's memory, [`DEVICE_MEMORY`] in all, less what is
/// allocated on it.
///
/// # Safety
/// `free` and `total` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> c_int {
    call(|| {
        let used = gpu().device_bytes(gpu().current_device()?);
        // SAFETY: the caller's contract.
        unsafe { put(free, DEVICE_MEMORY.saturating_sub(used)) }?;
        // SAFETY: as above.
        unsafe { put(total, DEVICE_MEMORY) }
    })
}

/// `hipMemPrefetchAsync`: nothing to move (the mock's memory is in one place), but the range
/// must be device memory (managed memory, what prefetching is for, included) and the device
/// must exist (`hipErrorInvalidValue`,
/// `hipErrorInvalidDevice`).
#[unsafe(no_mangle)]
pub extern "C" fn hipMemPrefetchAsync(dev_ptr: *const c_void, count: usize, device: c_int, _s: *mut c_void) -> c_int {
    call(|| {
        if device < 0 || device >= gpu().device_count()? {
            return Err(HipError(101)); // hipErrorInvalidDevice
        }
        gpu().device_view(dev_ptr as usize, count).map(drop)
    })
}

/// `hipDeviceReset`: waits for every stream. Allocations stay (the mock has one device memory
/// for the whole process; a program that resets does not touch them after).
#[unsafe(no_mangle)]
pub extern "C" fn hipDeviceReset() -> c_int {
    call(|| gpu().synchronize_all())
}

/// `hipStreamQuery`: `hipErrorNotReady` while work queued on `s` is still to run.
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamQuery(s: *mut c_void) -> c_int {
    call(|| if gpu().stream_idle(stream(s))? { Ok(()) } else { Err(HipError::NOT_READY) })
}

/// `hipStreamWaitEvent`: work queued on `s` after this call runs after the work `event`
/// recorded (the call waits for it; `flags` must be 0).
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamWaitEvent(_s: *mut c_void, event: *mut c_void, flags: c_uint) -> c_int {
    call(|| {
        if flags != 0 {
            return Err(HipError::INVALID_VALUE);
        }
        wait_event(event)
    })
}

/// `hipStreamCreateWithPriority`: a stream; priorities are accepted in
/// [`hipDeviceGetStreamPriorityRange`]'s range and have no effect (one worker a stream).
///
/// # Safety
/// `s` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithPriority(s: *mut *mut c_void, flags: c_uint, priority: c_int) -> c_int {
    if !(GREATEST_PRIORITY..=LEAST_PRIORITY).contains(&priority) {
        return call(|| Err(HipError::INVALID_VALUE));
    }
    // SAFETY: the caller's contract.
    unsafe { crate::streams::hipStreamCreateWithFlags(s, flags) }
}

/// The least (lowest) stream priority, as AMD's HIP reports it.
const LEAST_PRIORITY: c_int = 0;
/// The greatest (highest) stream priority, as AMD's HIP reports it.
const GREATEST_PRIORITY: c_int = -1;

/// `hipDeviceGetStreamPriorityRange`.
///
/// # Safety
/// The pointers must be null or writable (null ones are skipped, as HIP does).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) -> c_int {
    call(|| {
        if !least.is_null() {
            // SAFETY: non-null, and the caller's contract.
            unsafe { put(least, LEAST_PRIORITY) }?;
        }
        if !greatest.is_null() {
            // SAFETY: as above.
            unsafe { put(greatest, GREATEST_PRIORITY) }?;
        }
        Ok(())
    })
}

/// `hipEventElapsedTime`: the milliseconds between the moments the streams reached `start` and
/// `stop` (`hipErrorInvalidHandle` for one never recorded, `hipErrorNotReady` while either is
/// still to be reached).
///
/// # Safety
/// `ms` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventElapsedTime(ms: *mut f32, start: *mut c_void, stop: *mut c_void) -> c_int {
    call(|| {
        let elapsed = gpu().event_elapsed_ms(crate::event(start), crate::event(stop))?;
        // SAFETY: the caller's contract.
        unsafe { put(ms, elapsed) }
    })
}

/// `hipMemAttachGlobal` and `hipMemAttachHost`, the flags `hipMallocManaged` takes.
const ATTACH_FLAGS: [c_uint; 2] = [1, 2];

/// `hipMallocManaged`: memory the host and the device both reach: a device allocation
/// (zero-filled, on the current device) that, unlike `hipMalloc`'s, the host may touch;
/// `hipPointerGetAttributes` reports it as device memory.
///
/// # Safety
/// `ptr` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMallocManaged(ptr: *mut *mut c_void, size: usize, flags: c_uint) -> c_int {
    if !ATTACH_FLAGS.contains(&flags) {
        return call(|| Err(HipError::INVALID_VALUE));
    }
    // SAFETY: the caller's contract.
    call(|| unsafe { put_allocation(ptr, || gpu().malloc_managed(size).map(|addr| addr as *mut c_void)) })
}

/// `hipMemcpy2D`: as [`hipMemcpy2DAsync`] on the null stream, which copies at once.
///
/// # Safety
/// Host sides must be valid for every row.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpy2D(
    dst: *mut c_void,
    dpitch: usize,
    src: *const c_void,
    spitch: usize,
    width: usize,
    height: usize,
    kind: c_int,
) -> c_int {
    // SAFETY: the caller's contract; the null stream runs the copy before this returns.
    unsafe { hipMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, std::ptr::null_mut()) }
}

/// `hipMemcpy2DAsync`: `height` rows of `width` bytes, rows `dpitch` and `spitch` bytes apart
/// (`hipErrorInvalidPitchValue` where a pitch is narrower than a row), each row checked as
/// `hipMemcpy` checks it. Rows are copied in order on `s`.
///
/// # Safety
/// Host sides must be valid for every row until the stream has run the copy.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hipMemcpy2DAsync(
    dst: *mut c_void,
    dpitch: usize,
    src: *const c_void,
    spitch: usize,
    width: usize,
    height: usize,
    kind: c_int,
    s: *mut c_void,
) -> c_int {
    call(|| {
        let kind = copy_kind(kind)?;
        if width > dpitch || width > spitch {
            return Err(HipError(12)); // hipErrorInvalidPitchValue
        }
        for row in 0..height {
            let (d, from) = (dst as usize + row * dpitch, src as usize + row * spitch);
            // SAFETY: the caller's contract; device sides are checked by `hip_memcpy`.
            unsafe { gpu().hip_memcpy(d, from, width, kind, stream(s)) }?;
        }
        Ok(())
    })
}

/// What the mock says of `device`: an MI210-like part (gfx90a, 104 compute units, 64-wide
/// waves) with [`DEVICE_MEMORY`] and the PCI address `hipDeviceGetPCIBusId` gives.
fn properties(device: c_int) -> Result<DeviceProp, HipError> {
    let gpu = gpu();
    if !(0..gpu.device_count()?).contains(&device) {
        return Err(HipError::INVALID_DEVICE);
    }
    let text = |s: &str| {
        let mut out = [0 as c_char; 256];
        for (o, b) in out.iter_mut().zip(s.bytes().take(255)) {
            *o = b as c_char;
        }
        out
    };
    let pci = gpu.pci_address(device)?;
    Ok(DeviceProp {
        name: text("hipfile mock GPU"),
        total_global_mem: DEVICE_MEMORY,
        shared_mem_per_block: 64 << 10,
        regs_per_block: 65536,
        warp_size: 64,
        max_threads_per_block: 1024,
        max_threads_dim: [1024, 1024, 1024],
        max_grid_size: [c_int::MAX, 65536, 65536],
        clock_rate: 1_700_000,
        memory_clock_rate: 1_600_000,
        memory_bus_width: 4096,
        total_const_mem: 2 << 30,
        major: 9,
        minor: 0,
        multi_processor_count: 104,
        l2_cache_size: 8 << 20,
        max_threads_per_multi_processor: 2048,
        compute_mode: 0,
        clock_instruction_rate: 100_000,
        arch: 0,
        concurrent_kernels: 1,
        pci_domain_id: pci.domain,
        pci_bus_id: pci.bus,
        pci_device_id: pci.device,
        max_shared_memory_per_multi_processor: 64 << 10,
        is_multi_gpu_board: 0,
        can_map_host_memory: 1,
        gcn_arch: 910,
        gcn_arch_name: text("gfx90a:sramecc+:xnack-"),
        integrated: 0,
        cooperative_launch: 1,
        cooperative_multi_device_launch: 1,
        max_texture_1d_linear: c_int::MAX,
        max_texture_1d: 16384,
        max_texture_2d: [16384, 16384],
        max_texture_3d: [16384, 16384, 8192],
        hdp_mem_flush_cntl: std::ptr::null_mut(),
        hdp_reg_flush_cntl: std::ptr::null_mut(),
        mem_pitch: c_int::MAX as usize,
        texture_alignment: 256,
        texture_pitch_alignment: 256,
        kernel_exec_timeout_enabled: 0,
        ecc_enabled: 0,
        tcc_driver: 0,
        cooperative_multi_device_unmatched_func: 0,
        cooperative_multi_device_unmatched_grid_dim: 0,
        cooperative_multi_device_unmatched_block_dim: 0,
        cooperative_multi_device_unmatched_shared_mem: 0,
        is_large_bar: 1,
        asic_revision: 1,
        managed_memory: 1,
        direct_managed_mem_access_from_host: 0,
        concurrent_managed_access: 0,
        pageable_memory_access: 0,
        pageable_memory_access_uses_host_page_tables: 0,
    })
}

/// `hipGetDeviceProperties` (HIP 5.2's `hipDeviceProp_t`): an MI210-like device (gfx90a, 104
/// compute units, 64-wide waves) with [`DEVICE_MEMORY`] and its PCI address;
/// `hipErrorInvalidDevice` for a device that does not exist.
///
/// # Safety
/// `prop` must be null or point to a writable `hipDeviceProp_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceProperties(prop: *mut DeviceProp, device: c_int) -> c_int {
    call(|| {
        let props = properties(device)?;
        // SAFETY: the caller's contract.
        unsafe { put(prop, props) }
    })
}

/// `hipGetDevicePropertiesR0600`: the call HIP 6's headers make of `hipGetDeviceProperties`,
/// the same device in HIP 6's `hipDeviceProp_tR0600`.
///
/// # Safety
/// `prop` must be null or point to a writable `hipDeviceProp_tR0600`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevicePropertiesR0600(prop: *mut DevicePropR0600, device: c_int) -> c_int {
    call(|| {
        let props = DevicePropR0600::from(&properties(device)?);
        // SAFETY: the caller's contract.
        unsafe { put(prop, props) }
    })
}

/// `hipDeviceGetAttribute` (HIP 5.2's numbering): the attribute from the same properties
/// `hipGetDeviceProperties` gives; `hipErrorInvalidValue` for a null `value` or an attribute
/// the mock does not answer, `hipErrorInvalidDevice` for a device that does not exist.
///
/// # Safety
/// `value` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetAttribute(value: *mut c_int, attribute: c_int, device: c_int) -> c_int {
    call(|| {
        let props = properties(device)?;
        let v = props.attribute(attribute).ok_or(HipError::INVALID_VALUE)?;
        // SAFETY: the caller's contract.
        unsafe { put(value, v) }
    })
}
