"""PyTorch's distributed checkpoint over hipfile-rs (``hipfile.dcp``): round trips of plain and
sharded state dicts, processes over gloo, resharding, ``async_save``'s snapshot, and both ways
between our storage and PyTorch's ``FileSystemWriter``/``FileSystemReader``. CPU tensors (host
memory) here; the same code on the GPU in the GPU machine's bench."""

import os
import pickle
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
dcp = pytest.importorskip("torch.distributed.checkpoint")
hypothesis = pytest.importorskip("hypothesis")

import hipfile.dcp  # noqa: E402  (after the skips: it needs PyTorch)
from ranks import run  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = [
    torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8,
    torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64,
]


@pytest.fixture(autouse=True)
def quiet():
    # Without a process group DCP runs in one process and says so; PyTorch's overwrite notice.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def random_tensor(g, dtype, shape):
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)


def state_dict():
    g = torch.Generator().manual_seed(3)
    sd = {f"t_{str(d).split('.')[-1]}": random_tensor(g, d, (33, 7)) for d in DTYPES}
    sd["scalar"] = torch.tensor(2.5)
    sd["empty"] = torch.zeros(0, 4)
    sd["transposed"] = torch.randn(5, 9, generator=g).t()  # not contiguous
    sd["nested"] = {"inner": torch.arange(10, dtype=torch.int64), "note": "hello", "n": 3}
    sd["list"] = [1, 2, 3]
    return sd


def zeroed(sd):
    if isinstance(sd, dict):
        return {k: zeroed(v) for k, v in sd.items()}
    if torch.is_tensor(sd):
        return torch.zeros_like(sd)
    return None if not isinstance(sd, (int, float)) else 0


def assert_same(got, want, where=""):
    if isinstance(want, dict):
        assert set(got) == set(want), where
        for k in want:
            assert_same(got[k], want[k], f"{where}.{k}")
    elif torch.is_tensor(want):
        assert got.dtype == want.dtype and got.shape == want.shape, where
        as_bytes = lambda t: t.contiguous().reshape(-1).view(torch.uint8)  # noqa: E731  (NaN == NaN, -0 != 0)
        assert torch.equal(as_bytes(got), as_bytes(want)), where
    else:
        assert got == want, where


def test_a_state_dict_round_trips_bit_for_bit(tmp_path):
    sd = state_dict()
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(tmp_path))
    out = zeroed(sd)
    dcp.load(out, storage_reader=hipfile.dcp.StorageReader(tmp_path))
    assert_same(out, sd)


def test_a_durable_save_writes_durably_not_buffered_then_synced(tmp_path):
    """Durable (the default) means durable writes of every tensor's bytes, not buffered ones
    synced at the end (0.6x on an H100, docs/bench/2026-12-06-h100-saves); not durable, none."""
    g = torch.Generator().manual_seed(5)
    sd = {f"t{i}": torch.randn(1000 + i, 33, generator=g) for i in range(4)}
    size = sum(t.numel() * t.element_size() for t in sd.values())
    durable_bytes = lambda: hipfile.stats()["counters"]["DurableWriteBytes"]  # noqa: E731
    before = durable_bytes()
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(tmp_path / "durable"))
    assert durable_bytes() - before >= size
    before = durable_bytes()
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(tmp_path / "cached", durable=False))
    assert durable_bytes() == before


def test_tensors_are_stored_raw_at_page_offsets(tmp_path):
    sd = {"a": torch.arange(1000, dtype=torch.int32), "b": torch.arange(7, dtype=torch.float64)}
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(tmp_path))
    with open(tmp_path / ".metadata", "rb") as f:
        metadata = pickle.load(f)
    data = (tmp_path / "__0_0.distcp").read_bytes()
    for index, info in metadata.storage_data.items():
        assert info.transform_descriptors == [hipfile.dcp.RAW]
        assert info.offset % 4096 == 0
        assert data[info.offset : info.offset + info.length] == sd[index.fqn].numpy().tobytes()


