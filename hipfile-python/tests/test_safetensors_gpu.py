"""hipfile.safetensors on a real GPU against the safetensors package: PyTorch tensors (every
dtype PyTorch and safetensors share, odd shapes, views and copies, memory given back), CuPy
arrays, safe_open's tensors and slices, shards (in this process and from two processes on one
GPU) and a sharded checkpoint directory. Skipped on the mock GPU and where PyTorch, CUDA or
safetensors are missing (CuPy's test alone where CuPy is)."""

import gc
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hipfile

if hipfile.runtime()["mock"]:
    pytest.skip("needs a real GPU runtime", allow_module_level=True)
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("PyTorch sees no CUDA device", allow_module_level=True)
st_torch = pytest.importorskip("safetensors.torch")
st_numpy = pytest.importorskip("safetensors.numpy")
import safetensors  # noqa: E402

from hipfile import safetensors as hst  # noqa: E402

DEVICE = "cuda:0"
SHAPES = [(), (0,), (0, 3), (1,), (7,), (3, 5), (2, 3, 4), (1000, 333)]
METADATA = {"format": "pt", "note": "é"}
# The PyTorch dtypes of the main checkpoint (each where this PyTorch has it), and newer ones
# tested apart, each where safetensors writes and reads it back.
TORCH_DTYPES = ["bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
                "float8_e4m3fn", "float8_e5m2", "complex64", "uint16", "uint32", "uint64"]
NEWER_DTYPES = ["float8_e8m0fnu", "float4_e2m1fn_x2", "float8_e4m3fnuz", "float8_e5m2fnuz"]


def make(gen, dtype, shape):
    """A tensor of random bytes (bools 0 or 1) in host memory."""
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen, dtype=torch.uint8).bool()
    size = torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (count * size,), generator=gen, dtype=torch.uint8)
    return raw.view(dtype).reshape(shape)


def saved_by_safetensors(tensor):
    """Whether safetensors writes and reads back this tensor (some dtypes, or their shapes, it
    does not know)."""
    try:
        back = st_torch.load(st_torch.save({"x": tensor}))["x"]
    except Exception:
        return False
    return back.dtype == tensor.dtype and back.shape == tensor.shape and raw(back) == raw(tensor)


def raw(t):
    """A tensor's bytes, in row-major order (any dtype, bool and fp8 included: through a uint8
    view, so no kernel of the dtype's own is needed)."""
    if t.numel() == 0:
        return b""
    t = t.detach()
    if t.dim() == 0:
        t = t.reshape(1)
    if t.stride(-1) != 1:
        t = t.contiguous()
    return t.view(torch.uint8).contiguous().cpu().numpy().tobytes()


def same_order(got, expected):
    """The same names, in the same order where the order means something: empty tensors share
    their offset with a neighbour, and safetensors 0.8 orders such ties differently from one
    call to the next (it sorts a hash map's entries by offset), so they may stand anywhere."""
    if sorted(got) != sorted(expected):
        return False
    full = [n for n, t in expected.items() if (t.numel() if hasattr(t, "numel") else t.size)]
    keep = set(full)
    return [n for n in got if n in keep] == full


def assert_same(got, expected, device=DEVICE):
    assert same_order(got, expected)
    for name, a in expected.items():
        b = got[name]
        assert b.dtype == a.dtype and b.shape == a.shape, name
        assert b.device == torch.device(device), name
        assert raw(b) == raw(a), name


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    gen = torch.Generator().manual_seed(11)
    tensors = {}
    for i, name in enumerate(TORCH_DTYPES):
        dtype = getattr(torch, name, None)
        if dtype is None:
            continue
        for j, shape in enumerate(SHAPES):
            t = make(gen, dtype, shape)
            if saved_by_safetensors(t):
                tensors[f"layer{i:02d}.{name}.{j}"] = t
    for name in ("bfloat16", "float16", "float32", "int64", "bool", "float8_e4m3fn", "float8_e5m2"):
        assert sum(f".{name}." in n for n in tensors) == len(SHAPES), name
    path = tmp_path_factory.mktemp("st") / "model.safetensors"
    st_torch.save_file(tensors, str(path), metadata=METADATA)
    return path, tensors


