"""Upstream hipFile's Python API: the names, behaviour and errors its programs rely on."""

import ctypes
import errno
import hashlib
import os

import pytest

import hipfile
from hipfile import (
    Buffer,
    Driver,
    FileHandle,
    FileHandleType,
    HipFileException,
    OpError,
    Stream,
    driver_get_properties,
    get_version,
    supports_async,
)
from hipfile.hipMalloc import hipFree, hipMalloc


def test_names_and_version():
    for name in ["Driver", "FileHandle", "Stream", "supports_async", "Buffer", "HipFileException",
                 "FileHandleType", "OpError", "driver_get_properties", "get_version", "__version__"]:
        assert name in hipfile.__all__ and hasattr(hipfile, name)
    assert get_version() == tuple(int(p) for p in hipfile.__version__.split("."))
    assert isinstance(get_version(), tuple)
    # One version for every artifact: the installed package's is the library's.
    import importlib.metadata

    assert importlib.metadata.version("hipfile") == hipfile.__version__
    assert hipfile._hipfile.__file__.endswith(".so")
    assert supports_async()


def test_op_error_values_are_hipfiles():
    assert OpError.SUCCESS == 0
    assert OpError.DRIVER_NOT_INITIALIZED == 5001
    assert OpError.HIP_DRIVER_ERROR == 5011
    assert OpError.INVALID_VALUE == 5022
    assert OpError.HANDLE_NOT_REGISTERED == 5027
    assert OpError.IO_MAX_ERROR == 5039
    assert len(OpError) == 38
    assert [FileHandleType.OPAQUE_FD, FileHandleType.OPAQUE_WIN32, FileHandleType.USERSPACE_FS] == [1, 2, 3]


def test_driver_use_count_balances():
    before = Driver.use_count()
    with Driver() as driver:
        assert driver.use_count() == before + 1
        with Driver():
            assert Driver.use_count() == before + 2
    assert Driver.use_count() == before


def test_closing_a_closed_driver_is_hipfiles_error():
    with pytest.raises(HipFileException) as info:
        Driver().close()
    assert info.value.hipfile_err == OpError.DRIVER_NOT_INITIALIZED
    assert info.value.hip_err == 0
    assert str(info.value).startswith("5001 - ")


def test_properties_have_upstreams_keys():
    props = driver_get_properties()
    assert set(props) == {
        "nvfs_major_version", "nvfs_minor_version", "nvfs_poll_thresh_size", "nvfs_max_direct_io_size",
        "nvfs_driver_status_flags", "nvfs_driver_control_flags", "feature_flags", "max_device_cache_size",
        "per_buffer_cache_size", "max_device_pinned_mem_size", "max_batch_io_count", "max_batch_io_timeout_msecs",
    }
    assert props["max_batch_io_count"] == 128


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_roundtrip_through_device_memory(scratch, data_file):
    size = data_file.stat().st_size
    output = scratch / "out.bin"
    ptr = hipMalloc(size)
    try:
        with Driver():
            with Buffer.from_ctypes_void_p(ptr, size, 0) as registered:
                with FileHandle(data_file, os.O_RDONLY, handle_type=FileHandleType.OPAQUE_FD) as source:
                    assert source.read(registered, size, 0, 0) == size
                with FileHandle(output, os.O_RDWR | os.O_CREAT | os.O_TRUNC) as destination:
                    assert destination.write(registered, size, 0, 0) == size
    finally:
        hipFree(ptr)
    assert sha(output) == sha(data_file)


def test_hipfree_frees_only_what_hipmalloc_gave():
    # A wrong or stale address is refused (the runtime's hipErrorInvalidValue), never freed:
    # before, it reached the runtime's free as it was.
    ptr = hipMalloc(4096)
    hipFree(ptr)
    with pytest.raises(RuntimeError, match="hipFree failed"):
        hipFree(ptr)  # twice
    with pytest.raises(RuntimeError, match="hipFree failed"):
        hipFree(0xDEAD0000)  # never allocated
    with pytest.raises(RuntimeError, match="hipFree failed"):
        hipFree(ctypes.c_void_p(ctypes.addressof(ctypes.create_string_buffer(64))))  # host memory


def test_buffer_rules(monkeypatch):
    class Null:
        value = None

    with pytest.raises(ValueError):
        Buffer.from_ctypes_void_p(Null(), 16, 0)
    # Host memory is refused where the environment says so (the package allows it otherwise).
    monkeypatch.setenv("HIPFILE_ALLOW_SYSTEM_MEMORY", "false")
    ptr = hipMalloc(4096)
    try:
        with Driver():
            b = Buffer(ptr.value, 4096, 0)
            b.deregister()  # not registered: nothing
            b.register()
            with pytest.raises(HipFileException) as info:
                b.register()
            assert info.value.hipfile_err == OpError.MEMORY_ALREADY_REGISTERED
            b.deregister()
            b.deregister()
            host = bytearray(4096)
            address = ctypes.addressof((ctypes.c_char * 4096).from_buffer(host))
            with pytest.raises(HipFileException) as info:
                Buffer(address, 4096, 0).register()
            assert info.value.hipfile_err == OpError.HIP_MEMORY_TYPE_INVALID
    finally:
        hipFree(ptr)