def test_a_ranks_tensors_spread_over_files_by_size(tmp_path, monkeypatch):
    monkeypatch.setattr(hipfile.dcp, "_FILE_BYTES", 1 << 20)  # files of at least 1 MiB, not 256
    g = torch.Generator().manual_seed(5)
    sd = {f"t{i}": torch.randn(n, 1024, generator=g) for i, n in enumerate([512, 256, 256, 128, 64, 64, 3])}
    sd["step"] = 9
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(tmp_path, files=3))
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [".metadata", "__0_0.distcp", "__0_1.distcp", "__0_2.distcp"]
    sizes = [(tmp_path / name).stat().st_size for name in files[1:]]
    # 2, 1, 1, 0.5, 0.25, 0.25 MiB largest first to the emptiest file: 2 | 1 + 0.5 | 1 + 0.25 + 0.25.
    assert sizes[0] < (2 << 20) + 8192 and min(sizes) >= 1.5 * (1 << 20), sizes
    out = zeroed(sd)
    dcp.load(out, storage_reader=hipfile.dcp.StorageReader(tmp_path))
    assert_same(out, sd)
    with pytest.raises(ValueError, match="files"):
        hipfile.dcp.StorageWriter(tmp_path, files=0)


def test_a_filesystemwriter_checkpoint_loads_with_ours(tmp_path):
    sd = state_dict()
    dcp.save(sd, storage_writer=dcp.FileSystemWriter(tmp_path))
    out = zeroed(sd)
    dcp.load(out, storage_reader=hipfile.dcp.StorageReader(tmp_path))
    assert_same(out, sd)


def test_pytorchs_reader_refuses_ours_by_name(tmp_path):
    sd = {"a": torch.ones(4)}
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(tmp_path))
    from torch.distributed.checkpoint.api import CheckpointException  # a BaseException

    with pytest.raises(CheckpointException) as refused:
        dcp.load({"a": torch.zeros(4)}, storage_reader=dcp.FileSystemReader(tmp_path))
    # DCP wraps each rank's error: ValueError("Unknown extension name='hipfile-raw'").
    assert "hipfile-raw" in str(refused.value) + repr(getattr(refused.value, "failures", ""))


def test_a_failed_save_leaves_no_checkpoint_to_load(tmp_path, monkeypatch):
    from torch.distributed.checkpoint.api import CheckpointException

    def fails(self, entries, timeout=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(hipfile.File, "write_batch", fails)
    with pytest.raises(CheckpointException) as failed:
        dcp.save({"a": torch.ones(4)}, storage_writer=hipfile.dcp.StorageWriter(tmp_path))
    assert "No space left" in repr(failed.value.failures)
    assert not (tmp_path / ".metadata").exists()  # written last: a torn save is no checkpoint


def test_a_truncated_file_is_an_error_not_a_short_tensor(tmp_path):
    from torch.distributed.checkpoint.api import CheckpointException

    sd = {"a": torch.arange(4096, dtype=torch.float32), "b": torch.arange(4096, dtype=torch.int64)}
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(tmp_path))
    data = tmp_path / "__0_0.distcp"
    data.write_bytes(data.read_bytes()[: data.stat().st_size - 100])
    with pytest.raises(CheckpointException) as failed:
        dcp.load({"a": torch.zeros(4096), "b": torch.zeros(4096, dtype=torch.int64)},
                 storage_reader=hipfile.dcp.StorageReader(tmp_path))
    assert "bytes read" in repr(failed.value.failures)


def test_a_part_of_a_stored_tensor_loads_into_a_view(tmp_path):
    # Stored whole; loaded into a state dict whose tensor is a column slice (not contiguous).
    full = torch.arange(6 * 8, dtype=torch.float32).reshape(6, 8)
    dcp.save({"m": full}, storage_writer=hipfile.dcp.StorageWriter(tmp_path))
    big = torch.zeros(6, 16)
    target = big[:, 4:12]
    dcp.load({"m": target}, storage_reader=hipfile.dcp.StorageReader(tmp_path))
    assert torch.equal(big[:, 4:12], full) and not big[:, :4].any() and not big[:, 12:].any()