@pytest.mark.parametrize("copy", [False, True])
def test_load_file_gives_what_safetensors_gives(checkpoint, copy):
    path, _ = checkpoint
    expected = st_torch.load_file(str(path), device=DEVICE)
    got = hst.load_file(path, device=DEVICE, copy=copy)
    torch.cuda.synchronize()
    assert_same(got, expected)
    assert hst.load_file(path, device=0, copy=copy).keys() == got.keys()  # an index is cuda:N


@pytest.mark.parametrize("name", NEWER_DTYPES)
def test_newer_dtypes_where_safetensors_has_them(tmp_path, name):
    dtype = getattr(torch, name, None)
    if dtype is None:
        pytest.skip(f"this PyTorch has no {name}")
    gen = torch.Generator().manual_seed(13)
    tensors = {}
    for j, shape in enumerate(SHAPES):
        try:
            t = make(gen, dtype, shape)
        except (RuntimeError, TypeError):
            continue
        if saved_by_safetensors(t):
            tensors[f"{name}.{j}"] = t
    if not tensors:
        pytest.skip(f"safetensors {safetensors.__version__} does not write {name}")
    path = tmp_path / "newer.safetensors"
    st_torch.save_file(tensors, str(path))
    expected = st_torch.load_file(str(path), device=DEVICE)
    for copy in (False, True):
        assert_same(hst.load_file(path, device=DEVICE, copy=copy), expected)
    with hst.safe_open(path, framework="pt", device=DEVICE) as f:
        for n, a in expected.items():
            assert raw(f.get_tensor(n)) == raw(a), n


def test_views_share_one_allocation_and_copies_own_theirs(checkpoint):
    path, _ = checkpoint
    views = hst.load_file(path, device=DEVICE)
    ptrs = {t.untyped_storage().data_ptr() for t in views.values() if t.numel()}
    assert len(ptrs) == 1, "copy=False: every tensor should be a view of the file's one allocation"
    copies = hst.load_file(path, device=DEVICE, copy=True)
    full = [t for t in copies.values() if t.numel()]
    assert len({t.untyped_storage().data_ptr() for t in full}) == len(full)
    assert not ptrs & {t.untyped_storage().data_ptr() for t in full}


@pytest.mark.parametrize("copy", [False, True])
def test_memory_is_given_back(checkpoint, copy):
    path, _ = checkpoint
    gc.collect()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    got = hst.load_file(path, device=DEVICE, copy=copy)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() > before
    one = next(t for t in got.values() if t.numel())
    del got
    gc.collect()
    assert torch.cuda.memory_allocated() > before, "a tensor still held lost its memory"
    del one
    gc.collect()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before


def test_cupy_arrays_are_what_safetensors_numpy_gives(tmp_path):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(4)
    arrays = {}
    for i, dtype in enumerate(["bool", "uint8", "int8", "int16", "uint16", "float16", "int32", "uint32",
                               "float32", "float64", "int64", "uint64", "complex64"]):
        for j, shape in enumerate(SHAPES[:-1] + [(100, 33)]):
            count = int(np.prod(shape, dtype=np.int64))
            if dtype == "bool":
                a = rng.integers(0, 2, count).astype(bool)
            else:
                a = rng.integers(0, 256, count * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype)
            arrays[f"a{i:02d}.{dtype}.{j}"] = a.reshape(shape)
    path = tmp_path / "np.safetensors"
    st_numpy.save_file(arrays, str(path))
    expected = st_numpy.load_file(str(path))
    for copy in (False, True):
        got = hst.load_file(path, device=DEVICE, framework="cupy", copy=copy)
        cp.cuda.Device(0).synchronize()
        assert same_order(got, expected)
        for name, a in expected.items():
            b = got[name]
            assert isinstance(b, cp.ndarray) and b.device.id == 0, name
            assert b.dtype == a.dtype and b.shape == a.shape, name
            assert cp.asnumpy(b).tobytes() == a.tobytes(), name
    with hst.safe_open(path, framework="cupy", device=DEVICE) as f:
        name = "a08.float32.6"  # (2, 3, 4)
        assert cp.asnumpy(f.get_tensor(name)).tobytes() == expected[name].tobytes()
        assert np.array_equal(cp.asnumpy(f.get_slice(name)[1:2, 1:3]), expected[name][1:2, 1:3])


