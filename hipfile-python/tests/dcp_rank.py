"""One rank of the DCP tests' process groups (gloo, host memory), run by test_dcp.py:
``python dcp_rank.py save|load PATH PLACEMENT`` with torch.distributed's environment variables.

Every rank builds the same full state dict; ``save`` saves it sharded (``PLACEMENT`` ``rows``:
each tensor split by its first dimension, ``cols``: by its last) with hipfile.dcp's writer;
``load`` loads a checkpoint into the sharding ``PLACEMENT`` names and checks every element of
every tensor, on every rank, against the full state dict."""

import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

import hipfile.dcp


def full_state() -> dict:
    g = torch.Generator().manual_seed(11)
    return {
        "w": torch.randn(37, 19, generator=g),
        "b": torch.randint(-1000, 1000, (23,), generator=g, dtype=torch.int32),
        "h": torch.randn(8, 6, generator=g).to(torch.bfloat16),
        "r": torch.randn(5, generator=g, dtype=torch.float64),
        "nested": {"m": torch.arange(60, dtype=torch.int64).reshape(3, 4, 5)},
        "step": 7,
    }


def zeroed(state):
    """The same structure, every tensor zeros and every number 0."""
    if isinstance(state, dict):
        return {k: zeroed(v) for k, v in state.items()}
    return torch.zeros_like(state) if torch.is_tensor(state) else 0


def sharded(full: dict, mesh, placement: str) -> dict:
    def shard(t):
        dim = 0 if placement == "rows" else t.dim() - 1
        return distribute_tensor(t, mesh, [Shard(dim)])

    return {
        "w": shard(full["w"]),
        "b": shard(full["b"]),
        "h": shard(full["h"]),
        "r": distribute_tensor(full["r"], mesh, [Replicate()]),
        "nested": {"m": shard(full["nested"]["m"])},
        "step": full["step"],
    }


def main(op: str, path: str, placement: str) -> None:
    dist.init_process_group("gloo")
    try:
        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        full = full_state()
        if op == "save":
            dcp.save(sharded(full, mesh, placement), storage_writer=hipfile.dcp.StorageWriter(path))
            return
        state = sharded(zeroed(full), mesh, placement)
        dcp.load(state, storage_reader=hipfile.dcp.StorageReader(path))
        for name in ("w", "b", "h", "r"):
            got = state[name].full_tensor()
            assert torch.equal(got, full[name]), f"rank {dist.get_rank()}: {name} differs"
        assert torch.equal(state["nested"]["m"].full_tensor(), full["nested"]["m"]), "nested.m differs"
        assert state["step"] == 7, state["step"]
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:4])
