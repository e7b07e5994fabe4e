"""Fixtures of the package's tests: files of known bytes in a scratch directory on disk."""

import os

import numpy as np
import pytest

import hipfile


@pytest.fixture
def scratch(tmp_path):
    return tmp_path


@pytest.fixture
def data():
    return np.random.default_rng(7).integers(0, 256, 1 << 20, dtype=np.uint8)


@pytest.fixture
def data_file(scratch, data):
    path = scratch / "data.bin"
    data.tofile(path)
    return path


@pytest.fixture(autouse=True)
def driver_balanced():
    """Every test leaves the driver's use count where it found it."""
    before = hipfile.Driver.use_count()
    yield
    hipfile.release_driver()  # the package's own use, taken by hipfile.open and the like
    assert hipfile.Driver.use_count() == before


def on_mock():
    return hipfile.runtime()["mock"]


def device_bytes(buf, size=None, offset=0):
    """The bytes of device memory, whatever holds it."""
    if isinstance(buf, hipfile.DeviceBuffer):
        return buf.to_bytes(size, offset)
    if hasattr(buf, "get"):  # CuPy
        return bytes(buf.get().tobytes()[offset : offset + (size or buf.nbytes)])
    if hasattr(buf, "cpu"):  # PyTorch
        return bytes(buf.cpu().numpy().tobytes()[offset : offset + (size or buf.nbytes)])
    raise TypeError(type(buf))
