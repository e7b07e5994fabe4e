//! Buffer objects as memory, resolved in one place (semantics §4): every entry of the module
//! that moves data takes the caller's object, and this finds its address, the bytes behind it
//! and what keeps them alive, before the request is checked against that extent. Python passes
//! objects, never addresses and extents.
//!
//! What is understood, in the order tried: the package's `DeviceBuffer`; host memory of the
//! common exact types (`bytes`, `bytearray`, `memoryview`, NumPy arrays) through the buffer
//! protocol; PyTorch's device tensors (their `data_ptr`, `nbytes` and `is_contiguous`: a slice
//! costs no CUDA array interface dict) and CuPy's arrays (the same, from their attributes);
//! device arrays seen lately; the CUDA array interface
//! (CuPy, Numba, PyTorch); DLPack, in device or host memory (a PyTorch CPU tensor); any other
//! buffer-protocol object.
//! Only contiguous memory is taken. The upstream-shaped API (`hipfile.file`) names memory by
//! an address and a length instead: [`upstream_memory`].

use std::collections::HashMap;
use std::sync::Mutex;

use hipfile::OpError;
use hipfile::boundary::sync::lock;
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyTuple, PyType, PyWeakrefReference};
use pyo3::{ffi, intern};

use crate::common::*;
use crate::memory::{device_extent_of, dlpack_abi};

/// Adds this file's calls (and classes) to the native module: a `#[pyfunction]` here is named here.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, register_buffer);
    Ok(())
}

/// `extent` bytes of memory from `addr`, and what holds them for as long as this value lives
/// (or, through [`Memory::keep`], as long as a request that outlives the call).
pub(crate) struct Memory<'py> {
    pub(crate) addr: usize,
    pub(crate) extent: usize,
    held: Held<'py>,
}

enum Held<'py> {
    /// An object whose memory lives while it does (device arrays, the package's buffers, a
    /// DLPack exporter with its capsule).
    Object(Bound<'py, PyAny>),
    /// A buffer-protocol export, released when dropped.
    Export(HostBuffer),
}

impl Memory<'_> {
    /// What keeps the memory for a request that outlives the call (a future, a stream-ordered
    /// operation): the object, or the export wrapped in an object that releases it when
    /// Python collects it.
    pub(crate) fn keep(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.held {
            Held::Object(object) => Ok(object.unbind()),
            Held::Export(export) => Ok(Py::new(py, Export { _held: export })?.into_any()),
        }
    }
}

/// A request from Python: `(buffer, size, file_offset, buf_offset)`, `size` `None` for the rest
/// of the buffer past `buf_offset`.
pub(crate) type Req<'py> = (Bound<'py, PyAny>, Option<i64>, i64, i64);

/// A request whose memory is resolved and whose size lies inside it.
pub(crate) struct Fitted<'py> {
    pub(crate) memory: Memory<'py>,
    pub(crate) size: usize,
    pub(crate) file_offset: i64,
    pub(crate) buf_offset: i64,
}

/// `req`'s memory (read into where not `write`; `upstream`: named as the upstream-shaped API
/// names it) and its size, checked to lie inside it ([`fitted`]).
pub(crate) fn fit<'py>(req: &Req<'py>, write: bool, upstream: bool) -> PyResult<Fitted<'py>> {
    let (buffer, size, file_offset, buf_offset) = req;
    let memory = resolve(buffer, !write, upstream, *size, *buf_offset)?;
    let size = fitted(memory.extent, *size, *buf_offset)?;
    Ok(Fitted { memory, size, file_offset: *file_offset, buf_offset: *buf_offset })
}

/// [`memory_of`], or [`upstream_memory`] for the upstream-shaped API.
fn resolve<'py>(
    buffer: &Bound<'py, PyAny>,
    writable: bool,
    upstream: bool,
    size: Option<i64>,
    buf_offset: i64,
) -> PyResult<Memory<'py>> {
    if upstream { upstream_memory(buffer, size, buf_offset) } else { memory_of(buffer, writable) }
}

