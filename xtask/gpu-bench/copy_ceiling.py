#!/usr/bin/env python3
"""The ceiling of a bounce read into several GPUs: pinned host memory copied to each device
alone and to all of --devices at once (one stream per device, copies issued together), GB/s =
1e9 B/s of all devices together, best of --runs. Prints JSON.

    python3 copy_ceiling.py --devices 0,1 --size-gib 2
"""
import argparse
import json
import time

import cupy as cp
import cupyx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", default="0,1")
    ap.add_argument("--size-gib", type=float, default=2)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    devices = [int(d) for d in a.devices.split(",")]
    size = int(a.size_gib * (1 << 30))
    host = cupyx.empty_pinned((size,), dtype=cp.uint8)
    host[:] = 7
    dst, streams = {}, {}
    for d in devices:
        with cp.cuda.Device(d):
            dst[d] = cp.empty(size, dtype=cp.uint8)
            streams[d] = cp.cuda.Stream(non_blocking=True)

    def copy(ds):
        start = time.perf_counter()
        for d in ds:
            with cp.cuda.Device(d):
                dst[d].set(host, stream=streams[d])
        for d in ds:
            streams[d].synchronize()
        return size * len(ds) / (time.perf_counter() - start) / 1e9

    out = {}
    for name, ds in [(f"device {d}", [d]) for d in devices] + [("together", devices)]:
        copy(ds)  # first touch
        out[name] = round(max(copy(ds) for _ in range(a.runs)), 2)
        print(f"pinned host -> GPU, {name}: {out[name]} GB/s", flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
