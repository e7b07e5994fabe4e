"""One rank of a DCP process group over gloo, run by test_dcp.py (host memory) and by the GPU
bench under ``torchrun`` (GPU memory):

    python dcp_rank.py save|load PATH rows|cols [cpu|cuda] [SCALE]

with torch.distributed's environment variables (``torchrun`` sets them). Every rank makes the
same full state dict (``SCALE`` > 0 adds a float32 tensor of ``SCALE`` x 16 MiB) and holds its
part as DTensors made from local shards (no collective moves tensor data: gloo has none for GPU
tensors): ``rows`` splits each tensor by its first dimension, ``cols`` by its last, as
``torch.chunk`` does. ``save`` saves with hipfile.dcp's writer; ``load`` loads into zeroed
DTensors of the placement given (which may differ from the saved one: resharding) and checks
every element of the rank's part against the full state dict. On ``cuda`` each rank works on its
own CUDA stream. Prints one JSON line per rank: its bytes and seconds."""

import json
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard

import hipfile.dcp


def full_state(device: str = "cpu", scale: int = 0) -> dict:
    g = torch.Generator().manual_seed(11)
    state = {
        "w": torch.randn(37, 19, generator=g),
        "b": torch.randint(-1000, 1000, (23,), generator=g, dtype=torch.int32),
        "h": torch.randn(8, 6, generator=g).to(torch.bfloat16),
        "r": torch.randn(5, generator=g, dtype=torch.float64),
        "nested": {"m": torch.arange(60, dtype=torch.int64).reshape(3, 4, 5)},
        "step": 7,
    }
    if scale:
        state["big"] = torch.randn(scale * 1024 + 3, 4096, generator=g)
    return {k: to(v, device) for k, v in state.items()}


def to(value, device):
    if isinstance(value, dict):
        return {k: to(v, device) for k, v in value.items()}
    return value.to(device) if torch.is_tensor(value) else value


def zeroed(state):
    """The same structure, every tensor zeros and every number 0."""
    if isinstance(state, dict):
        return {k: zeroed(v) for k, v in state.items()}
    return torch.zeros_like(state) if torch.is_tensor(state) else 0


def part(t: torch.Tensor, placement: str, rank: int, world: int) -> torch.Tensor:
    """The rank's part of ``t`` under ``placement``, as DTensor's ``Shard`` cuts it."""
    dim = 0 if placement == "rows" else t.dim() - 1
    pieces = torch.chunk(t, world, dim)
    if rank < len(pieces):
        return pieces[rank].contiguous()
    shape = list(t.shape)
    shape[dim] = 0
    return t.new_empty(shape)


def sharded(full: dict, mesh, placement: str) -> dict:
    rank, world = dist.get_rank(), dist.get_world_size()

    def shard(t):
        dim = 0 if placement == "rows" else t.dim() - 1
        local = part(t, placement, rank, world)
        return DTensor.from_local(local, mesh, [Shard(dim)], run_check=False, shape=t.shape, stride=t.stride())

    out = {k: shard(v) if torch.is_tensor(v) and k != "r" else v for k, v in full.items()}
    out["r"] = DTensor.from_local(full["r"], mesh, [Replicate()], run_check=False)
    out["nested"] = {"m": shard(full["nested"]["m"])}
    return out


def main(op: str, path: str, placement: str, device: str = "cpu", scale: str = "0") -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        if device == "cuda":
            torch.cuda.set_device(0)
            torch.cuda.set_stream(torch.cuda.Stream())  # each rank its own stream
        mesh = init_device_mesh(device, (world,))
        full = full_state(device, int(scale))
        state = sharded(full if op == "save" else zeroed(full), mesh, placement)
        local = sum(v.to_local().nbytes for v in state.values() if isinstance(v, DTensor))
        dist.barrier()
        start = time.perf_counter()
        if op == "save":
            dcp.save(state, storage_writer=hipfile.dcp.StorageWriter(path))
        else:
            dcp.load(state, storage_reader=hipfile.dcp.StorageReader(path))
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        if op == "load":
            for name in [k for k in full if k not in ("nested", "step")]:
                want = full[name] if name == "r" else part(full[name], placement, rank, world)
                assert torch.equal(state[name].to_local(), want), f"rank {rank}: {name} differs"
            assert torch.equal(state["nested"]["m"].to_local(), part(full["nested"]["m"], placement, rank, world))
            assert state["step"] == 7, state["step"]
        print(json.dumps({"rank": rank, "world": world, "op": op, "placement": placement, "device": device,
                          "local_bytes": local, "seconds": round(seconds, 3)}), flush=True)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:6])
