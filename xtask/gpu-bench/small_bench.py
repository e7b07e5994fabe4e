#!/usr/bin/env python3
"""Small random reads of a warm file into GPU memory, KvikIO beside hipfile: 4 KiB from 1 and 16
threads, 64 KiB from 16 threads. Both libraries are called the same way from Python threads
(each thread its own slice of one CuPy array, a read waited for before the next: KvikIO's
`pread(...).get()`, hipfile's `File.read`), and the Rust API's figure (`hipfile bench`, the
same shape) is given beside, with its CPU seconds per GB (the tool's own figure). Prints one JSON object.

    python3 small_bench.py --hipfile BIN --file DATA [--rounds 2] [--kvikio]
"""
import argparse
import json
import os
import random
import subprocess
import threading
import time

import cupy as cp

SHAPES = [(4096, 1, 20000), (4096, 16, 4000), (65536, 16, 2000)]  # (bytes, threads, calls per thread)


def together(work, n, after=None):
    """Seconds from the moment `n` threads are all ready until all are done (and `after()` has
    run): thread `i` first runs `work(i)`, its setup, untimed, which returns what it then runs
    with the others."""
    barrier = threading.Barrier(n + 1)

    def run(i):
        go = work(i)
        barrier.wait()
        go()

    ths = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in ths:
        th.start()
    barrier.wait()
    start = time.perf_counter()
    for th in ths:
        th.join()
    if after:
        after()
    return time.perf_counter() - start


def threaded(read, size, threads, calls, file_size):
    """GB/s and µs per call when `threads` threads each make `calls` reads of `size` bytes."""
    slots = file_size // size

    def work(t):
        rng = random.Random(t)
        offs = [rng.randrange(slots) * size for _ in range(calls)]
        return lambda: [read(t, o) for o in offs]

    secs = together(work, threads)
    return {"gbps": round(size * calls * threads / secs / 1e9, 3), "us_per_call": round(secs / calls * 1e6, 2)}


def rust(a, size, threads, calls):
    cmd = [a.hipfile, "bench", "--file", a.file, "--mode", "randread", "--io-size", str(size),
           "--count", str(calls * threads), "--threads", str(threads), "--runs", "3", "--json", "--no-verify"]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["results"][0]
    return {"gbps": r["best_gbps"], "us_per_call": round(size * threads / (r["best_gbps"] * 1e9) * 1e6, 2),
            "cpu_s_per_gb": r["cpu_s_per_gb"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hipfile", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--kvikio", action="store_true")
    a = ap.parse_args()
    import hipfile

    file_size = os.path.getsize(a.file)
    dev = cp.empty(16 << 16, dtype=cp.uint8)
    res = {}
    for r in range(a.rounds):
        for size, threads, calls in SHAPES:
            key = f"{size // 1024} KiB x {threads} threads"
            views = [dev[t * size:(t + 1) * size] for t in range(threads)]
            got = {"rust": rust(a, size, threads, calls)}
            with hipfile.open(a.file) as f:
                got["hipfile python"] = threaded(lambda t, o: f.read(views[t], size, o), size, threads, calls, file_size)
            if a.kvikio:
                import kvikio
                import kvikio.defaults

                kvikio.defaults.set("num_threads", 16)
                with kvikio.CuFile(a.file, "r") as f:
                    got["kvikio python"] = threaded(lambda t, o: f.pread(views[t], size, o).get(), size, threads,
                                                    calls, file_size)
            res.setdefault(key, []).append(got)
            print(f"round {r + 1} {key}: " + ", ".join(f"{k} {v['gbps']} GB/s {v['us_per_call']} us" for k, v in
                                                      got.items()), flush=True)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
