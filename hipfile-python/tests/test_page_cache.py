"""The page-cache policy from Python (semantics §16): ``cache=`` per file and per load, the
``PageCache`` parameter, and what each leaves in the page cache after a cold read. A file's
pages are evicted with fdatasync + POSIX_FADV_DONTNEED (never by dropping every cache) and
counted with mincore."""

import ctypes
import os

import numpy as np
import pytest

import hipfile
import hipfile.safetensors as hst
from conftest import on_mock

SIZE = 4 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def evict(path):
    """Writes the file's dirty pages back and drops its pages from the page cache."""
    with open(path, "rb") as f:
        os.fdatasync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def resident(path):
    """The fraction of the file's pages in the page cache."""
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        assert addr not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
        pages = (size + 4095) // 4096
        vec = (ctypes.c_ubyte * pages)()
        try:
            assert _libc.mincore(addr, size, vec) == 0, ctypes.get_errno()
        finally:
            _libc.munmap(addr, size)
        return sum(v & 1 for v in vec) / pages
    finally:
        os.close(fd)


@pytest.fixture
def bounce(monkeypatch):
    """The bounce backend over the mock GPU, opened by the test's first call."""
    if not on_mock():
        pytest.skip("the mock GPU's bounce path; the GPU machine measures the real one")
    hipfile.release_driver()
    assert hipfile.Driver.use_count() == 0
    monkeypatch.setenv("HIPFILE_BACKEND", "bounce")
    for var in ("HIPFILE_PAGE_CACHE", "HIPFILE_PAGE_CACHE_LIMIT_MIB"):
        monkeypatch.delenv(var, raising=False)
    yield
    hipfile.release_driver()


@pytest.fixture
def cold_file(scratch):
    data = np.random.default_rng(39).integers(0, 256, SIZE, dtype=np.uint8)
    path = scratch / "cold.bin"
    data.tofile(path)
    return path, data.tobytes()


def test_cache_per_file_decides_what_a_cold_read_leaves_in_the_page_cache(bounce, cold_file):
    path, data = cold_file
    buf = hipfile.DeviceBuffer(SIZE)
    for cache, kept, rule in [
        (None, True, "keep (auto: the file, 4.0 MiB, fits within"),
        ("keep", True, "keep (set to keep)"),
        ("bypass", False, "bypass (set to bypass)"),
        ("auto", True, "keep (auto"),
    ]:
        evict(path)
        assert resident(path) == 0, "eviction works here"
        with hipfile.open(path, cache=cache) as f:
            assert f.cache_rule().startswith(rule), (cache, f.cache_rule())
            assert f.read(buf) == SIZE
        assert buf.to_bytes() == data
        share = resident(path)
        if kept:
            assert share >= 0.9, (cache, share)
        else:
            assert share <= 0.01, (cache, share)


def test_a_file_over_the_limit_is_bypassed_under_auto(bounce, cold_file, monkeypatch):
    path, data = cold_file
    monkeypatch.setenv("HIPFILE_PAGE_CACHE_LIMIT_MIB", "1")
    buf = hipfile.DeviceBuffer(SIZE)
    evict(path)
    with hipfile.open(path) as f:
        assert f.cache_rule().startswith("bypass (auto: the file, 4.0 MiB, is over 1.0 MiB)"), f.cache_rule()
        assert f.read(buf) == SIZE
        f.set_cache("keep")  # the file's own setting wins from the next transfer on
        assert f.cache_rule() == "keep (set to keep)"
    assert buf.to_bytes() == data
    assert resident(path) <= 0.01


def test_the_parameter_and_the_environment_set_the_drivers_policy(bounce, cold_file, monkeypatch):
    path, _ = cold_file
    monkeypatch.setenv("HIPFILE_PAGE_CACHE", "bypass")
    assert hipfile.get_parameter("PageCache") == "bypass"
    assert hipfile.get_parameter("ForceOdirectMode") is True
    hipfile.set_parameter("PageCache", "keep")  # staged for the next open: wins over the environment
    with hipfile.open(path) as f:
        assert hipfile.get_parameter("PageCache") == "keep"
        assert f.cache_rule() == "keep (set to keep)"
    with pytest.raises(hipfile.HipFileException):
        hipfile.set_parameter("PageCache", "sometimes")


def test_load_file_takes_cache(bounce, scratch, monkeypatch):
    monkeypatch.setenv("HIPFILE_PAGE_CACHE", "bypass")
    tensors = {"a": np.arange(SIZE // 4, dtype=np.float32), "b": np.ones((3, 5), dtype=np.int16)}
    path = scratch / "model.safetensors"
    _write_safetensors(tensors, path)
    evict(path)
    got = hst.load_file(path, framework="np", cache="keep")
    assert all(np.array_equal(got[k], v) for k, v in tensors.items())
    assert resident(path) >= 0.9
    with pytest.raises(ValueError, match="cache="):
        hst.load_file(path, framework="np", cache="sometimes")
    with pytest.raises(ValueError, match="cache="):
        hipfile.open(path, cache="direct")


def _write_safetensors(tensors, path):
    import json
    import struct

    header, blobs, at = {}, [], 0
    codes = {np.dtype(np.float32): "F32", np.dtype(np.int16): "I16"}
    for name, a in tensors.items():
        b = a.tobytes()
        header[name] = {"dtype": codes[a.dtype], "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
