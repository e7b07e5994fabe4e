"""The Pythonic API: hipfile.open with every kind of buffer, futures, batches, stream-ordered
calls, errors, threads."""

import asyncio
import ctypes
import errno
import mmap
import os
import threading
import time

import numpy as np
import pytest

import hipfile
from conftest import device_bytes


class CudaArray:
    """A minimal ``__cuda_array_interface__`` exporter over device memory (what CuPy, Numba and
    PyTorch give)."""

    def __init__(self, buf, shape, typestr="|u1", strides=None, readonly=False):
        self._buf = buf
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (buf.ptr, readonly), "version": 3, "strides": strides,
        }


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackArray:
    """A DLPack exporter of device memory (device type CUDA), as PyTorch, JAX and CuPy are."""

    def __init__(self, buf, count, itemsize=4, strides=None):
        self._buf = buf
        self._shape = (ctypes.c_int64 * 1)(count)
        self._strides = None if strides is None else (ctypes.c_int64 * 1)(*strides)
        self._managed = _DLManagedTensor()
        t = self._managed.dl_tensor
        t.data, t.device, t.ndim = buf.ptr, _DLDevice(2, 0), 1
        t.dtype = _DLDataType(1, itemsize * 8, 1)
        t.shape = self._shape
        if self._strides is not None:
            t.strides = self._strides  # in elements, as DLPack counts them
        t.byte_offset = 0

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.argtypes, new.restype = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p], ctypes.py_object
        return new(ctypes.addressof(self._managed), b"dltensor", None)


