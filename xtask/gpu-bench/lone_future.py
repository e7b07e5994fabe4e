"""What one 4 KiB read costs from Python on the GPU machine, called and as a future waited for at
once (best of 5 x 2000 calls each, warm file, into a CuPy array):

    python3 lone_future.py FILE
"""

import json
import os
import sys

import cupy as cp

import hipfile

# The measure of the package's per-call guard (hipfile-python/tests/test_per_call.py), so that
# these figures and the guard's ratios count the same way.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "hipfile-python", "tests"))
from test_per_call import per_call  # noqa: E402


def us(fn):
    """Microseconds per call (per_call's best of 5 x 2000 calls)."""
    return round(per_call(fn) * 1e6, 2)


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
            "read us": us(lambda i: f.read(dev, 4096, at(i), at(i))),
            "pread+get us": us(lambda i: f.pread(dev, 4096, at(i), at(i)).get()),
        }))


if __name__ == "__main__":
    main()