/// The memory of `obj`; `writable`: the library will write into it (a read).
pub(crate) fn memory_of<'py>(obj: &Bound<'py, PyAny>, writable: bool) -> PyResult<Memory<'py>> {
    let py = obj.py();
    let ty = obj.get_type();
    if is_host_type(&ty) {
        return host(obj, writable);
    }
    if ty.is_subclass(device_buffer_type(py)?)? {
        let addr = obj.getattr(intern!(py, "_ptr"))?.extract()?;
        let extent = obj.getattr(intern!(py, "_size"))?.extract()?;
        return Ok(Memory { addr, extent, held: Held::Object(obj.clone()) });
    }
    if let Some(memory) = torch_tensor(obj, &ty)? {
        return Ok(memory);
    }
    if let Some(memory) = cupy_array(obj, &ty)? {
        return Ok(memory);
    }
    if let Some(memory) = seen(obj, writable) {
        return Ok(memory);
    }
    match obj.getattr(intern!(py, "__cuda_array_interface__")) {
        Ok(cai) => return Ok(remember(obj, from_cuda_array_interface(obj, &cai, writable)?, writable)),
        Err(e) if !e.is_instance_of::<PyAttributeError>(py) => return Err(e),
        Err(_) => {}
    }
    if obj.hasattr(intern!(py, "__dlpack__"))? && obj.hasattr(intern!(py, "__dlpack_device__"))? {
        let (device_type, _): (i64, i64) = obj.call_method0(intern!(py, "__dlpack_device__"))?.extract()?;
        if device_type == DLPACK_CPU {
            // Host memory (a PyTorch CPU tensor, JAX or TensorFlow on the host): moved as a
            // NumPy array's is; not remembered, since a host tensor may be resized in place.
            return from_dlpack(obj);
        }
        if DLPACK_DEVICE_TYPES.contains(&device_type) {
            return Ok(remember(obj, from_dlpack(obj)?, writable));
        }
        let name = type_name(obj)?;
        return Err(PyTypeError::new_err(format!(
            "hipfile cannot reach the memory of this {name}: its __dlpack_device__ is type {device_type}, and \
             hipfile moves host memory (1) and GPU memory (CUDA 2, 3, 13; ROCm 10, 11)"
        )));
    }
    host(obj, writable)
}

/// `obj`'s type as a user knows it: `module.Name` (`torch.Tensor`), or the name of a builtin.
fn type_name(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let ty = obj.get_type();
    let name = ty.qualname()?;
    match ty.module()?.extract::<String>() {
        Ok(module) if module != "builtins" => Ok(format!("{module}.{name}")),
        _ => Ok(name.to_string()),
    }
}

/// The memory an upstream-API buffer names: `ptr` and, for its `Buffer`, `_length` (a request
/// past the length is `hipFileInvalidValue`, as hipFile answers one past a registered buffer);
/// without a length, the rest of the device allocation the runtime reports. An address that
/// is not device memory (whose bounds no one can check) is `hipFileHipMemoryTypeInvalid`: the
/// library never writes past what it can bound.
pub(crate) fn upstream_memory<'py>(
    buffer: &Bound<'py, PyAny>,
    size: Option<i64>,
    buf_offset: i64,
) -> PyResult<Memory<'py>> {
    let py = buffer.py();
    let addr: usize = buffer.getattr(intern!(py, "ptr"))?.extract()?;
    let length = buffer.getattr_opt(intern!(py, "_length"))?.filter(|l| !l.is_instance_of::<pyo3::types::PyBool>());
    let extent = match length.map(|l| l.extract::<i64>()).transpose() {
        Ok(Some(length)) => {
            let size = size.unwrap_or(0);
            if size >= 0 && buf_offset >= 0 && size.saturating_add(buf_offset) > length {
                return Err(py_err(py, OpError::InvalidValue.into()));
            }
            length.max(0) as usize
        }
        Ok(None) | Err(_) => detached(py, || device_extent_of(addr))?,
    };
    Ok(Memory { addr, extent, held: Held::Object(buffer.clone()) })
}

/// DLPack's device memory types: CUDA, CUDA host, ROCm, ROCm host, CUDA managed.
const DLPACK_DEVICE_TYPES: [i64; 5] = [2, 3, 10, 11, 13];
/// DLPack's host memory (`kDLCPU`).
const DLPACK_CPU: i64 = 1;

/// A type of a module the package does not import, found once the caller has imported it.
struct ForeignType {
    module: &'static str,
    name: &'static str,
    found: PyOnceLock<Py<PyType>>,
}

impl ForeignType {
    const fn new(module: &'static str, name: &'static str) -> Self {
        ForeignType { module, name, found: PyOnceLock::new() }
    }

    /// The type, once its module is in `sys.modules`.
    fn get<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyType>> {
        if let Some(found) = self.found.get(py) {
            return Some(found.bind(py));
        }
        static MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
        let modules = MODULES.import(py, "sys", "modules").ok()?;
        let module = modules.get_item(self.module).ok()??;
        let ty = module.getattr(self.name).ok()?.cast_into::<PyType>().ok()?;
        Some(self.found.get_or_init(py, || ty.unbind()).bind(py))
    }
}

