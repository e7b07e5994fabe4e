"""Loading one checkpoint from several processes of one machine.

  group  read-once loading over a process group, under torchrun: each byte read by one rank and
         broadcast, beside each rank loading alone (shared page cache, and bypass)
  ranks  tensor-parallel loading: RANKS processes each loading its shard of every tensor, beside
         one process loading the whole file
"""

import multiprocessing as mp
import os
import time

from benchlib import counts, disk_read_bytes, drop, emit, subcommand, warm


def register(sub):
    p = subcommand(sub, "group", group, "read-once loading over a torch.distributed group (run under torchrun)",
                   GROUP_DOC)
    p.add_argument("ckpt")
    p.add_argument("--cache", default=None)
    p.add_argument("--backend", default="gloo")
    p.add_argument("--devices", choices=["shared", "own"], default="shared")

    p = subcommand(sub, "ranks", ranks, "tensor-parallel loading: each process its shard, beside one process",
                   RANKS_DOC)
    p.add_argument("file")
    counts(p, ranks=2, runs=3)


GROUP_DOC = """Read-once loading over a process group, on one GPU machine: run under torchrun,

    torchrun --standalone --nproc-per-node N harness.py group CKPT [--cache auto] [--backend gloo]
        [--devices shared|own]

every rank loads the safetensors file CKPT into cuda:0 (`shared`, each rank its own CUDA stream;
`own`: each rank into cuda:LOCAL_RANK, as NCCL needs: `--backend cpu:gloo,cuda:nccl`) three
ways, the page cache dropped before each (by rank 0, as root) and the block devices' read bytes
counted around it (rank 0): ``group`` (hipfile.safetensors.load_file with process_group= a group
of all ranks: each byte read by one rank, broadcast to the others), ``alone`` (each rank
load_file on its own, at once) and ``alone-bypass`` (the same with cache='bypass': O_DIRECT, no
sharing through the page cache). After the group load every tensor on every rank is compared
bitwise with a load without a group. Rank 0 prints one JSON line per way: wall seconds (slowest
rank), GB/s of the file per rank, disk bytes / file size.
"""

RANKS_DOC = """Tensor-parallel loading: RANKS processes, each loading its `shard=(rank, RANKS)` of every
tensor of one safetensors file onto GPU `rank % GPUS` with hipfile.safetensors, against one
process loading the whole file onto GPU 0 (the file warm; GB/s = file bytes / seconds / 1e9).

    harness.py ranks FILE [--ranks 2] [--runs 3]

Each process initialises CUDA and opens hipfile's driver (a first small load) before the
timed rounds; the rounds start together (a barrier), and a round's time runs from the barrier
to the last rank's end. Every rank checks its shard of two tensors against safetensors' own.
"""


def group(a):
    import torch
    import torch.distributed as dist

    import hipfile.safetensors as hs

    dist.init_process_group(a.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if a.devices == "own" else "cuda:0"
    torch.cuda.set_device(device)
    torch.cuda.set_stream(torch.cuda.Stream())
    pg = dist.new_group(list(range(world)), backend=a.backend)
    size = os.path.getsize(a.ckpt)
    ways = {
        "group": lambda: hs.load_file(a.ckpt, device=device, cache=a.cache, process_group=pg),
        "alone": lambda: hs.load_file(a.ckpt, device=device, cache=a.cache),
        "alone-bypass": lambda: hs.load_file(a.ckpt, device=device, cache="bypass"),
    }
    for way, load in ways.items():
        if rank == 0:
            drop()
        dist.barrier()
        before = disk_read_bytes()
        start = time.perf_counter()
        tensors = load()
        torch.cuda.synchronize()
        seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        disk = disk_read_bytes() - before
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
            emit(row)
    dist.destroy_process_group()


def rank_main(path, rank, ranks, runs, barrier, out):
    import torch

    from hipfile.safetensors import load_file, safe_open

    gpus = torch.cuda.device_count()
    device = f"cuda:{rank % gpus}"
    torch.empty(1, device=device)
    with safe_open(path, framework="pt", device=device) as f:  # opens the driver, outside the timing
        first = f.keys()[0]
        f.get_slice(first)[0:1]
    times = []
    for _ in range(runs):
        barrier.wait()
        start = time.perf_counter()
        got = load_file(path, device=device, shard=(rank, ranks) if ranks > 1 else None)
        torch.cuda.synchronize(device)
        end = time.perf_counter()
        times.append((start, end))
        check = got
        del got
    from safetensors import safe_open as st_open

    with st_open(path, framework="pt", device="cpu") as ref:
        for name in list(check)[:1] + list(check)[-1:]:
            whole = ref.get_tensor(name)
            part = -(-whole.shape[0] // ranks) if whole.dim() else None
            want = whole if part is None else whole[rank * part : (rank + 1) * part]
            assert torch.equal(check[name].cpu(), want), name
    out.put((rank, device, times))


def run_ranks(path, ranks, runs):
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(ranks), ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(path, r, ranks, runs, barrier, out)) for r in range(ranks)]
    for p in procs:
        p.start()
    results = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(60)
    size = os.path.getsize(path)
    rounds = []
    for i in range(runs):
        start = min(times[i][0] for _, _, times in results)
        end = max(times[i][1] for _, _, times in results)
        rounds.append(round(size / (end - start) / 1e9, 3))
    return {"ranks": ranks, "devices": sorted({d for _, d, _ in results}), "gbps runs": rounds, "best gbps": max(rounds)}


def ranks(a):
    warm(a.file)
    one = run_ranks(a.file, 1, a.runs)
    many = run_ranks(a.file, a.ranks, a.runs)
    emit({"one process": one, f"{a.ranks} ranks": many, "ratio": round(many["best gbps"] / one["best gbps"], 3)},
         indent=1)