def test_safe_open_tensors_and_slices(checkpoint):
    path, tensors = checkpoint
    expected = st_torch.load_file(str(path), device=DEVICE)
    with hst.safe_open(path, framework="pt", device=DEVICE) as f, \
            safetensors.safe_open(str(path), framework="pt", device=DEVICE) as g:
        assert f.keys() == sorted(tensors)
        assert same_order(f.offset_keys(), expected)
        assert f.metadata() == METADATA == g.metadata()
        for name, a in expected.items():
            b = f.get_tensor(name)
            assert b.dtype == a.dtype and b.shape == a.shape and b.device == torch.device(DEVICE), name
            assert raw(b) == raw(a), name
        sliced = [n for n in expected if expected[n].dim() >= 2 and expected[n].shape[0] >= 2
                  and expected[n].shape[-1] >= 3 and "float4" not in n]
        assert sliced
        for name in sliced:
            s, r = f.get_slice(name), g.get_slice(name)
            full = expected[name]
            assert s.get_shape() == list(full.shape) == list(r.get_shape())
            assert s.get_dtype() == r.get_dtype()
            rows = full.shape[0]
            for index in (slice(0, 1), slice(1, rows), slice(rows // 3, rows - 1), 0, rows - 1, -1,
                          (slice(0, rows), slice(1, 3)), (slice(1, 2), slice(None), slice(0, 2))):
                if isinstance(index, tuple) and len(index) > full.dim():
                    continue
                mine, want = s[index], full[index]
                assert mine.device == torch.device(DEVICE), (name, index)
                assert mine.dtype == want.dtype and mine.shape == want.shape, (name, index)
                assert raw(mine) == raw(want), (name, index)
                try:
                    theirs = r[index]
                except Exception:  # an index safetensors' slices do not take (a negative one)
                    continue
                assert theirs.shape == mine.shape and raw(theirs) == raw(mine), (name, index)


@pytest.mark.parametrize("copy", [False, True])
def test_two_shards_make_the_whole_tensor(checkpoint, copy):
    path, _ = checkpoint
    expected = st_torch.load_file(str(path), device=DEVICE)
    parts = [hst.load_file(path, device=DEVICE, shard=(rank, 2), copy=copy) for rank in range(2)]
    seen = []
    hst.load_file(path, device=DEVICE, shard=(1, 2), progress=lambda done, total: seen.append((done, total)))
    for p in parts:
        assert same_order(list(p), expected)
    for name, full in expected.items():
        a, b = parts[0][name], parts[1][name]
        assert a.device == b.device == torch.device(DEVICE), name
        assert a.dtype == b.dtype == full.dtype, name
        if full.dim() == 0:
            assert a.shape == b.shape == full.shape and raw(a) == raw(b) == raw(full), name
            continue
        step = -(-full.shape[0] // 2)
        for rank, part in enumerate((a, b)):
            want = full[rank * step : (rank + 1) * step]
            assert part.shape == want.shape and raw(part) == raw(want), (name, rank)
        assert a.shape[0] + b.shape[0] == full.shape[0], name
        assert raw(a) + raw(b) == raw(full), name
    total = sum(t.nbytes for t in parts[1].values())
    assert seen and seen[-1] == (total, total)


def test_a_sharded_directory_loads_every_file(tmp_path):
    gen = torch.Generator().manual_seed(5)
    d = tmp_path / "model"
    d.mkdir()
    weight_map, expected = {}, {}
    for k in range(3):
        part = {f"model.layers.{k}.w{i}": make(gen, dtype, (k + 64, 96))
                for i, dtype in enumerate([torch.bfloat16, torch.float32, torch.float16, torch.int8])}
        part[f"model.layers.{k}.norm"] = make(gen, torch.bfloat16, (96,))
        name = f"model-{k + 1:05d}-of-00003.safetensors"
        st_torch.save_file(part, str(d / name))
        weight_map.update({n: name for n in part})
        expected.update(st_torch.load_file(str(d / name), device=DEVICE))
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    for copy in (False, True):
        seen = []
        got = hst.load_model_dir(d, device=DEVICE, copy=copy, progress=lambda a, b: seen.append((a, b)))
        torch.cuda.synchronize()
        assert_same(got, expected)
        total = sum(t.nbytes for t in expected.values())
        assert seen and max(a for a, _ in seen) == total and all(b == total for _, b in seen)
    one = hst.load_model_dir(d, device=DEVICE, shard=(1, 2), max_workers=1)
    for name, full in expected.items():
        step = -(-full.shape[0] // 2)
        assert raw(one[name]) == raw(full[step:]), name


RANK_SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    import hipfile
    from hipfile.safetensors import load_file
    from safetensors.torch import load_file as reference

    path, rank = sys.argv[1], int(sys.argv[2])
    assert not hipfile.runtime()["mock"]
    torch.cuda.init()
    mine = load_file(path, device="cuda:0", shard=(rank, 2))
    torch.cuda.synchronize()
    full = reference(path, device="cpu")
    assert sorted(mine) == sorted(full), "names differ"
    order = [n for n in full if full[n].numel()]  # empty tensors' ties come in any order
    assert [n for n in mine if n in set(order)] == order, "the order differs"

    def raw(t):
        if t.numel() == 0:
            return b""
        return t.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tobytes()

    for name, t in full.items():
        want = t if t.dim() == 0 else t[rank * -(-t.shape[0] // 2) : (rank + 1) * -(-t.shape[0] // 2)]
        got = mine[name]
        assert got.device == torch.device("cuda:0"), name
        assert got.dtype == want.dtype and got.shape == want.shape, (name, got.shape, want.shape)
        assert raw(got) == raw(want), name
    print("rank", rank, "ok", len(mine))
    """
)


def test_two_processes_each_load_their_shard(checkpoint):
    path, tensors = checkpoint
    procs = [subprocess.Popen([sys.executable, "-c", RANK_SCRIPT, str(path), str(rank)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(2)]
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=120)
            outs.append((p.returncode, out))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for rank, (code, out) in enumerate(outs):
        assert code == 0, f"rank {rank} failed:\n{out}"
        assert f"rank {rank} ok {len(tensors)}" in out


def test_saving_gpu_tensors_gives_safetensors_bytes(scratch):
    """hipfile.safetensors.save_file from GPU memory: the bytes safetensors.torch.save_file
    writes for the same tensors (every dtype both know, odd shapes), CuPy arrays too; the
    refusals are safetensors'."""
    gen = torch.Generator().manual_seed(5)
    tensors = {}
    for i, name in enumerate(TORCH_DTYPES + NEWER_DTYPES):
        dtype = getattr(torch, name, None)
        for j, shape in enumerate(SHAPES[:-1] if name == "float4_e2m1fn_x2" else SHAPES):
            t = make(gen, dtype, shape) if dtype is not None else None
            if t is not None and saved_by_safetensors(t):
                tensors[f"l{(i * 5 + j) % 7}.{name}.{j}"] = t.to(DEVICE)
    meta = {"format": "pt"}
    ours, theirs = scratch / "ours.safetensors", scratch / "theirs.safetensors"
    hst.save_file(tensors, ours, meta)
    st_torch.save_file({k: v.cpu() for k, v in tensors.items()}, str(theirs), meta)
    assert ours.read_bytes() == theirs.read_bytes()
    assert hst.save(tensors, meta) == theirs.read_bytes()
    back = hst.load_file(ours, device=DEVICE)
    assert all(raw(back[k]) == raw(v) for k, v in tensors.items())
    whole = torch.arange(64, dtype=torch.float32, device=DEVICE)
    with pytest.raises(ValueError):
        hst.save_file({"t": whole.reshape(8, 8).t()}, scratch / "x.safetensors")  # not contiguous
    with pytest.raises(RuntimeError):
        hst.save_file({"a": whole, "b": whole[8:16]}, scratch / "x.safetensors")  # shared memory
    hst.save_file({"a": whole[:8], "b": whole[8:16]}, scratch / "x.safetensors")  # apart: as safetensors
    assert (scratch / "x.safetensors").read_bytes() == st_torch.save({"a": whole[:8].cpu(), "b": whole[8:16].cpu()})
    cupy = pytest.importorskip("cupy")
    arrays = {"c": cupy.arange(100, dtype=cupy.float32), "d": cupy.ones((3, 4), dtype=cupy.int16)}
    hst.save_file(arrays, scratch / "cupy.safetensors")
    host = {k: cupy.asnumpy(v) for k, v in arrays.items()}
    assert (scratch / "cupy.safetensors").read_bytes() == st_numpy.save(host)