def test_file_handle_rules(scratch, data_file):
    fh = FileHandle(data_file, os.O_RDONLY)
    # A registration opens a closed driver for good (hipFile's rule): hold it open here.
    held = Driver()
    held.open()
    with pytest.raises(RuntimeError):
        fh.read(Buffer(0x1000, 16, 0), 16, 0, 0)
    with pytest.raises(ValueError):
        fh.handle_type = 9999
    with pytest.raises(NotImplementedError):
        fh.handle_type = FileHandleType.OPAQUE_WIN32
    with fh:
        with pytest.raises(RuntimeError):
            fh.open()
        with pytest.raises(RuntimeError):
            fh.handle_type = FileHandleType.OPAQUE_FD
        assert isinstance(fh.handle, int)
    assert fh.handle is None
    fh.close()
    with pytest.raises(OSError) as info:
        FileHandle(scratch / "missing", os.O_RDONLY).open()
    assert info.value.errno == errno.ENOENT
    held.close()


def test_io_errors_are_oserror_or_hipfileexception(data_file):
    ptr = hipMalloc(8192)
    try:
        with Driver(), FileHandle(data_file, os.O_RDONLY) as fh:
            buf = Buffer(ptr.value, 8192, 0)
            with pytest.raises(OSError) as info:
                fh.read(buf, 4096, -1, 0)
            assert info.value.errno == errno.EINVAL
            with Buffer(ptr.value, 4096, 0) as registered:
                with pytest.raises(HipFileException) as info:
                    fh.read(registered, 8192, 0, 0)  # past the registered length
                assert info.value.hipfile_err == OpError.INVALID_VALUE
            with pytest.raises(OSError) as info:
                fh.write(buf, 4096, 0, 0)  # opened read-only
            assert info.value.errno == errno.EBADF
    finally:
        hipFree(ptr)


def test_stream_ordered_calls_of_upstreams_api(data_file, data):
    stream_handle = hipfile._hipfile.stream_create()
    ptr = hipMalloc(65536)
    try:
        with Driver(), FileHandle(data_file, os.O_RDONLY) as fh, Stream(stream_handle) as stream:
            assert stream.registered
            io = fh.read_async(Buffer(ptr.value, 65536, 0), 65536, 4096, 0, stream.handle)
            hipfile._hipfile.stream_synchronize(stream_handle)
            assert io.bytes_done == 65536
        assert not stream.registered
        got = hipfile._hipfile.copy_from_device(ptr.value, 65536, 0, 65536)
        assert bytes(got) == data[4096 : 4096 + 65536].tobytes()
    finally:
        hipFree(ptr)
        hipfile._hipfile.stream_destroy(stream_handle)


def test_the_extension_answers_for_libhipfile_so_0():
    """The extension carries the C library under its SONAME: a library or program loaded after
    `import hipfile` that asks for libhipfile.so.0 gets the extension's C API (docs/python.md)."""
    import subprocess
    import sys

    code = (
        "import ctypes, hipfile\n"
        "lib = ctypes.CDLL('libhipfile.so.0')\n"
        "assert hasattr(lib, 'PyInit__hipfile'), 'another libhipfile.so.0 was loaded'\n"
        "major, minor, patch = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()\n"
        "lib.hipFileGetVersion.restype = ctypes.c_longlong\n"
        "lib.hipFileGetVersion(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))\n"
        "print(major.value, minor.value, patch.value)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert tuple(int(p) for p in out.stdout.split()) == get_version()


def test_no_request_reaches_past_what_the_library_can_bound(tmp_path):
    """Issue 40, item 1: upstream's API with host memory (which the package allows) once wrote
    1 MiB into a 4 KiB buffer and killed the interpreter. Now a `Buffer`'s length bounds every
    request (past it: hipFileInvalidValue, as past a registered buffer), and an address with no
    length is taken only where the runtime knows its allocation (else
    hipFileHipMemoryTypeInvalid). Run in a child process, so that a crash fails the test."""
    import subprocess
    import sys

    path = tmp_path / "four-mib.bin"
    path.write_bytes(bytes(range(256)) * (4 << 12))
    code = (
        "import ctypes, os, sys, hipfile\n"
        "from hipfile import Buffer, Driver, FileHandle, HipFileException\n"
        "small = ctypes.create_string_buffer(4096)\n"
        "class Bare:\n"
        "    ptr = ctypes.addressof(small)\n"
        "with Driver():\n"
        "    with FileHandle(sys.argv[1], os.O_RDWR) as fh:\n"
        "        b = Buffer(ctypes.addressof(small), 4096, 0)\n"
        "        for call in (lambda: fh.read(b, 1 << 20, 0, 0), lambda: fh.read(b, 4096, 0, 1),\n"
        "                     lambda: fh.write(b, 4097, 0, 0), lambda: fh.read_async(b, 8192, 0, 0, 0)):\n"
        "            try:\n"
        "                call()\n"
        "                print('accepted')\n"
        "            except HipFileException as e:\n"
        "                print(e.hipfile_err)\n"
        "        print(fh.read(b, 4096, 4096, 0), small.raw[:4] == bytes(range(4)))\n"
        "        try:\n"
        "            fh.read(Bare(), 16, 0, 0)\n"
        "            print('accepted')\n"
        "        except HipFileException as e:\n"
        "            print(e.hipfile_err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:6] == ["5022", "5022", "5022", "5022", "4096 True", "5013"], out.stdout


def test_the_stub_names_every_code_of_the_librarys_table():
    """OpError is made from the library's one table (hipfile-abi); the stub, written by hand,
    names exactly its codes."""
    import pathlib
    import re

    stub = (pathlib.Path(hipfile.__file__).parent / "__init__.pyi").read_text()
    body = stub[stub.index("class OpError(IntEnum):") :].split("\n\n", 1)[0]
    assert re.findall(r"^    ([A-Z_0-9]+): int$", body, re.M) == [e.name for e in OpError]
    assert [(e.name, e.value) for e in OpError][:3] == [("SUCCESS", 0), ("DRIVER_NOT_INITIALIZED", 5001),
                                                       ("DRIVER_INVALID_PROPS", 5002)]

