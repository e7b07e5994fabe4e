"""Tensor-parallel loading: RANKS processes, each loading its `shard=(rank, RANKS)` of every
tensor of one safetensors file onto GPU `rank % GPUS` with hipfile.safetensors, against one
process loading the whole file onto GPU 0 (the file warm; GB/s = file bytes / seconds / 1e9).

    python3 ranks_bench.py FILE [--ranks 2] [--runs 3]

Each process initialises CUDA and opens hipfile's driver (a first small load) before the
timed rounds; the rounds start together (a barrier), and a round's time runs from the barrier
to the last rank's end. Every rank checks its shard of two tensors against safetensors' own.
"""

import json
import multiprocessing as mp
import os
import time

from save_bench import options


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


def run(path, ranks, runs):
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


def main():
    a = options("file", ranks=2, runs=3)
    with open(a.file, "rb", buffering=0) as f:  # warm
        while f.read(64 << 20):
            pass
    one = run(a.file, 1, a.runs)
    many = run(a.file, a.ranks, a.runs)
    print(json.dumps({"one process": one, f"{a.ranks} ranks": many,
                      "ratio": round(many["best gbps"] / one["best gbps"], 3)}, indent=1))


if __name__ == "__main__":
    main()
