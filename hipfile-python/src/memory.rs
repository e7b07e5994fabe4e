//! Device memory the package allocates, frees, copies and hands to DLPack consumers; DLPack's
//! ABI, which [`crate::buffers`] reads too.

use std::collections::BTreeMap;
use std::sync::Mutex;

use hipfile::boundary::Vendor;
use hipfile::boundary::sync::lock;
use hipfile::{DeviceCopy, DeviceMemory, DeviceSpan, HipError, OpError};
use pyo3::prelude::*;

use crate::common::*;

/// Adds this file's calls (and classes) to the native module: a `#[pyfunction]` here is named here.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(
        m,
        device_alloc,
        device_free,
        device_extent,
        pointer_device,
        copy_to_device,
        copy_from_device,
        dlpack
    );
    Ok(())
}

/// The device memory the package allocated ([`device_alloc`]), by address, until Python lets go
/// of it ([`device_free`]).
pub(crate) static ALLOCATIONS: Mutex<BTreeMap<usize, DeviceMemory>> = Mutex::new(BTreeMap::new());

/// Allocates `size` bytes of device memory on `device` with the runtime the module uses.
#[pyfunction]
#[pyo3(signature = (size, device = 0))]
pub(crate) fn device_alloc(py: Python<'_>, size: usize, device: i32) -> PyResult<usize> {
    detached(py, || {
        let memory = DeviceMemory::alloc(gpu(), device, size)?;
        let addr = memory.addr();
        lock(&ALLOCATIONS).insert(addr, memory);
        Ok(addr)
    })
}

/// Frees memory of [`device_alloc`] (the package's `DeviceBuffer` when it is collected, and
/// upstream's `hipFree`); any other address is `hipErrorInvalidValue`, as the runtime's free
/// answers for memory it did not allocate, and frees nothing.
#[pyfunction]
pub(crate) fn device_free(py: Python<'_>, addr: usize) -> PyResult<()> {
    let memory = lock(&ALLOCATIONS).remove(&addr);
    detached(py, || match memory {
        Some(memory) => {
            drop(memory);
            Ok(())
        }
        None => Err(HipError::INVALID_VALUE.into()),
    })
}

/// The bytes from `addr` to the end of its device allocation, per the runtime: the extent of a
/// buffer named by its address alone (upstream's API with an object that has no length).
/// Memory the runtime does not know as device (or managed) memory has no bounds the library
/// could check, and is refused: `hipFileHipMemoryTypeInvalid`.
#[pyfunction]
pub(crate) fn device_extent(py: Python<'_>, addr: usize) -> PyResult<usize> {
    detached(py, || device_extent_of(addr))
}

/// [`device_extent`] without the GIL's release.
pub(crate) fn device_extent_of(addr: usize) -> hipfile::Result<usize> {
    let info = gpu().pointer_info(addr)?;
    match info.memory_type {
        hipfile::MemoryType::Device | hipfile::MemoryType::Managed if addr != 0 => Ok(info.bytes_after(addr)),
        _ => Err(OpError::HipMemoryTypeInvalid.into()),
    }
}

/// The device that owns `addr`, per the runtime.
#[pyfunction]
pub(crate) fn pointer_device(py: Python<'_>, addr: usize) -> PyResult<i32> {
    detached(py, || Ok(gpu().pointer_info(addr)?.device))
}

/// Copies `data` to device memory at `addr + offset` of an allocation of `extent` bytes.
#[pyfunction]
pub(crate) fn copy_to_device(py: Python<'_>, addr: usize, extent: usize, offset: i64, data: Vec<u8>) -> PyResult<()> {
    check_extent(extent, data.len(), offset)?;
    // SAFETY: inside the allocation (checked above).
    let span = unsafe { DeviceSpan::new(addr + offset as usize, data.len()) };
    detached(py, move || Ok(gpu().copy_to_device(span, &data)?))
}

/// `size` bytes of device memory at `addr + offset` of an allocation of `extent` bytes.
#[pyfunction]
pub(crate) fn copy_from_device(
    py: Python<'_>,
    addr: usize,
    extent: usize,
    offset: i64,
    size: usize,
) -> PyResult<Vec<u8>> {
    check_extent(extent, size, offset)?;
    // SAFETY: inside the allocation (checked above).
    let span = unsafe { DeviceSpan::new(addr + offset as usize, size) };
    detached(py, move || {
        let mut out = vec![0u8; size];
        gpu().copy_from_device(&mut out, span)?;
        Ok(out)
    })
}

/// DLPack's ABI (dlpack.h, version 0.8's `DLManagedTensor`, which every consumer takes), for
/// exporting device memory of the package's `DeviceBuffer`.
pub(crate) mod dlpack_abi {
    use std::ffi::{c_char, c_void};

    use pyo3::ffi;
    use pyo3::prelude::*;

