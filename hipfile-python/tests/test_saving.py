"""hipfile.safetensors' saving against the safetensors package (NumPy and device memory on the
mock here; PyTorch and CuPy on a GPU in test_safetensors_gpu.py): the same bytes, atomic
replacement, refusals, sharded directories."""

import json
import os

import numpy as np
import pytest

st_numpy = pytest.importorskip("safetensors.numpy")

import hipfile  # noqa: E402
from hipfile import safetensors as hst  # noqa: E402
from test_safetensors import NUMPY_DTYPES, sample  # noqa: E402


@pytest.fixture
def tensors():
    rng = np.random.default_rng(11)
    shapes = [(), (0,), (1,), (7,), (3, 5), (4, 0, 2), (13, 1)]
    out = {}
    for i, dtype in enumerate(NUMPY_DTYPES):
        for j, shape in enumerate(shapes):
            out[f"w{(i * 7 + j) % 5}.{dtype}.{j}"] = np.asarray(sample(rng, dtype, shape))
    out["naïve ünïcode \"quoted\"\n"] = np.arange(3, dtype=np.float32)
    out["big endian"] = np.arange(6, dtype=">i4")
    return out


META = {"format": "np ü\t"}
#: safetensors writes two or more metadata entries in an order that changes from run to run (a
#: hash map's); ours keeps the order given. The headers say the same.
METAS = {"zeta": "given first", "alpha": "given second", "format": "np"}


def header(data: bytes) -> dict:
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + n])


def test_the_same_bytes_as_safetensors(tensors, scratch):
    for meta in (None, {}, META):
        ours, theirs = scratch / "ours.safetensors", scratch / "theirs.safetensors"
        hst.save_file(tensors, ours, meta)
        st_numpy.save_file(tensors, str(theirs), meta)
        assert ours.read_bytes() == theirs.read_bytes(), meta
        assert hst.save(tensors, meta) == st_numpy.save(tensors, meta), meta
    mine, its = hst.save(tensors, METAS), st_numpy.save(tensors, METAS)
    assert header(mine) == header(its) and len(mine) == len(its)
    assert list(header(mine)["__metadata__"]) == list(METAS)
    assert mine[-1000:] == its[-1000:]
    loaded = hst.load_file(ours, framework="np")
    assert set(loaded) == set(tensors)
    for name, t in tensors.items():
        assert loaded[name].shape == t.shape and (loaded[name] == t).all(), name
    assert hst.save({}) == st_numpy.save({})


class FakeCupyArray:
    """What the saver reads of a CuPy array, over a DeviceBuffer (the mock GPU's memory)."""

    __module__ = "cupy._core.core"

    def __init__(self, host: np.ndarray) -> None:
        self._host = np.array(host, order="C")  # (ascontiguousarray would make a scalar 1-D)
        self._buf = hipfile.DeviceBuffer(max(self._host.nbytes, 1))
        self._buf.copy_from(self._host.tobytes())
        self.dtype, self.shape, self.size, self.nbytes = self._host.dtype, self._host.shape, self._host.size, self._host.nbytes
        self.flags = self._host.flags
        self.__cuda_array_interface__ = {
            "shape": self.shape, "typestr": self.dtype.str, "data": (self._buf.ptr, False), "version": 3, "strides": None,
        }

    def get(self):
        return np.frombuffer(self._buf.to_bytes(self.nbytes), dtype=self.dtype).reshape(self.shape)


def test_device_memory_is_written_from_where_it_is(tensors, scratch):
    on_device = {name: FakeCupyArray(t) for name, t in tensors.items() if t.dtype.byteorder != ">"}
    host = {name: t for name, t in tensors.items() if name in on_device}
    hst.save_file(on_device, scratch / "dev.safetensors", META)
    st_numpy.save_file(host, str(scratch / "host.safetensors"), META)
    assert (scratch / "dev.safetensors").read_bytes() == (scratch / "host.safetensors").read_bytes()
    assert hst.save(on_device, META) == st_numpy.save(host, META)


