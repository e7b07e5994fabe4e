"""Read-once loading over a process group (``load_file``/``load_model_dir`` with
``process_group=``), 2 and 3 processes over gloo, host memory: every tensor bitwise equal to
``safetensors``' load on every rank, the file read once across the ranks (the library's
statistics), shards, and a rank that dies mid-load making the others raise, not hang."""

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")
st_numpy = pytest.importorskip("safetensors.numpy")

from ranks import run  # noqa: E402

ENV = {"HIPFILE_STATS_LEVEL": "1"}


def checkpoint(path, seed=1, layers=6, prefix=""):
    rng = np.random.default_rng(seed)
    tensors = {}
    for i in range(layers):
        tensors[f"{prefix}layers.{i}.w"] = rng.standard_normal((33 + i, 61), dtype=np.float32)
        tensors[f"{prefix}layers.{i}.b"] = rng.integers(-9, 9, (7 * i + 1,), dtype=np.int16)
    tensors[f"{prefix}scalar"] = np.array(3.5, dtype=np.float64)
    tensors[f"{prefix}empty"] = np.zeros((0, 3), dtype=np.float32)
    st_numpy.save_file(tensors, str(path))
    return path


def reports(results):
    return [json.loads(line) for _, out in results for line in out.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("world", [2, 3])
def test_a_file_loads_on_every_rank_read_once(tmp_path, world):
    path = checkpoint(tmp_path / "model.safetensors")
    got = reports(run("load_rank.py", world, "file", path, "cpu", 4096, env=ENV))
    assert len(got) == world and all(r.get("ok") for r in got), got
    data = os.path.getsize(path) - 8 - int.from_bytes(path.read_bytes()[:8], "little")
    # Each byte of the data area read by one rank: together exactly the data area.
    assert sum(r["read_bytes"] for r in got) == data, got
    assert all(r["read_bytes"] > 0 for r in got), got  # spread: each rank read some


@pytest.mark.parametrize("world", [2, 3])
def test_an_object_loads_on_every_rank_read_once_from_the_store(tmp_path, world):
    from stores import RangeServer

    root = tmp_path / "served"
    root.mkdir()
    path = checkpoint(root / "model.safetensors")
    server = RangeServer(root)
    try:
        url = f"{server.url}/model.safetensors"
        got = reports(run("load_rank.py", world, "url", f"{url}|{path}", "cpu", 4096, env=ENV))
        assert len(got) == world and all(r.get("ok") for r in got), got
        header = 8 + int.from_bytes(path.read_bytes()[:8], "little")
        data = os.path.getsize(path) - header
        # Each rank reads the header (its length, then the JSON); the data area goes once from
        # the store, the pieces round the ranks.
        assert server.served == data + world * header, (server.served, data, header)
    finally:
        server.stop()


def test_a_directory_loads_with_pieces_round_the_ranks(tmp_path):
    d = tmp_path / "ckpt"
    d.mkdir()
    for k in range(3):
        checkpoint(d / f"model-0000{k + 1}-of-00003.safetensors", seed=k, layers=2 + k, prefix=f"f{k}.")
    got = reports(run("load_rank.py", 2, "dir", d, "cpu", 8192, env=ENV))
    assert len(got) == 2 and all(r.get("ok") for r in got), got
    assert all(r["read_bytes"] > 0 for r in got), got


def test_shards_with_a_group_read_only_their_rows(tmp_path):
    path = checkpoint(tmp_path / "model.safetensors")
    got = reports(run("load_rank.py", 2, "shard", path, "cpu", 4096, env=ENV))
    assert len(got) == 2 and all(r.get("ok") for r in got), got


def test_a_rank_that_dies_makes_the_others_raise(tmp_path):
    path = checkpoint(tmp_path / "model.safetensors", layers=12)
    results = run("load_rank.py", 3, "die", path, "cpu", 4096, env=ENV, check=False, timeout=120)
    codes = [code for code, _ in results]
    assert codes[1] == 3, results
    others = [r for r in reports(results) if r["rank"] != 1]
    assert len(others) == 2 and all("error" in r for r in others), results
    assert codes[0] != 0 and codes[2] != 0


def test_a_group_is_for_pytorch_and_needs_torch_distributed(tmp_path):
    import hipfile.safetensors as hs

    path = checkpoint(tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match="not initialized"):
        hs.load_file(path, device="cpu", process_group=object())
    with pytest.raises(ValueError, match="PyTorch"):
        hs.load_file(path, framework="np", process_group=object())