static NUMPY_ARRAY: ForeignType = ForeignType::new("numpy", "ndarray");
static TORCH_TENSOR: ForeignType = ForeignType::new("torch", "Tensor");
static CUPY_ARRAY: ForeignType = ForeignType::new("cupy", "ndarray");

fn is_host_type(ty: &Bound<'_, PyType>) -> bool {
    let py = ty.py();
    ty.is(py.get_type::<PyBytes>())
        || ty.is(py.get_type::<PyByteArray>())
        || ty.is(py.get_type::<PyMemoryView>())
        || NUMPY_ARRAY.get(py).is_some_and(|array| ty.is(array))
}

fn device_buffer_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static DEVICE_BUFFER: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    DEVICE_BUFFER.import(py, "hipfile._api", "DeviceBuffer")
}

/// A PyTorch tensor in device memory, without its CUDA array interface (a dict built on every
/// access). Host tensors, and tensors that require grad (whose interface PyTorch refuses with
/// its own error), take the general path.
fn torch_tensor<'py>(obj: &Bound<'py, PyAny>, ty: &Bound<'py, PyType>) -> PyResult<Option<Memory<'py>>> {
    let py = obj.py();
    let Some(tensor) = TORCH_TENSOR.get(py) else { return Ok(None) };
    if !ty.is_subclass(tensor)?
        || !obj.getattr(intern!(py, "is_cuda"))?.is_truthy()?
        || obj.getattr(intern!(py, "requires_grad"))?.is_truthy()?
    {
        return Ok(None);
    }
    if !obj.call_method0(intern!(py, "is_contiguous"))?.is_truthy()? {
        return Err(strided());
    }
    let addr = obj.call_method0(intern!(py, "data_ptr"))?.extract()?;
    let extent = obj.getattr(intern!(py, "nbytes"))?.extract()?;
    Ok(Some(Memory { addr, extent, held: Held::Object(obj.clone()) }))
}

/// A CuPy array, from what its CUDA array interface is made of (`data.ptr`, `nbytes`, and
/// `_c_contiguous`, a read-only attribute of CuPy's arrays) without building that dict: a slice
/// is a new array every time. An array without those attributes takes the general path.
fn cupy_array<'py>(obj: &Bound<'py, PyAny>, ty: &Bound<'py, PyType>) -> PyResult<Option<Memory<'py>>> {
    let py = obj.py();
    let Some(array) = CUPY_ARRAY.get(py) else { return Ok(None) };
    if !ty.is_subclass(array)? {
        return Ok(None);
    }
    let Some(contiguous) = obj.getattr_opt(intern!(py, "_c_contiguous"))? else { return Ok(None) };
    if !contiguous.is_truthy()? {
        return Err(strided());
    }
    let addr = obj.getattr(intern!(py, "data"))?.getattr(intern!(py, "ptr"))?.extract()?;
    let extent = obj.getattr(intern!(py, "nbytes"))?.extract()?;
    Ok(Some(Memory { addr, extent, held: Held::Object(obj.clone()) }))
}

fn strided() -> PyErr {
    PyValueError::new_err("hipfile needs contiguous memory (C order); this array is strided")
}

/// The bytes of a C-order array of `shape` and `itemsize`, or an error where `strides` (in
/// bytes; `None`: compact) leave gaps.
fn contiguous_bytes(shape: &[u64], strides: Option<&[i64]>, itemsize: u64) -> PyResult<usize> {
    let too_large = || PyValueError::new_err("the array's size overflows");
    let n = shape.iter().try_fold(itemsize, |n, &d| n.checked_mul(d)).ok_or_else(too_large)?;
    if let Some(strides) = strides.filter(|_| n != 0) {
        let mut expected = itemsize as i64;
        for (&dim, &stride) in shape.iter().zip(strides).rev() {
            if dim != 1 && stride != expected {
                return Err(strided());
            }
            expected = expected.saturating_mul(dim as i64);
        }
    }
    usize::try_from(n).map_err(|_| too_large())
}

