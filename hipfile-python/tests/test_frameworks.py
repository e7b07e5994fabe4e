"""PyTorch and CuPy buffers on a real GPU (skipped on the mock GPU and where they are missing)."""

import numpy as np
import pytest

import hipfile

if hipfile.runtime()["mock"]:
    pytest.skip("needs a real GPU runtime", allow_module_level=True)
torch = pytest.importorskip("torch")
cp = pytest.importorskip("cupy")
if not torch.cuda.is_available():
    pytest.skip("PyTorch sees no CUDA device", allow_module_level=True)


class DLPackOnly:
    """Exposes a tensor through DLPack alone (no CUDA array interface)."""

    def __init__(self, tensor):
        self._t = tensor

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__()

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_torch_and_cupy_round_trips(data_file, data, scratch):
    n = len(data)
    with hipfile.open(data_file) as f:
        t = torch.empty(n, dtype=torch.uint8, device="cuda")
        assert f.read(t) == n
        assert t.cpu().numpy().tobytes() == data.tobytes()
        c = cp.empty(n // 4, dtype=cp.float32)
        assert f.read(c) == n
        assert cp.asnumpy(c).tobytes() == data.tobytes()
        d = torch.zeros(n // 2, dtype=torch.bfloat16, device="cuda")
        assert f.read(DLPackOnly(d)) == n
        assert d.view(torch.uint8).cpu().numpy().tobytes() == data.tobytes()
        with pytest.raises(ValueError):
            f.read(torch.empty(16, dtype=torch.uint8, device="cuda"), 17)
        with pytest.raises(ValueError):
            f.read(torch.empty((64, 64), dtype=torch.uint8, device="cuda").t())  # not contiguous
    out = scratch / "torch.bin"
    with hipfile.open(out, "w") as g:
        assert g.write(t) == n
    assert out.read_bytes() == data.tobytes()


def test_futures_batches_and_streams_with_framework_objects(data_file, data):
    n = len(data)
    c = cp.zeros(n, dtype=cp.uint8)
    with hipfile.open(data_file) as f:
        futs = [f.pread(c, 65536, i * 65536, i * 65536) for i in range(n // 65536)]
        assert sum(x.get() for x in futs) == n
        assert cp.asnumpy(c).tobytes() == data.tobytes()
        t = torch.zeros(n, dtype=torch.uint8, device="cuda")
        assert f.read_batch([(t, 4096, i * 4096, i * 4096) for i in range(64)]) == [4096] * 64
        assert t[: 64 * 4096].cpu().numpy().tobytes() == data[: 64 * 4096].tobytes()
        s = torch.cuda.Stream()
        op = f.read_async(t, 65536, 0, 0, stream=s)
        s.synchronize()
        assert op.result == 65536
        cs = cp.cuda.Stream(non_blocking=True)
        op = f.read_async(c, 65536, 65536, 0, stream=cs)
        cs.synchronize()
        assert op.result == 65536


def test_device_buffer_exports_the_cuda_array_interface(data_file, data):
    buf = hipfile.DeviceBuffer(len(data))
    with hipfile.open(data_file) as f:
        f.read(buf)
    assert cp.asnumpy(cp.asarray(buf)).tobytes() == data.tobytes()
    assert torch.as_tensor(buf, device="cuda").cpu().numpy().tobytes() == data.tobytes()


def test_device_buffer_exports_dlpack(data_file, data):
    buf = hipfile.DeviceBuffer(len(data))
    with hipfile.open(data_file) as f:
        f.read(buf)
    t = torch.from_dlpack(buf)
    assert t.dtype == torch.uint8 and t.numel() == len(data) and t.is_cuda
    assert t.cpu().numpy().tobytes() == data.tobytes()
    c = cp.from_dlpack(buf)
    del buf  # the tensors keep the memory alive
    assert cp.asnumpy(c).tobytes() == data.tobytes()
    assert t.cpu().numpy().tobytes() == data.tobytes()
    capsule = hipfile.DeviceBuffer(64).__dlpack__()
    del capsule  # never consumed: freed with its capsule
