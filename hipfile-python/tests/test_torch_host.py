"""PyTorch tensors in host memory (CPU tensors) through the Pythonic API: read into and written
from as NumPy arrays are (by DLPack), any dtype, slices too; one that requires grad gets
PyTorch's own refusal (BufferError). Run with PyTorch installed (CI's PyTorch environment)."""

import pytest

torch = pytest.importorskip("torch")

import hipfile  # noqa: E402


def test_a_cpu_tensor_is_read_into_and_written_from(data_file, data, scratch):
    t = torch.empty(4096, dtype=torch.uint8)
    with hipfile.open(data_file) as f:
        assert f.read(t) == 4096
        assert bytes(t.numpy()) == data[:4096].tobytes()
        halves = torch.zeros(2048, dtype=torch.bfloat16)  # 4096 bytes, another dtype
        assert f.read(halves, file_offset=8192) == 4096
        assert halves.view(torch.uint8).numpy().tobytes() == data[8192 : 8192 + 4096].tobytes()
        rows = torch.zeros(4, 1024, dtype=torch.uint8)
        assert f.read(rows[1:3], file_offset=4096) == 2048  # a slice of rows: contiguous
        assert rows[1:3].numpy().tobytes() == data[4096 : 4096 + 2048].tobytes()
        assert not rows[0].any() and not rows[3].any()
        with pytest.raises(ValueError, match="strided"):
            f.read(rows[:, ::2])
        with pytest.raises(BufferError):  # PyTorch's: a tensor that requires grad exports nothing
            f.read(torch.zeros(16, requires_grad=True))
    out = scratch / "cpu.out"
    with hipfile.open(out, "w") as f:
        assert f.write(halves) == 4096
    assert out.read_bytes() == data[8192 : 8192 + 4096].tobytes()
