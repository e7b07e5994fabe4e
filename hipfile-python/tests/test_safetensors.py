"""hipfile.safetensors against the safetensors package (NumPy here; PyTorch and CuPy in
test_safetensors_gpu.py): every dtype, odd shapes, views and copies, slices, shards, sharded
directories, and files that lie."""

import gc
import json
import struct
import weakref

import numpy as np
import pytest

st_numpy = pytest.importorskip("safetensors.numpy")

from hipfile import safetensors as hst  # noqa: E402
from hipfile.safetensors import SafetensorError  # noqa: E402

NUMPY_DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "float16", "int32", "uint32", "float32", "float64",
                "int64", "uint64", "complex64"]


def sample(rng, dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.fixture
def checkpoint(scratch):
    rng = np.random.default_rng(3)
    shapes = [(), (0,), (1,), (7,), (3, 5), (4, 0, 2), (2, 3, 4), (13, 1)]
    tensors = {}
    for i, dtype in enumerate(NUMPY_DTYPES):
        for j, shape in enumerate(shapes):
            tensors[f"layer{i}.{dtype}.{j}"] = np.asarray(sample(rng, dtype, shape))
    path = scratch / "model.safetensors"
    st_numpy.save_file(tensors, str(path), metadata={"format": "np", "note": "é"})
    return path, tensors


def assert_same(got, expected, ordered=True):
    assert (list(got) if ordered else sorted(got)) == (list(expected) if ordered else sorted(expected))
    for name, a in expected.items():
        b = got[name]
        assert b.dtype == a.dtype and b.shape == a.shape, name
        assert b.tobytes() == a.tobytes(), name


@pytest.mark.parametrize("copy", [False, True])
def test_load_file_gives_what_safetensors_gives(checkpoint, copy):
    path, _ = checkpoint
    expected = st_numpy.load_file(str(path))
    got = hst.load_file(path, framework="np", copy=copy)
    assert_same(got, expected)


def test_progress_is_told_every_byte(checkpoint):
    path, _ = checkpoint
    seen = []
    hst.load_file(path, framework="np", progress=lambda done, total: seen.append((done, total)))
    header = hst.read_header(path)
    assert seen and seen[-1] == (header.data_len, header.data_len)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_views_share_one_allocation_freed_with_the_last_tensor(checkpoint):
    path, _ = checkpoint
    got = hst.load_file(path, framework="np")
    bases = {id(t.base if t.base is not None else t) for t in got.values() if t.nbytes}
    flat = [t for t in got.values() if t.nbytes][0]
    while flat.base is not None and flat.base.base is not None:
        flat = flat.base
    probe = weakref.ref(flat.base)
    assert len(bases) >= 1
    del got, flat, bases
    gc.collect()
    assert probe() is None, "the file's allocation outlived its tensors"


def test_safe_open_reads_single_tensors_and_slices(checkpoint):
    path, tensors = checkpoint
    with hst.safe_open(path, framework="np") as f:
        assert f.keys() == sorted(tensors)
        assert f.metadata() == {"format": "np", "note": "é"}
        for name in ("layer8.float32.4", "layer11.uint64.6", "layer0.bool.0"):
            assert f.get_tensor(name).tobytes() == tensors[name].tobytes()
        t = tensors["layer8.float32.6"]  # (2, 3, 4)
        s = f.get_slice("layer8.float32.6")
        assert s.get_shape() == [2, 3, 4] and s.get_dtype() == "F32"
        assert np.array_equal(s[1:2], t[1:2])
        assert np.array_equal(s[1], t[1])
        assert np.array_equal(s[-1], t[-1])
        assert np.array_equal(s[:], t)
        assert np.array_equal(s[0:2, 1:3], t[0:2, 1:3])
        assert np.array_equal(s[..., 1], t[..., 1])
        assert s[5:9].shape == (0, 3, 4)
        with pytest.raises(IndexError):
            s[2]
        with pytest.raises(SafetensorError, match="step 1"):
            s[::2]
        with pytest.raises(SafetensorError, match=r"^tensor \"layer8.float32.0\": a scalar has no rows to slice$"):
            f.get_slice("layer8.float32.0")[0:1]
        with pytest.raises(SafetensorError, match="no tensor 'nope'"):
            f.get_tensor("nope")


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_shards_are_torch_chunk_parts_of_the_first_dimension(checkpoint, world):
    path, tensors = checkpoint
    parts = [hst.load_file(path, framework="np", shard=(rank, world)) for rank in range(world)]
    for name, t in tensors.items():
        if t.ndim == 0:
            assert all(p[name].tobytes() == t.tobytes() for p in parts)
            continue
        step = -(-t.shape[0] // world)
        for rank, p in enumerate(parts):
            assert np.array_equal(p[name], t[rank * step : (rank + 1) * step]), (name, rank)
    with pytest.raises(ValueError):
        hst.load_file(path, framework="np", shard=(2, 2))


def test_a_sharded_directory_loads_every_file(scratch):
    rng = np.random.default_rng(5)
    d = scratch / "model"
    d.mkdir()
    weight_map, everything = {}, {}
    for k in range(3):
        part = {f"w{k}.{i}": rng.standard_normal((k + 2, 3)).astype(np.float32) for i in range(4)}
        name = f"model-{k + 1:05d}-of-00003.safetensors"
        st_numpy.save_file(part, str(d / name))
        weight_map.update({n: name for n in part})
        everything.update(part)
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    got = hst.load_model_dir(d, framework="np")
    assert_same(got, everything, ordered=False)
    seen = []
    hst.load_model_dir(d, framework="np", copy=True, progress=lambda a, b: seen.append((a, b)))
    assert seen[-1][0] == seen[-1][1] == sum(t.nbytes for t in everything.values())
    weight_map["ghost"] = "model-00001-of-00003.safetensors"
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(SafetensorError, match="ghost"):
        hst.load_model_dir(d, framework="np")
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "../etc/passwd"}}))
    with pytest.raises(SafetensorError, match="not a file of this directory"):
        hst.load_model_dir(d, framework="np")
    (d / "model.safetensors.index.json").unlink()
    assert_same(hst.load_model_dir(d, framework="np"), everything, ordered=False)