@pytest.mark.parametrize("staging", ["auto", "device", "host"])
def test_async_save_returns_with_a_snapshot(tmp_path, staging):
    sd = {"w": torch.arange(4096, dtype=torch.float32), "n": {"b": torch.ones(3, dtype=torch.int64)}}
    want = {"w": sd["w"].clone(), "n": {"b": sd["n"]["b"].clone()}}
    fut = dcp.async_save(sd, storage_writer=hipfile.dcp.StorageWriter(tmp_path, staging=staging))
    sd["w"].add_(1)  # the caller goes on at once
    sd["n"]["b"].zero_()
    fut.result(timeout=120)
    out = zeroed(want)
    dcp.load(out, storage_reader=hipfile.dcp.StorageReader(tmp_path))
    assert_same(out, want)


def test_bad_staging_is_refused(tmp_path):
    with pytest.raises(ValueError, match="staging"):
        hipfile.dcp.StorageWriter(tmp_path, staging="gpu")


def ranks(world, op, path, placement):
    """``dcp_rank.py`` in ``world`` processes of one gloo group."""
    run("dcp_rank.py", world, op, path, placement)


def test_two_ranks_save_and_load_resharded(tmp_path):
    sys.path.insert(0, HERE)
    import dcp_rank

    ranks(2, "save", tmp_path, "rows")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    ranks(2, "load", tmp_path, "rows")  # as saved
    ranks(2, "load", tmp_path, "cols")  # each rank's part cut across both ranks' files
    ranks(3, "load", tmp_path, "rows")  # 2 -> 3
    # 2 -> 1: one process, plain tensors.
    full = dcp_rank.full_state()
    out = zeroed(full)
    dcp.load(out, storage_reader=hipfile.dcp.StorageReader(tmp_path))
    assert_same(out, full)


shapes = st.lists(st.integers(0, 9), min_size=0, max_size=3)


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), st.tuples(st.sampled_from(DTYPES), shapes), max_size=6),
       st.integers(0, 2**31))
def test_random_state_dicts_round_trip(tmp_path_factory, entries, seed):
    g = torch.Generator().manual_seed(seed)
    sd = {name: random_tensor(g, dtype, shape) for name, (dtype, shape) in entries.items()}
    path = tmp_path_factory.mktemp("ckpt")
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(path, durable=False))
    out = zeroed(sd)
    dcp.load(out, storage_reader=hipfile.dcp.StorageReader(path))
    assert_same(out, sd)


def test_a_state_dict_round_trips_through_object_storage(s3_store, tmp_path, monkeypatch):
    monkeypatch.setattr(hipfile.dcp, "_FILE_BYTES", 1 << 10)  # several files per rank
    sd = state_dict()
    prefix = f"s3://hipfile/dcp-{os.getpid()}/ckpt/"
    dcp.save(sd, storage_writer=hipfile.dcp.StorageWriter(prefix, files=3))
    names = sorted(u[len(prefix):] for u, _ in hipfile._remote.listdir(prefix))
    assert names == [".metadata", "__0_0.distcp", "__0_1.distcp", "__0_2.distcp"], names
    out = zeroed(sd)
    dcp.load(out, storage_reader=hipfile.dcp.StorageReader(prefix))
    assert_same(out, sd)
    # Through the node cache, the same.
    monkeypatch.setenv("HIPFILE_REMOTE_CACHE", str(tmp_path / "cache"))
    out = zeroed(sd)
    dcp.load(out, storage_reader=hipfile.dcp.StorageReader(prefix))
    assert_same(out, sd)
    assert len(hipfile._remote.cache_entries()) == 3  # the tensors' files; the metadata is read directly
