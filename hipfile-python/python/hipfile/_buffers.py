"""Buffer objects as memory: an address, the bytes behind it, and what keeps it alive.

Whatever the user has: ``__cuda_array_interface__`` (CuPy, Numba, PyTorch CUDA tensors),
DLPack (``__dlpack__``/``__dlpack_device__``: PyTorch, JAX, CuPy), the package's
:class:`DeviceBuffer`, or the buffer protocol (NumPy, ``bytearray``, ``mmap``, ``bytes``) for
host memory. Only contiguous memory is taken; the extent found here is what the native module
checks every request against.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import NamedTuple


class Memory(NamedTuple):
    """An address, the bytes from it the object holds, and the object keeping them alive."""

    addr: int
    nbytes: int
    keep: object


_DLPACK_DEVICE = {2: "CUDA", 3: "CUDAHost", 10: "ROCM", 11: "ROCMHost", 13: "CUDAManaged"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _PyBuffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer.restype = ctypes.c_void_p
_PyBUF_WRITABLE = 0x0001


class _HostView:
    """A buffer-protocol export held for the duration of a call (released when collected)."""

    def __init__(self, obj: object, writable: bool) -> None:
        self._view = _PyBuffer()
        _get_buffer(obj, ctypes.byref(self._view), _PyBUF_WRITABLE if writable else 0)
        self._held = True

    def __del__(self) -> None:
        if getattr(self, "_held", False):
            _release_buffer(ctypes.byref(self._view))
            self._held = False


def _contiguous_bytes(shape, strides, itemsize: int) -> int:
    n = itemsize
    for dim in shape:
        n *= int(dim)
    if strides is None or n == 0:
        return n
    expected = itemsize
    for dim, stride in reversed(list(zip(shape, strides))):
        if int(dim) != 1 and int(stride) != expected:
            raise ValueError("hipfile needs contiguous memory (C order); this array is strided")
        expected *= int(dim)
    return n


def _from_cuda_array_interface(obj: object, cai: dict, writable: bool) -> Memory:
    ptr, readonly = cai["data"]
    if writable and readonly:
        raise ValueError("a read-only array cannot be read into")
    itemsize = int(cai["typestr"][2:])
    nbytes = _contiguous_bytes(cai["shape"], cai.get("strides"), itemsize)
    return Memory(int(ptr or 0), nbytes, obj)


def _from_dlpack(obj: object) -> Memory:
    capsule = obj.__dlpack__()
    tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    itemsize = (tensor.dtype.bits * tensor.dtype.lanes + 7) // 8
    # DLPack counts strides in elements (the CUDA array interface, in bytes).
    strides = None if not tensor.strides else [tensor.strides[i] * itemsize for i in range(tensor.ndim)]
    nbytes = _contiguous_bytes(shape, strides, itemsize)
    # The capsule, kept with the memory, keeps the tensor alive (its producer frees it when the
    # capsule goes, since it was never consumed).
    return Memory(int(tensor.data or 0) + tensor.byte_offset, nbytes, (obj, capsule))


_DeviceBuffer = None


def _numpy_array(obj: object, writable: bool) -> Memory:
    flags = obj.flags
    if not flags.c_contiguous:
        raise ValueError("hipfile needs contiguous memory (C order); this array is strided")
    if writable and not flags.writeable:
        raise ValueError("a read-only array cannot be read into")
    return Memory(obj.__array_interface__["data"][0], obj.nbytes, obj)


#: Buffer types seen before and how to read them, so a call pays for one dict lookup.
_FAST = {}


#: Device arrays seen lately (CUDA array interface or DLPack exporters, whose memory never moves
#: while they live): id -> (a weak reference, address, size, checked writable). Asking CuPy or
#: PyTorch for the interface again costs microseconds a call; a hit is checked against the live
#: object, and the cache never keeps an array (or its memory) alive.
_SEEN: dict = {}
_SEEN_MAX = 64


def _remember(obj: object, memory: Memory, writable: bool) -> Memory:
    try:
        ref = weakref.ref(obj)
    except TypeError:
        return memory
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    _SEEN[id(obj)] = (ref, memory.addr, memory.nbytes, writable)
    return memory


def memory_of(obj: object, writable: bool) -> Memory:
    """The memory of ``obj``; ``writable``: the library will write into it (a read)."""
    global _DeviceBuffer
    fast = _FAST.get(type(obj))
    if fast is not None:
        return fast(obj, writable)
    seen = _SEEN.get(id(obj))
    if seen is not None and seen[0]() is obj and (not writable or seen[3]):
        return Memory(seen[1], seen[2], obj)  # the object itself keeps its memory
    if _DeviceBuffer is None:
        from hipfile._api import DeviceBuffer as _DeviceBuffer
    if type(obj) is _DeviceBuffer:
        _FAST[_DeviceBuffer] = lambda o, _w: Memory(o._ptr, o._size, o)
        return _FAST[_DeviceBuffer](obj, writable)
    if type(obj).__module__ == "numpy" and type(obj).__name__ == "ndarray":
        _FAST[type(obj)] = _numpy_array
        return _numpy_array(obj, writable)
    if isinstance(obj, _DeviceBuffer):
        return Memory(obj.ptr, obj.nbytes, obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _remember(obj, _from_cuda_array_interface(obj, cai, writable), writable)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        device_type, _ = obj.__dlpack_device__()
        if int(device_type) in _DLPACK_DEVICE:
            return _remember(obj, _from_dlpack(obj), writable)
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(
            f"{type(obj).__name__} is not a buffer hipfile knows: give an object with "
            "__cuda_array_interface__ or __dlpack__, a hipfile.DeviceBuffer, or one with the buffer protocol"
        ) from None
    if not view.contiguous:
        raise ValueError("hipfile needs contiguous memory; this buffer is strided")
    if writable and view.readonly:
        raise ValueError(f"a read-only {type(obj).__name__} cannot be read into")
    held = _HostView(obj, writable)
    return Memory(int(held._view.buf or 0), view.nbytes, (obj, held))