def raw(header, data=b""):
    h = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(h)) + h + data


def t(dtype, shape, a, b):
    return {"dtype": dtype, "shape": shape, "data_offsets": [a, b]}


BAD = [
    (b"", "too short"),
    (b"\x01\x02", "too short"),
    (struct.pack("<Q", 1 << 40) + b"{}", "past the limit"),
    (struct.pack("<Q", 500) + b"{}", "past the end"),
    (raw(b'{"a": '), "not a JSON object"),
    (raw(b"[]"), "not a JSON object"),
    (raw({"a": t("F32", [3], 0, 12)}, bytes(8)), "past the 8-byte data area"),
    (raw({"a": t("F32", [3], 0, 8)}, bytes(8)), "is 12 bytes"),
    (raw({"a": t("U8", [4], 0, 4), "b": t("U8", [4], 2, 6)}, bytes(6)), "overlap"),
    (raw({"a": t("Q7", [1], 0, 1)}, bytes(1)), "unknown dtype"),
    (raw({"a": t("U8", [-1], 0, 1)}, bytes(1)), "non-negative"),
    (raw({"a": t("F64", [1 << 40, 1 << 40], 0, 8)}, bytes(8)), "overflows"),
    (raw({"__metadata__": {"k": 1}}), "not a string"),
    (raw(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x"), "twice"),
]


@pytest.mark.parametrize("content,problem", BAD)
def test_a_lying_file_is_an_exception_that_names_the_problem(scratch, content, problem):
    path = scratch / "bad.safetensors"
    path.write_bytes(content)
    for call in (lambda: hst.load_file(path, framework="np"), lambda: hst.safe_open(path, framework="np")):
        with pytest.raises(SafetensorError, match=problem) as info:
            call()
        assert str(path) in str(info.value)


def test_random_damage_never_crashes(checkpoint, scratch):
    path, _ = checkpoint
    good = path.read_bytes()
    rng = np.random.default_rng(9)
    bad = scratch / "damaged.safetensors"
    header_end = 8 + struct.unpack("<Q", good[:8])[0]
    for _ in range(200):
        b = bytearray(good[: rng.integers(0, len(good) + 1)] if rng.random() < 0.3 else good)
        for _ in range(rng.integers(1, 4)):
            if b:
                b[rng.integers(0, min(len(b), header_end))] = rng.integers(0, 256)
        bad.write_bytes(bytes(b))
        try:
            hst.load_file(bad, framework="np")
        except (SafetensorError, OSError):
            pass


def test_unsupported_dtypes_say_so(scratch):
    path = scratch / "bf16.safetensors"
    path.write_bytes(raw({"w": t("BF16", [2], 0, 4)}, bytes(4)))
    with pytest.raises(SafetensorError, match="BF16 has no NumPy type"):
        hst.load_file(path, framework="np")
    assert hst.read_header(path).tensors["w"] == ("BF16", [2], 0, 4)


def test_a_tensor_not_aligned_for_its_dtype_is_copied_right(scratch):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    header = json.dumps({"w": t("F32", [2, 3], 0, 24), "b": t("U8", [3], 24, 27)}).encode()
    header += b" " * (1 - len(header) % 2)  # an odd length: the data start is odd
    path = scratch / "odd.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + values.tobytes() + b"\x01\x02\x03")
    assert (8 + len(header)) % 2 == 1
    for copy in (False, True):
        got = hst.load_file(path, framework="np", copy=copy)
        assert got["w"].dtype == np.float32 and np.array_equal(got["w"], values)
        assert got["b"].tolist() == [1, 2, 3]
    with hst.safe_open(path, framework="np") as f:
        assert np.array_equal(f.get_slice("w")[1:], values[1:])