    #[repr(C)]
    pub(crate) struct Device {
        pub(crate) device_type: i32,
        pub(crate) device_id: i32,
    }

    #[repr(C)]
    pub(crate) struct DataType {
        pub(crate) code: u8,
        pub(crate) bits: u8,
        pub(crate) lanes: u16,
    }

    /// `DLTensor`: what a `"dltensor"` capsule's `DLManagedTensor` starts with.
    #[repr(C)]
    pub(crate) struct Tensor {
        pub(crate) data: *mut c_void,
        pub(crate) device: Device,
        pub(crate) ndim: i32,
        pub(crate) dtype: DataType,
        pub(crate) shape: *mut i64,
        pub(crate) strides: *mut i64,
        pub(crate) byte_offset: u64,
    }

    #[repr(C)]
    struct Managed {
        tensor: Tensor,
        manager_ctx: *mut c_void,
        deleter: Option<unsafe extern "C" fn(*mut Managed)>,
    }

    /// What a managed tensor owns: its shape, and the object whose memory it shows.
    struct Context {
        shape: [i64; 1],
        _owner: Py<PyAny>,
    }

    const NAME: &std::ffi::CStr = c"dltensor";

    /// The tensor's deleter: frees it and lets go of its owner.
    unsafe extern "C" fn delete(managed: *mut Managed) {
        if managed.is_null() {
            return;
        }
        // SAFETY: `managed` was made by `Box::into_raw` in `capsule`, and DLPack calls the
        // deleter once.
        let managed = unsafe { Box::from_raw(managed) };
        // SAFETY: `manager_ctx` was made by `Box::into_raw` in `capsule`, owned by this tensor.
        let context = unsafe { Box::from_raw(managed.manager_ctx.cast::<Context>()) };
        // Without taking the GIL (a consumer may delete from a thread that another, holding the
        // GIL, waits for): PyO3 queues the owner's reference when the GIL is not held.
        drop(context);
    }

    /// The capsule's destructor: a capsule never consumed (still named "dltensor") deletes its
    /// tensor; a consumer renames it and deletes the tensor itself.
    unsafe extern "C" fn destruct(capsule: *mut ffi::PyObject) {
        // SAFETY: called by CPython on a live capsule, with the GIL held.
        if unsafe { ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) } == 1 {
            // SAFETY: as above; the name matches, so the pointer is our `Managed`.
            let managed = unsafe { ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()) }.cast::<Managed>();
            // SAFETY: never consumed, so never deleted: deleted here, once.
            unsafe { delete(managed) };
        }
    }

    /// A DLPack capsule of `size` bytes (a 1-D `uint8` tensor) at `addr` on
    /// (`device_type`, `device_id`), keeping `owner` alive until the tensor is deleted.
    pub(crate) fn capsule(
        py: Python<'_>,
        addr: usize,
        size: usize,
        device_type: i32,
        device_id: i32,
        owner: Py<PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let context = Box::into_raw(Box::new(Context { shape: [size as i64], _owner: owner }));
        let managed = Box::into_raw(Box::new(Managed {
            tensor: Tensor {
                data: addr as *mut c_void,
                device: Device { device_type, device_id },
                ndim: 1,
                dtype: DataType { code: 1, bits: 8, lanes: 1 }, // kDLUInt, 8 bits
                // SAFETY: `context` is a live allocation, freed only with this tensor.
                shape: unsafe { (*context).shape.as_mut_ptr() },
                strides: std::ptr::null_mut(), // compact, row-major
                byte_offset: 0,
            },
            manager_ctx: context.cast(),
            deleter: Some(delete),
        }));
        // SAFETY: a valid pointer, a static name and a destructor that matches the name.
        let capsule = unsafe { ffi::PyCapsule_New(managed.cast(), NAME.as_ptr() as *const c_char, Some(destruct)) };
        if capsule.is_null() {
            // SAFETY: the capsule was not made, so nothing else owns the tensor.
            unsafe { delete(managed) };
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new reference just returned by CPython.
        Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
    }
}

/// A DLPack capsule (`uint8`, 1-D) of `size` bytes of device memory at `addr` on device
/// `device`, keeping `owner` alive until the consumer deletes it. The device type is the
/// runtime's: CUDA (2) or ROCm (10).
#[pyfunction]
pub(crate) fn dlpack(py: Python<'_>, addr: usize, size: usize, device: i32, owner: Py<PyAny>) -> PyResult<Py<PyAny>> {
    let platform = driver().platform();
    if platform.is_mock() {
        return Err(pyo3::exceptions::PyBufferError::new_err("the mock GPU's memory is host memory: no DLPack export"));
    }
    let device_type = if platform.vendor() == Some(Vendor::Cuda) { 2 } else { 10 };
    dlpack_abi::capsule(py, addr, size, device_type, device, owner)
}