fn from_cuda_array_interface<'py>(
    obj: &Bound<'py, PyAny>,
    cai: &Bound<'py, PyAny>,
    writable: bool,
) -> PyResult<Memory<'py>> {
    let py = obj.py();
    let (ptr, readonly): (Option<usize>, bool) = cai.get_item(intern!(py, "data"))?.extract()?;
    if writable && readonly {
        return Err(PyValueError::new_err("a read-only array cannot be read into"));
    }
    let typestr: String = cai.get_item(intern!(py, "typestr"))?.extract()?;
    let itemsize = typestr.get(2..).and_then(|s| s.parse().ok()).ok_or_else(|| {
        PyValueError::new_err(format!("__cuda_array_interface__ has a typestr hipfile cannot read: {typestr:?}"))
    })?;
    let shape: Vec<u64> = cai.get_item(intern!(py, "shape"))?.extract()?;
    let strides: Option<Vec<i64>> = match cai.cast::<PyDict>()?.get_item(intern!(py, "strides"))? {
        Some(s) if !s.is_none() => Some(s.extract()?),
        _ => None,
    };
    let extent = contiguous_bytes(&shape, strides.as_deref(), itemsize)?;
    Ok(Memory { addr: ptr.unwrap_or(0), extent, held: Held::Object(obj.clone()) })
}

fn from_dlpack<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Memory<'py>> {
    let py = obj.py();
    let capsule = obj.call_method0(intern!(py, "__dlpack__"))?;
    // SAFETY: a live object, with the GIL held; a capsule of any other name gives NULL and an
    // exception.
    let managed = unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), c"dltensor".as_ptr()) };
    if managed.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a "dltensor" capsule holds a `DLManagedTensor`, whose first member is the tensor;
    // it lives while the capsule does (never consumed here, it is deleted with the capsule).
    let tensor = unsafe { &*managed.cast::<dlpack_abi::Tensor>() };
    let ndim = usize::try_from(tensor.ndim).ok().filter(|&n| n <= 64);
    let ndim = ndim.ok_or_else(|| PyValueError::new_err("the DLPack tensor has a bad ndim"))?;
    let dims = |p: *mut i64| -> Vec<i64> {
        if p.is_null() || ndim == 0 {
            return Vec::new();
        }
        // SAFETY: DLPack's shape and strides hold `ndim` values each, alive with the tensor.
        unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec()
    };
    let shape: Vec<u64> = dims(tensor.shape).into_iter().map(|d| d.max(0) as u64).collect();
    let itemsize = (u64::from(tensor.dtype.bits) * u64::from(tensor.dtype.lanes)).div_ceil(8);
    // DLPack counts strides in elements (the CUDA array interface, in bytes).
    let strides = (!tensor.strides.is_null())
        .then(|| dims(tensor.strides).into_iter().map(|s| s.saturating_mul(itemsize as i64)).collect::<Vec<_>>());
    let extent = contiguous_bytes(&shape, strides.as_deref(), itemsize)?;
    let addr = (tensor.data as usize).wrapping_add(tensor.byte_offset as usize);
    // The capsule, kept with the object, keeps the tensor alive (its producer frees it when
    // the capsule goes, since it was never consumed).
    let held = PyTuple::new(py, [obj.clone(), capsule])?.into_any();
    Ok(Memory { addr, extent, held: Held::Object(held) })
}

fn host<'py>(obj: &Bound<'py, PyAny>, writable: bool) -> PyResult<Memory<'py>> {
    let py = obj.py();
    match HostBuffer::get(obj, writable) {
        Ok(export) => Ok(Memory { addr: export.addr(), extent: export.len(), held: Held::Export(export) }),
        Err(e) if e.is_instance_of::<PyBufferError>(py) => {
            let name = type_name(obj)?;
            Err(PyValueError::new_err(format!("hipfile cannot use this {name}: {}", e.value(py))))
        }
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            let name = type_name(obj)?;
            Err(PyTypeError::new_err(format!(
                "hipfile cannot use this {name} as memory: it has no __cuda_array_interface__, no __dlpack__ \
                 and no buffer protocol. Give a PyTorch tensor, a CuPy or NumPy array, bytes, bytearray or \
                 memoryview, a hipfile.DeviceBuffer, or any object with one of those three"
            )))
        }
        Err(e) => Err(e),
    }
}

/// A device array seen lately (CUDA array interface or DLPack exporters, whose memory never
/// moves while they live): asking CuPy or PyTorch for the interface again costs microseconds a
/// call. A hit is checked against the live object; the cache never keeps an array alive.
struct Seen {
    object: Py<PyWeakrefReference>,
    addr: usize,
    extent: usize,
    writable: bool,
}

/// Device arrays seen lately, by object address; at most [`SEEN_MAX`], forgotten all at once.
static SEEN: Mutex<Option<HashMap<usize, Seen>>> = Mutex::new(None);
const SEEN_MAX: usize = 64;

