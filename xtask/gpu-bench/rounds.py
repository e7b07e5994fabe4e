#!/usr/bin/env python3
"""Alternates KvikIO (compat mode, as kvikio_baseline.py measures it) and `hipfile bench` on the
same file for several rounds, so that a comparison close to parity is judged on medians of
paired rounds rather than on one sample of each.

  rounds.py --hipfile BIN --file DATA --mode randread|cold --rounds N [--json OUT] [--profile]

randread: 128 random 1 MiB reads of the warm file, KvikIO best of 1/4/16 threads (best of 5 runs
each) against hipfile with 16 threads (best of 5 runs). cold: a 4 GiB read with the page cache
dropped, KvikIO best of 1/4/16 threads (one run each) against hipfile (one run)."""
import argparse
import json
import os
import random
import statistics
import subprocess
import time

os.environ.setdefault("KVIKIO_COMPAT_MODE", "ON")  # before KvikIO loads, as the baseline does

import cupy as cp  # noqa: E402
import kvikio  # noqa: E402
import kvikio.defaults  # noqa: E402

MIB = 1 << 20


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def best_of(fn, size, runs, before=None):
    best = 0.0
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        fn()
        cp.cuda.runtime.deviceSynchronize()
        best = max(best, size / (time.perf_counter() - t) / 1e9)
    return best


def ours(args, extra):
    """hipfile bench's best GB/s, and its mean and bounce profile with --profile."""
    cmd = [args.hipfile, "bench", "--file", args.file, "--json", "--no-verify"] + extra
    if args.profile:
        cmd.append("--profile")
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["results"][0]
    seen = {"mean": out["mean_gbps"], "profile": out["profile"].get("bounce")} if args.profile else {}
    return out["best_gbps"], seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hipfile", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--mode", choices=["randread", "cold"], required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--profile", action="store_true", help="keep each round's mean and bounce profile")
    a = ap.parse_args()
    size = os.path.getsize(a.file)
    size_arg = f"{size // MIB}M"

    if a.mode == "randread":
        rng = random.Random(11)
        offs = [rng.randrange(0, size // MIB) * MIB for _ in range(128)]
        dev = cp.empty(128 * MIB, dtype=cp.uint8)

        def kv():
            with kvikio.CuFile(a.file, "r") as f:
                futs = [f.pread(dev[i * MIB:(i + 1) * MIB], MIB, o) for i, o in enumerate(offs)]
                assert all(x.get() == MIB for x in futs)

        def peer():
            best = 0.0
            for nt in (1, 4, 16):
                kvikio.defaults.set("num_threads", nt)
                best = max(best, best_of(kv, 128 * MIB, 5))
            return best

        extra = ["--size", size_arg, "--mode", "randread", "--io-size", "1M", "--count", "128",
                 "--threads", "16", "--runs", "5"]
    else:
        dev = cp.empty(size, dtype=cp.uint8)

        def kv():
            with kvikio.CuFile(a.file, "r") as f:
                assert f.read(dev) == size

        def peer():
            best = 0.0
            for nt in (1, 4, 16):
                kvikio.defaults.set("num_threads", nt)
                best = max(best, best_of(kv, size, 1, drop_caches))
            return best

        extra = ["--size", size_arg, "--mode", "read", "--cold", "--runs", "1"]

    rounds = []
    for r in range(a.rounds):
        theirs = peer()
        mine, seen = ours(a, extra)
        rounds.append({"hipfile": round(mine, 2), "kvikio_best": round(theirs, 2), "ratio": round(mine / theirs, 3),
                       **seen})
        print(f"{a.mode} round {r + 1}: hipfile {mine:.2f}  KvikIO best {theirs:.2f}  ratio {mine / theirs:.2f}x",
              json.dumps(seen) if seen else "", flush=True)
    ratios = [x["ratio"] for x in rounds]
    summary = {"mode": a.mode, "rounds": rounds, "median_ratio": statistics.median(ratios),
               "min_ratio": min(ratios), "max_ratio": max(ratios)}
    print(f"{a.mode}: median ratio {summary['median_ratio']:.2f}x over {a.rounds} rounds "
          f"(from {summary['min_ratio']:.2f}x to {summary['max_ratio']:.2f}x)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
