"""What one 4 KiB read costs from Python on the GPU machine, called and as a future waited for at
once (best of 5 x 2000 calls each, warm file, into a CuPy array):

    python3 lone_future.py FILE
"""

import json
import os
import sys
import time

import cupy as cp

import hipfile


def per_call(fn, calls=2000):
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for i in range(calls):
            fn(i)
        best = min(best, (time.perf_counter() - start) / calls)
    return round(best * 1e6, 2)


def main():
    path = sys.argv[1]
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(os.urandom(64 << 20))
    dev = cp.empty(64 << 20, dtype=cp.uint8)
    at = lambda i: (i * 7919 % 16384) * 4096  # noqa: E731
    with hipfile.open(path) as f:
        f.read(dev)
        print(json.dumps({
            "read us": per_call(lambda i: f.read(dev, 4096, at(i), at(i))),
            "pread+get us": per_call(lambda i: f.pread(dev, 4096, at(i), at(i)).get()),
        }))


if __name__ == "__main__":
    main()