def test_read_into_every_kind_of_buffer(data_file, data, scratch):
    n = len(data)
    dev = hipfile.DeviceBuffer(n)
    with hipfile.open(data_file) as f:
        assert f.read(dev) == n
        assert dev.to_bytes() == data.tobytes()
        for host in [np.zeros(n, np.uint8), bytearray(n), memoryview(bytearray(n)), np.zeros(n // 4, np.float32)]:
            assert f.read(host) == n
            assert bytes(memoryview(host).cast("B")) == data.tobytes()
        with mmap.mmap(-1, n) as m:
            assert f.read(m) == n
            assert m[:] == data.tobytes()
        cai = CudaArray(hipfile.DeviceBuffer(n), (n // 2,), "<u2")
        assert f.read(cai) == n
        assert cai._buf.to_bytes() == data.tobytes()
        dl = DLPackArray(hipfile.DeviceBuffer(n), n // 4)
        assert f.read(dl) == n
        assert dl._buf.to_bytes() == data.tobytes()
        strided = DLPackArray(hipfile.DeviceBuffer(n), n // 4, strides=[1])  # contiguous, strides given
        assert f.read(strided) == n
        with pytest.raises(ValueError):
            f.read(DLPackArray(hipfile.DeviceBuffer(n), n // 8, strides=[2]))


def test_write_from_every_kind_of_buffer(data, scratch):
    n = len(data)
    dev = hipfile.DeviceBuffer(n)
    dev.copy_from(data)
    for i, src in enumerate([dev, data, data.tobytes(), bytearray(data.tobytes()), CudaArray(dev, (n,), readonly=True)]):
        path = scratch / f"out{i}.bin"
        with hipfile.open(path, "w") as f:
            assert f.write(src) == n
        assert path.read_bytes() == data.tobytes(), type(src)


def test_sizes_and_offsets(data_file, data):
    dev = hipfile.DeviceBuffer(8192)
    with hipfile.open(data_file) as f:
        assert f.read(dev, 4096, file_offset=100, buf_offset=4096) == 4096
        assert dev.to_bytes(4096, 4096) == data[100:4196].tobytes()
        size = f.size()
        assert f.read(dev, 8192, file_offset=size - 10) == 10  # end of file
        assert f.read(dev, 8192, file_offset=size + 10) == 0


def test_a_buffer_too_small_is_refused_before_any_io(data_file):
    host = np.full(4096 + 64, 0xAB, np.uint8)
    view = host[:4096]
    with hipfile.open(data_file) as f:
        for size, offset in [(4097, 0), (4096, 1), (1, 4096), (1 << 40, 0)]:
            with pytest.raises(ValueError):
                f.read(view, size, buf_offset=offset)
            with pytest.raises(ValueError):
                f.pread(view, size, buf_offset=offset)
            with pytest.raises(ValueError):
                f.read_batch([(view, size, 0, offset)])
        for size, offset in [(-1, 0), (None, -1)]:
            with pytest.raises(ValueError):
                f.read(view, size, buf_offset=offset)
            with pytest.raises(ValueError):
                f.pread(view, size, buf_offset=offset)
    assert (host == 0xAB).all(), "nothing was written"


def test_buffers_that_cannot_be_used(data_file):
    with hipfile.open(data_file) as f:
        with pytest.raises(ValueError):
            f.read(np.zeros(8192, np.uint8)[::2])  # strided
        ro = np.zeros(4096, np.uint8)
        ro.flags.writeable = False
        with pytest.raises(ValueError):
            f.read(ro)
        with pytest.raises(ValueError):
            f.read(b"immutable")
        with pytest.raises(TypeError):
            f.read(object())
        with pytest.raises(ValueError):
            f.read(CudaArray(hipfile.DeviceBuffer(64), (64,), readonly=True))


class HostDLPack:
    """A DLPack exporter other than NumPy (as a PyTorch CPU tensor is): NumPy's own capsule,
    behind an object the package does not know by type; `device` overrides where it says the
    memory is."""

    def __init__(self, array, device=None):
        self.array, self.device = array, device

    def __dlpack__(self, **kw):
        return self.array.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.device or self.array.__dlpack_device__()


def test_host_memory_by_dlpack_and_what_an_unknown_object_is_told(data_file, data, scratch):
    """Host memory exported by DLPack (a PyTorch CPU tensor's way) is read into and written from
    as a NumPy array is; memory DLPack places where hipfile cannot reach, and an object with no
    memory at all, get a TypeError naming the object and what would work."""
    host = np.zeros(8192, np.uint8)
    with hipfile.open(data_file) as f:
        assert f.read(HostDLPack(host), file_offset=4096) == 8192
    assert host.tobytes() == data[4096 : 4096 + 8192].tobytes()
    out = os.path.join(scratch, "dlpack.out")
    with hipfile.open(out, "w") as f:
        assert f.write(HostDLPack(host)) == 8192
    assert open(out, "rb").read() == data[4096 : 4096 + 8192].tobytes()
    with hipfile.open(data_file) as f:
        with pytest.raises(TypeError, match=r"test_pythonic.HostDLPack: its __dlpack_device__ is type 4"):
            f.read(HostDLPack(host, device=(4, 0)))
        with pytest.raises(TypeError, match=r"cannot use this object as memory.*PyTorch tensor, a CuPy or NumPy array"):
            f.read(object())


def test_errors_and_codes(data_file, scratch):
    with pytest.raises(FileNotFoundError):
        hipfile.open(scratch / "missing")
    with pytest.raises(ValueError):
        hipfile.open(data_file, "q")
    with hipfile.open(data_file) as f:
        with pytest.raises(OSError) as info:
            f.write(bytearray(16))  # opened read-only
        assert info.value.errno == errno.EBADF
        with pytest.raises(OSError) as info:
            f.read(bytearray(16), file_offset=-1)
        assert info.value.errno == errno.EINVAL
    with pytest.raises(hipfile.HipFileException) as info:
        hipfile._hipfile.transfer(False, 12345, (hipfile.DeviceBuffer(16), 16, 0, 0))
    assert info.value.hipfile_err in (hipfile.OpError.HANDLE_NOT_REGISTERED, hipfile.OpError.DRIVER_NOT_INITIALIZED)


def test_a_closed_file(data_file):
    f = hipfile.open(data_file)
    f.close()
    f.close()
    assert f.closed
    with pytest.raises(ValueError):
        f.read(bytearray(16))
    with pytest.raises(ValueError):
        f.pread(bytearray(16))


def test_futures_and_asyncio(data_file, data):
    dev = hipfile.DeviceBuffer(len(data))
    with hipfile.open(data_file) as f:
        futures = [f.pread(dev, 65536, i * 65536, i * 65536) for i in range(16)]
        assert all(isinstance(fu, hipfile.Future) for fu in futures)
        assert [fu.get() for fu in futures] == [65536] * 16
        assert all(fu.done() for fu in futures)
        assert repr(futures[0]) == "<hipfile.Future done>"
        assert dev.to_bytes() == data.tobytes()
        dev.copy_from(bytes(4096))
        assert f.pread(dev, None, 0, len(data) - 4096).get() == 4096, "no size: the rest of the buffer"
        assert dev.to_bytes(4096, len(data) - 4096) == data[:4096].tobytes()

        async def both():
            return await asyncio.gather(f.pread(dev, 4096), f.pread(dev, 4096, 4096, 4096))

        assert asyncio.run(both()) == [4096, 4096]
        with pytest.raises(OSError):
            f.pwrite(dev, 16).get()  # read-only file: the error comes out of get()


def _counter(name):
    return hipfile.stats()["counters"][name]


def test_a_burst_of_futures_runs_as_one_batch(data_file, data):
    dev = hipfile.DeviceBuffer(64 * 4096)
    with hipfile.open(data_file) as f:
        rounds = []
        for _ in range(5):  # a pause of the interpreter longer than the gap cuts a burst
            dev.copy_from(bytes(64 * 4096))
            before = _counter("BatchSubmitOk")
            futures = [f.pread(dev, 4096, i * 4096, i * 4096) for i in range(64)]
            assert [fu.get() for fu in futures] == [4096] * 64
            assert dev.to_bytes() == data[: 64 * 4096].tobytes()
            rounds.append(_counter("BatchSubmitOk") - before)
        # Started at the first request, a burst would be a batch of one and then the rest.
        assert min(rounds) == 1, rounds


def test_a_future_nobody_waits_for_still_runs(data_file):
    dev = hipfile.DeviceBuffer(4096)
    with hipfile.open(data_file) as f:
        before = _counter("BatchCompleteOk")
        future = f.pread(dev, 4096)
        deadline = time.monotonic() + 10
        while _counter("BatchCompleteOk") == before and time.monotonic() < deadline:
            time.sleep(0.001)  # neither get() nor done(): the request starts on its own
        assert _counter("BatchCompleteOk") == before + 1
        assert future.get() == 4096


def test_batches(data_file, data, scratch):
    dev = hipfile.DeviceBuffer(1 << 20)
    host = np.zeros(1 << 20, np.uint8)
    with hipfile.open(data_file) as f:
        entries = [(dev if i % 2 else host, 4096, i * 4096, i * 4096) for i in range(200)]  # > 128: split
        assert f.read_batch(entries) == [4096] * 200
        for i in range(200):
            got = dev.to_bytes(4096, i * 4096) if i % 2 else host[i * 4096 : (i + 1) * 4096].tobytes()
            assert got == data[i * 4096 : (i + 1) * 4096].tobytes()
        with pytest.raises(OSError):
            f.read_batch([(dev, 16, 0, 0), (dev, 16, -1, 0)])
    out = scratch / "batch.bin"
    with hipfile.open(out, "w") as g:
        assert g.write_batch([(data, 4096, i * 4096, i * 4096) for i in range(4)]) == [4096] * 4
    assert out.read_bytes() == data[: 4 * 4096].tobytes()


def test_stream_ordered_calls(data_file, data):
    stream = hipfile._hipfile.stream_create()
    try:
        dev = hipfile.DeviceBuffer(65536)
        with hipfile.open(data_file) as f:
            op = f.read_async(dev, 65536, file_offset=8192, stream=stream)
            hipfile._hipfile.stream_synchronize(stream)
            assert op.done() and op.result == 65536
            assert dev.to_bytes() == data[8192 : 8192 + 65536].tobytes()
            with pytest.raises(ValueError):
                f.read_async(dev, 65537, stream=stream)
    finally:
        hipfile._hipfile.stream_destroy(stream)


def test_sixteen_threads_read_one_file(data_file, data):
    n = len(data) // 16
    results = [None] * 16

    def reader(i, f):
        buf = hipfile.DeviceBuffer(n)
        for _ in range(8):
            assert f.read(buf, n, i * n) == n
        results[i] = buf.to_bytes()

    with hipfile.open(data_file) as f:
        threads = [threading.Thread(target=reader, args=(i, f)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert b"".join(results) == data.tobytes()


def test_statistics_parameters_and_reports(data_file):
    before = hipfile.stats()["read"]["ok"]
    with hipfile.open(data_file) as f:
        f.read(hipfile.DeviceBuffer(4096), 4096)
        assert f.p2p_verdict() is not None
        with pytest.raises(hipfile.HipFileException) as info:
            hipfile.set_parameter("ProfileStats", 3)
        assert info.value.hipfile_err == hipfile.OpError.DRIVER_ALREADY_OPEN
    s = hipfile.stats()
    assert s["read"]["ok"] >= before + 1
    assert {"p2p", "bounce", "host", "size_classes"} <= set(s["read"])
    assert "BatchEntries" in s["counters"]
    names = dict(hipfile.parameter_names())
    assert names["AllowSystemMemory"] == "bool" and names["ProfileStats"] == "size"
    assert isinstance(hipfile.get_parameter("ProfileStats"), int)
    with pytest.raises(ValueError):
        hipfile.get_parameter("NoSuchParameter")
    caps = hipfile.capabilities()
    assert any(c["available"] for c in caps)
    bounce = next(c for c in caps if c["backend"] == "bounce")
    assert any(n.startswith("reads' tails ") for n in bounce["notes"]), bounce
    assert hipfile.driver_properties()["max_batch_io_count"] == 128


def test_the_mock_gpus_memory_is_not_exported_as_device_memory():
    if not hipfile.runtime()["mock"]:
        pytest.skip("a real GPU exports its memory")
    buf = hipfile.DeviceBuffer(64)
    assert not hasattr(buf, "__cuda_array_interface__")
    with pytest.raises(BufferError):
        buf.__dlpack__()
    with pytest.raises(BufferError):
        buf.__dlpack_device__()


def test_every_public_name_is_documented_and_typed():
    import pathlib

    # Typed: tests/test_stubs.py holds __init__.pyi (with _api.py's annotations) to __all__.
    for name in hipfile.__all__:
        obj = getattr(hipfile, name)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
    assert (pathlib.Path(hipfile.__file__).parent / "py.typed").exists()


def test_a_buffer_lives_until_its_request_ends(data_file, data):
    import gc

    with hipfile.open(data_file) as f:
        futures = [f.pread(np.zeros(65536, np.uint8), 65536, i * 65536) for i in range(8)]
        gc.collect()  # the arrays are referenced only by the requests now
        assert [x.get() for x in futures] == [65536] * 8
        del futures
        fut = f.pread(bytearray(4096), 4096)
        del fut  # dropped before it ends: the request still holds its buffer
        gc.collect()
        stream = hipfile._hipfile.stream_create()
        try:
            op = f.read_async(hipfile.DeviceBuffer(4096), 4096, stream=stream)
            gc.collect()
            hipfile._hipfile.stream_synchronize(stream)
            assert op.result == 4096
        finally:
            hipfile._hipfile.stream_destroy(stream)


def test_registration_is_optional_and_scoped(data_file, data):
    dev = hipfile.DeviceBuffer(1 << 20)
    with hipfile.register(dev):
        with pytest.raises(hipfile.HipFileException) as info:
            hipfile.register(dev)
        assert info.value.hipfile_err == hipfile.OpError.MEMORY_ALREADY_REGISTERED
        with hipfile.open(data_file) as f:
            assert f.read(dev) == len(data)
            assert f.read_batch([(dev, 4096, 0, 4096)]) == [4096]
            assert f.read(hipfile.DeviceBuffer(16), 16) == 16  # unregistered buffers still work
    assert dev.to_bytes(4096) == data[:4096].tobytes()
    r = hipfile.register(dev)  # registered again after the block ended
    r.close()


def test_remembered_arrays_are_not_kept_alive(data_file):
    import gc
    import weakref

    with hipfile.open(data_file) as f:
        arr = CudaArray(hipfile.DeviceBuffer(4096), (4096,))
        assert f.read(arr, 4096) == 4096
        assert f.read(arr, 4096) == 4096  # remembered
        gone = weakref.ref(arr)
        del arr
        gc.collect()
        assert gone() is None
        ro = CudaArray(hipfile.DeviceBuffer(4096), (4096,), readonly=True)
        assert f.write is not None
        with pytest.raises(ValueError):
            f.read(ro, 16)  # remembered or not, a read-only array is never read into


FAKE_TORCH = r'''
import sys, types

class Tensor:
    """What the package reads of a PyTorch device tensor, over a DeviceBuffer."""
    def __init__(self, buf, start, stop, step=1, requires_grad=False, is_cuda=True):
        self._buf, self._start, self._stop, self._step = buf, start, stop, step
        self.requires_grad, self.is_cuda = requires_grad, is_cuda
    def __getitem__(self, s):
        return Tensor(self._buf, self._start + s.start, self._start + s.stop, s.step or 1)
    def is_contiguous(self):
        return self._step == 1
    def data_ptr(self):
        return self._buf.ptr + self._start
    @property
    def nbytes(self):
        return len(range(self._start, self._stop, self._step))
    @property
    def __cuda_array_interface__(self):  # PyTorch's refusals; the test never reaches a dict
        if not self.is_cuda:
            raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor type")
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")

sys.modules["torch"] = types.SimpleNamespace(Tensor=Tensor)
Array = Tensor
others = {"requires grad": lambda buf: Tensor(buf, 0, 16, requires_grad=True),
          "host": lambda buf: Tensor(buf, 0, 16, is_cuda=False)}
'''

FAKE_CUPY = r'''
import sys, types

class MemoryPointer:
    def __init__(self, ptr):
        self.ptr = ptr

class ndarray:
    """What the package reads of a CuPy array, over a DeviceBuffer (its CUDA array interface
    says it was asked for)."""
    def __init__(self, buf, start, stop, step=1):
        self._buf, self._start, self._step = buf, start, step
        self.data, self._c_contiguous = MemoryPointer(buf.ptr + start), step == 1
        self.nbytes = len(range(start, stop, step))
    def __getitem__(self, s):
        return ndarray(self._buf, self._start + s.start, self._start + s.stop, s.step or 1)
    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("the array interface was asked for")

class Unknown(ndarray):
    """A CuPy array without the attributes the fast path reads: the general path."""
    def __init__(self, *args):
        super().__init__(*args)
        del self._c_contiguous

sys.modules["cupy"] = types.SimpleNamespace(ndarray=ndarray)
Array = ndarray
others = {"another cupy": lambda buf: Unknown(buf, 0, 16)}
'''

READS = r'''
import hipfile
path = sys.argv[1]
data = open(path, "rb").read()
buf = hipfile.DeviceBuffer(1 << 16)
t = Array(buf, 0, 1 << 16)
out = {}
with hipfile.open(path) as f:
    out["slice"] = f.read(t[4096:8192], file_offset=100)
    out["slice bytes"] = buf.to_bytes(4096, 4096) == data[100:4196]
    out["pread slice"] = f.pread(t[8192:12288], None, 0).get()
    out["pread bytes"] = buf.to_bytes(4096, 8192) == data[:4096]
    bad = {"past the slice": lambda: f.read(t[0:4096], 4097), "strided": lambda: f.read(t[0:4096:2])}
    bad.update((name, lambda make=make: f.read(make(buf))) for name, make in others.items())
    for name, call in bad.items():
        try:
            call()
            out[name] = "served"
        except Exception as e:
            out[name] = type(e).__name__
print(out)
'''


def reads_through(fake: str, data_file) -> dict:
    """What READS found, run in a fresh interpreter with `fake` standing in for a framework."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", fake + READS, str(data_file)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout)


def test_pytorch_tensors_and_their_slices_without_the_array_interface(data_file):
    """A PyTorch device tensor is read by its data_ptr and nbytes (a slice costs no CUDA array
    interface dict), bounded by the slice; strided ones are refused; ones that require grad
    and host ones take the general path (PyTorch's own error, and no buffer: TypeError)."""
    assert reads_through(FAKE_TORCH, data_file) == {
        "slice": 4096, "slice bytes": True, "pread slice": 4096, "pread bytes": True,
        "past the slice": "ValueError", "strided": "ValueError", "requires grad": "RuntimeError", "host": "TypeError",
    }


def test_cupy_arrays_and_their_slices_without_the_array_interface(data_file):
    """A CuPy array is read by its data pointer, nbytes and contiguity (a slice costs no CUDA
    array interface dict), bounded by the slice; strided ones are refused; one without those
    attributes takes the general path (here, an interface that raises)."""
    assert reads_through(FAKE_CUPY, data_file) == {
        "slice": 4096, "slice bytes": True, "pread slice": 4096, "pread bytes": True,
        "past the slice": "ValueError", "strided": "ValueError", "another cupy": "RuntimeError",
    }


def test_the_mock_gpus_ais_switches_reach_python(data_file, data):
    """``HIPFILE_MOCK_AIS=absent`` leaves the mock GPU without its p2p path, and
    ``HIPFILE_MOCK_AIS_STATUS=19`` makes every p2p request find no path (bounce serves it, the
    statistics count it): in Python as in a C program over the mock HIP runtime."""
    import json
    import subprocess
    import sys

    script = """
import json, sys, numpy as np, hipfile
caps = {c["backend"]: (c["available"], c["why_not"]) for c in hipfile.capabilities()}
buf = hipfile.DeviceBuffer(1 << 20)
with hipfile.open(sys.argv[1]) as f:
    verdict = f.p2p_verdict()
    n = f.read(buf)
print(json.dumps({"caps": caps, "verdict": verdict, "n": n, "same": buf.to_bytes() == open(sys.argv[1], "rb").read(),
                  "no_path": hipfile.stats()["counters"]["BouncedNoPath"]}))
"""

    def run(**env):
        full = {k: v for k, v in os.environ.items() if not k.startswith("HIPFILE_")}
        out = subprocess.run([sys.executable, "-c", script, str(data_file)], env={**full, **env},
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    plain = run()
    assert plain["caps"]["mock-p2p"][0] and plain["verdict"] == {"mock-p2p": None}
    assert plain["same"] and plain["no_path"] == 0
    absent = run(HIPFILE_MOCK_AIS="absent")
    assert absent["caps"]["mock-p2p"] == [False, "HIPFILE_MOCK_AIS=absent: the mock GPU has no AIS"]
    assert absent["verdict"] == {} and absent["same"]
    failing = run(HIPFILE_MOCK_AIS_STATUS="19")
    assert failing["same"] and failing["no_path"] >= 1, failing