def test_a_failed_save_leaves_the_old_file_and_nothing_else(tensors, scratch, monkeypatch):
    path = scratch / "model.safetensors"
    hst.save_file({"old": np.arange(4, dtype=np.int32)}, path)
    before = path.read_bytes()
    with pytest.raises(ValueError):
        hst.save_file({"ok": np.zeros(3), "bad": object()}, path)  # refused before any write
    with pytest.raises(ValueError):
        hst.save_file({"strided": np.zeros(8)[::2]}, path)
    with pytest.raises(ValueError):
        hst.save_file([np.zeros(3)], path)
    with pytest.raises(ValueError):
        hst.save_file({"x": np.zeros(3)}, path, {"n": 1})

    def fails(self, entries, timeout=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(hipfile.File, "write_batch", fails)
    with pytest.raises(OSError):
        hst.save_file(tensors, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(scratch)) == ["model.safetensors"], "no temporary file left"


def test_durable_saves_and_the_file_mode(tensors, scratch):
    path = scratch / "d.safetensors"
    hst.save_file(tensors, path, durable=True, cache="bypass")
    assert path.read_bytes() == st_numpy.save(tensors)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_durable_save_writes_durably_not_buffered_then_synced(scratch):
    """A durable save's bytes go out as durable writes (each chunk's writeback started as it is
    written, the call ending on stable storage), not as buffered writes synced once at the end:
    that way saved at 0.6x the durable one on an H100 (docs/bench/2026-12-06-h100-saves)."""
    rng = np.random.default_rng(3)
    tensors = {f"t{i}": rng.integers(0, 255, (1 << 20) + i, dtype=np.uint8) for i in range(6)}
    data = sum(t.nbytes for t in tensors.values())

    def durable_bytes():
        return hipfile.stats()["counters"]["DurableWriteBytes"]

    before = durable_bytes()
    hst.save_file(tensors, scratch / "durable.safetensors", durable=True)
    assert durable_bytes() - before >= data
    before = durable_bytes()
    hst.save_file(tensors, scratch / "cached.safetensors")
    assert durable_bytes() == before, "a save that is not durable syncs nothing"


def test_model_dirs_as_save_pretrained_lays_them_out(tensors, scratch):
    state = {f"layers.{i}.weight": np.full((256,), i, dtype=np.float32) for i in range(10)}  # 1 KiB each
    state["lm_head.weight"] = np.zeros(1024, dtype=np.float32)  # 4 KiB: over the limit, alone
    files = hst.save_model_dir(state, scratch / "m", max_shard_size=3000)
    names = sorted(os.path.basename(f) for f in files)
    assert names[-1] == "model.safetensors.index.json" and len(names) == 7, names
    index = json.loads((scratch / "m" / "model.safetensors.index.json").read_text())
    assert index["metadata"] == {"total_size": sum(t.nbytes for t in state.values())}
    assert set(index["weight_map"]) == set(state)
    assert index["weight_map"]["layers.0.weight"] == "model-00001-of-00006.safetensors"
    assert index["weight_map"]["layers.2.weight"] == "model-00002-of-00006.safetensors"
    # As huggingface_hub splits: a tensor over the limit gets its shard at once, before the open one.
    assert index["weight_map"]["lm_head.weight"] == "model-00005-of-00006.safetensors"
    assert index["weight_map"]["layers.9.weight"] == "model-00006-of-00006.safetensors"
    with open(scratch / "m" / "model-00001-of-00006.safetensors", "rb") as f:
        assert b'"__metadata__":{"format":"pt"}' in f.read(200)
    loaded = hst.load_model_dir(scratch / "m", framework="np")
    assert all((loaded[k] == v).all() for k, v in state.items())
    # Saved again in one shard: one file, and the index that named the shards is gone.
    files = hst.save_model_dir(state, scratch / "m", max_shard_size="5GB")
    assert [os.path.basename(f) for f in files] == ["model.safetensors"]
    assert not (scratch / "m" / "model.safetensors.index.json").exists()
    with pytest.raises(ValueError):
        hst.save_model_dir(state, scratch / "m", max_shard_size="lots")
