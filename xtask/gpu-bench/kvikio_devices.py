#!/usr/bin/env python3
"""The peer (KvikIO, compat mode) reading one warm file into several GPUs at once.

For each thread-pool size: the file read whole into device 0 alone, and into every device of
--devices at once, two ways: one Python thread per device calling CuFile.read (KvikIO releases
the GIL while it reads), and one thread issuing CuFile.pread futures for every device and
waiting for them all. GB/s = 1e9 B/s of all devices together, best of --runs. Prints JSON.

    python3 kvikio_devices.py --file DATA --devices 0,1 --threads 16,32 --runs 3
"""
import argparse
import json
import os
import time

os.environ.setdefault("KVIKIO_COMPAT_MODE", "ON")

import cupy as cp  # noqa: E402
import kvikio  # noqa: E402
import kvikio.defaults  # noqa: E402
from small_bench import together  # noqa: E402


def best_of(runs, fn):
    best = 0.0
    for _ in range(runs):
        seconds = fn()
        best = max(best, 1 / seconds)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", required=True)
    ap.add_argument("--devices", default="0,1")
    ap.add_argument("--threads", default="16,32")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    devices = [int(d) for d in a.devices.split(",")]
    size = os.path.getsize(a.file)
    bufs = {}
    for d in devices:
        with cp.cuda.Device(d):
            bufs[d] = cp.empty(size, dtype=cp.uint8)
    with open(a.file, "rb", buffering=0) as f:  # warm the page cache
        chunk = bytearray(64 << 20)
        while f.readinto(chunk):
            pass

    def sync():
        for d in devices:
            with cp.cuda.Device(d):
                cp.cuda.runtime.deviceSynchronize()

    def threads_way(ds):
        def one(i):
            d = ds[i]
            cp.cuda.Device(d).use()
            f = kvikio.CuFile(a.file, "r")

            def read():
                with f:
                    assert f.read(bufs[d]) == size

            return read

        return together(one, len(ds), sync) / (size * len(ds) / 1e9)

    def futures_way(ds):
        with kvikio.CuFile(a.file, "r") as f:
            start = time.perf_counter()
            futs = [f.pread(bufs[d]) for d in ds]
            for fut in futs:
                assert fut.get() == size
            sync()
            return (time.perf_counter() - start) / (size * len(ds) / 1e9)

    out = {"kvikio": kvikio.__version__, "size_bytes": size, "devices": devices, "results": {}}
    for nt in (int(x) for x in a.threads.split(",")):
        kvikio.defaults.set("num_threads", nt)
        for name, ds in (("alone", devices[:1]), ("together", devices)):
            for way, fn in (("threads", threads_way), ("futures", futures_way)):
                gbps = round(best_of(a.runs, lambda: fn(ds)), 2)
                out["results"][f"{name} {way} t={nt}"] = gbps
                print(f"kvikio {name} {way} t={nt}: {gbps} GB/s", flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