fn seen<'py>(obj: &Bound<'py, PyAny>, writable: bool) -> Option<Memory<'py>> {
    let seen = lock(&SEEN);
    let hit = seen.as_ref()?.get(&(obj.as_ptr() as usize))?;
    let alive = hit.object.bind(obj.py()).upgrade().is_some_and(|o| o.is(obj));
    (alive && (hit.writable || !writable)).then(|| Memory {
        addr: hit.addr,
        extent: hit.extent,
        held: Held::Object(obj.clone()),
    })
}

fn remember<'py>(obj: &Bound<'py, PyAny>, memory: Memory<'py>, writable: bool) -> Memory<'py> {
    let Ok(object) = PyWeakrefReference::new(obj) else { return memory };
    let mut seen = lock(&SEEN);
    let seen = seen.get_or_insert_with(HashMap::new);
    if seen.len() >= SEEN_MAX {
        seen.clear();
    }
    let entry = Seen { object: object.unbind(), addr: memory.addr, extent: memory.extent, writable };
    seen.insert(obj.as_ptr() as usize, entry);
    memory
}

/// CPython's buffer protocol, declared here: PyO3 leaves it out of the stable ABI before 3.11
/// (it joined the limited API then), but the calls and `Py_buffer`'s layout are the same in
/// every CPython 3 this package supports.
mod buffer_protocol {
    use std::ffi::{c_char, c_int, c_void};

    use pyo3::ffi::{Py_ssize_t, PyObject};

    #[repr(C)]
    pub(crate) struct PyBuffer {
        pub(crate) buf: *mut c_void,
        obj: *mut PyObject,
        pub(crate) len: Py_ssize_t,
        itemsize: Py_ssize_t,
        pub(crate) readonly: c_int,
        ndim: c_int,
        format: *mut c_char,
        shape: *mut Py_ssize_t,
        strides: *mut Py_ssize_t,
        suboffsets: *mut Py_ssize_t,
        internal: *mut c_void,
    }

    /// `PyBUF_WRITABLE`: a writable buffer, or an error.
    pub(crate) const WRITABLE: c_int = 1;

    unsafe extern "C" {
        pub(crate) fn PyObject_GetBuffer(obj: *mut PyObject, view: *mut PyBuffer, flags: c_int) -> c_int;
        pub(crate) fn PyBuffer_Release(view: *mut PyBuffer);
    }
}

/// A contiguous buffer-protocol export of an object, released when dropped (with the GIL held,
/// as CPython requires: it is dropped by the call that made it, or by Python collecting the
/// [`Export`] that holds it).
struct HostBuffer {
    view: buffer_protocol::PyBuffer,
}

// SAFETY: the view is plain data, read only for its address and length after it is made, and
// released only with the GIL held (see the type's docs), from whichever thread holds it.
unsafe impl Send for HostBuffer {}
// SAFETY: as above; nothing mutates the view through a shared reference.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// `obj`'s bytes (`PyBUF_SIMPLE`: contiguous), writable ones where `writable`.
    fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<HostBuffer> {
        let mut view = std::mem::MaybeUninit::<buffer_protocol::PyBuffer>::uninit();
        let flags = if writable { buffer_protocol::WRITABLE } else { 0 };
        // SAFETY: a live object, with the GIL held (`obj` is bound); `view` is written by a
        // successful call, which the check below requires before it is read.
        let rc = unsafe { buffer_protocol::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: initialised by the successful call above.
        Ok(HostBuffer { view: unsafe { view.assume_init() } })
    }

    fn addr(&self) -> usize {
        self.view.buf as usize
    }

    fn len(&self) -> usize {
        self.view.len as usize
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: the view of a successful `PyObject_GetBuffer`, released once, with the GIL
        // held (the type's docs).
        unsafe { buffer_protocol::PyBuffer_Release(&mut self.view) }
    }
}

/// A buffer-protocol export held by a request that outlives its call, released when Python
/// collects this object (with the GIL held).
#[pyclass(module = "hipfile._hipfile", frozen)]
struct Export {
    _held: HostBuffer,
}

/// The address of `buffer`'s memory, registered with the driver (`hipFileBufRegister`) for its
/// whole extent: the Pythonic API's `hipfile.register`.
#[pyfunction]
pub(crate) fn register_buffer(py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
    let memory = memory_of(buffer, false)?;
    let (addr, extent) = (memory.addr, memory.extent);
    detached(py, || driver().buf_register(addr, extent, 0))?;
    Ok(addr)
}
