"""Read-once loading over a process group, on one GPU machine: run under torchrun,

    torchrun --standalone --nproc-per-node N group_bench.py CKPT [--cache auto] [--backend gloo]
        [--devices shared|own]

every rank loads the safetensors file CKPT into cuda:0 (`shared`, each rank its own CUDA stream;
`own`: each rank into cuda:LOCAL_RANK, as NCCL needs: `--backend cpu:gloo,cuda:nccl`) three
ways, the page cache dropped before each (by rank 0, as root) and the block devices' read bytes
counted around it (/sys/block/*/stat, rank 0): ``group`` (hipfile.safetensors.load_file with
process_group= a group of all ranks: each byte read by one rank, broadcast to the others),
``alone`` (each rank load_file on its own, at once) and ``alone-bypass`` (the same with
cache='bypass': O_DIRECT, no sharing through the page cache). After the group load every
tensor on every rank is compared bitwise with a load without a group. Rank 0 prints one JSON
line per way: wall seconds (slowest rank), GB/s of the file per rank, disk bytes / file size.
"""

import argparse
import glob
import json
import os
import time

import torch
import torch.distributed as dist

import hipfile.safetensors as hs
from save_bench import drop  # the page cache written back and dropped (as root)


def disk_bytes() -> int:
    total = 0
    for stat in glob.glob("/sys/block/*/stat"):
        if "/loop" in stat or "/ram" in stat:
            continue
        with open(stat) as f:
            total += int(f.read().split()[2]) * 512  # sectors read
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ckpt")
    p.add_argument("--cache", default=None)
    p.add_argument("--backend", default="gloo")
    p.add_argument("--devices", choices=["shared", "own"], default="shared")
    a = p.parse_args()
    dist.init_process_group(a.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if a.devices == "own" else "cuda:0"
    torch.cuda.set_device(device)
    torch.cuda.set_stream(torch.cuda.Stream())
    group = dist.new_group(list(range(world)), backend=a.backend)
    size = os.path.getsize(a.ckpt)
    ways = {
        "group": lambda: hs.load_file(a.ckpt, device=device, cache=a.cache, process_group=group),
        "alone": lambda: hs.load_file(a.ckpt, device=device, cache=a.cache),
        "alone-bypass": lambda: hs.load_file(a.ckpt, device=device, cache="bypass"),
    }
    for way, load in ways.items():
        if rank == 0:
            drop()
        dist.barrier()
        before = disk_bytes()
        start = time.perf_counter()
        tensors = load()
        torch.cuda.synchronize()
        seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        disk = disk_bytes() - before
        same = None
        if way == "group":
            reference = hs.load_file(a.ckpt, device=device)
            ok = all(torch.equal(tensors[k].reshape(-1).view(torch.uint8), v.reshape(-1).view(torch.uint8))
                     for k, v in reference.items()) and list(tensors) == list(reference)
            flags = torch.tensor([int(ok)])
            dist.all_reduce(flags)
            same = int(flags.item()) == world
            del reference
        del tensors
        torch.cuda.empty_cache()
        if rank == 0:
            row = {"way": way, "world": world, "backend": a.backend, "devices": a.devices, "cache": a.cache,
                   "file_bytes": size,
                   "wall_s": round(seconds.item(), 3), "gbps_per_rank": round(size / seconds.item() / 1e9, 2),
                   "disk_over_file": round(disk / size, 3)}
            if same is not None:
                row["every_tensor_bitwise_on_every_rank"] = same
            print(json.dumps(row), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
