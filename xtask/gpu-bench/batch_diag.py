#!/usr/bin/env python3
"""Where the time of one Python batch goes: 128 random 1 MiB reads of a warm file as one
`read_batch`, split into the Python side (entries checked, before the extension is called), the
extension's call (the driver's batch) and after; per run, best and median of --runs. --imports
picks what the process has loaded beside hipfile (bare: hipfile's own DeviceBuffer; cupy;
torch+cupy, as python_bench.py), to see whether they cost the library anything. Also the same
batch handed to the extension ready-made (no Python per entry), and futures.

    python3 batch_diag.py FILE [--imports bare|cupy|full] [--runs 15]
"""
import argparse
import json
import os
import random
import statistics
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--imports", default="full")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--size-gib", type=float, default=4)
    a = p.parse_args()
    out = {"imports": a.imports, "cpus before imports": len(os.sched_getaffinity(0))}
    import hipfile
    from hipfile import _api

    size = int(a.size_gib * (1 << 30))
    if a.imports == "bare":
        dev = hipfile.DeviceBuffer(size)
    else:
        import cupy as cp

        if a.imports == "full":
            import torch

            torch.empty(1, device="cuda:0")
        dev = cp.empty(size, dtype=cp.uint8)
    out["cpus after imports"] = len(os.sched_getaffinity(0))
    with open(a.file, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass
    chunk, n = 1 << 20, 128
    rng = random.Random(11)
    offs = [rng.randrange(0, size // chunk) * chunk for _ in range(n)]
    native = _api._hipfile.batch
    marks = {}

    def timed(*args):
        marks["in"] = time.perf_counter()
        r = native(*args)
        marks["out"] = time.perf_counter()
        return r

    def summary(rows):
        cols = list(zip(*rows))
        return {
            "best GB/s": round(chunk * n / min(cols[0]) / 1e9, 2),
            "median GB/s": round(chunk * n / statistics.median(cols[0]) / 1e9, 2),
            "median ms (total, before, native, after)": [round(statistics.median(c) * 1e3, 3) for c in cols],
        }

    with hipfile.open(a.file) as f:
        f.read(dev, 256 << 20)  # lanes up
        for label, reg in (("unregistered", False), ("registered", True)):
            r = hipfile.register(dev) if reg else None
            _api._hipfile.batch = timed
            rows = []
            for _ in range(a.runs):
                entries = [(dev, chunk, o, i * chunk) for i, o in enumerate(offs)]
                t0 = time.perf_counter()
                f.read_batch(entries)
                t1 = time.perf_counter()
                rows.append((t1 - t0, marks["in"] - t0, marks["out"] - marks["in"], t1 - marks["out"]))
            _api._hipfile.batch = native
            out[f"batch {label}"] = summary(rows)
            # The extension's call alone, entries prepared once.
            m = _api.memory_of(dev, False)
            ready = [(False, f._check(), m.addr, m.nbytes, chunk, o, i * chunk) for i, o in enumerate(offs)]
            rows = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                native(ready, None)
                t1 = time.perf_counter()
                rows.append((t1 - t0, 0.0, t1 - t0, 0.0))
            out[f"native batch {label}"] = summary(rows)
            rows = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                futs = [f.pread(dev, chunk, o, i * chunk) for i, o in enumerate(offs)]
                t1 = time.perf_counter()
                assert all(x.get() == chunk for x in futs)
                t2 = time.perf_counter()
                rows.append((t2 - t0, t1 - t0, t2 - t1, 0.0))
            out[f"futures {label} (total, issuing, waiting)"] = summary(rows)
            if r is not None:
                r.close()
    out["threads in process"] = len(os.listdir("/proc/self/task"))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
