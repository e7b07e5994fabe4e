"""What one call costs from Python, against a plain call, on this machine's GPU (the mock GPU in
CI): a guard, not a benchmark (the ratios have wide margins; docs/performance.md has figures).

- A future waited for at once (``f.pread(...).get()``) runs on the waiting thread: a few times
  a synchronous ``read``, not a hand-over to the library's thread and back (which cost 30x and
  more).
- A read into an object that names its memory by ``__cuda_array_interface__`` (as a PyTorch
  tensor does), and into a slice of one, costs about what a read into a ``DeviceBuffer`` does."""

import time

import hipfile

CALLS = 2000


class ArrayInterface:
    """Device memory named the way PyTorch and CuPy name theirs; slicing gives a new object."""

    def __init__(self, ptr, size):
        self.ptr, self.size = ptr, size

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.ptr, False), "version": 3, "strides": None}

    def __getitem__(self, s):
        return ArrayInterface(self.ptr + s.start, s.stop - s.start)


def per_call(fn) -> float:
    """Seconds per call, the best of 5 runs of CALLS calls."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for i in range(CALLS):
            fn(i)
        best = min(best, (time.perf_counter() - start) / CALLS)
    return best


def test_one_call_costs_about_a_call(data_file):
    dev = hipfile.DeviceBuffer(1 << 20)
    view = ArrayInterface(dev.ptr, 1 << 20)
    at = lambda i: (i % 256) * 4096  # noqa: E731
    with hipfile.open(data_file) as f:
        sync = per_call(lambda i: f.read(dev, 4096, at(i)))
        waited = per_call(lambda i: f.pread(dev, 4096, at(i)).get())
        named = per_call(lambda i: f.read(view, 4096, at(i)))
        sliced = per_call(lambda i: f.read(view[at(i) : at(i) + 4096], 4096, at(i)))
    report = f"read {sync * 1e6:.2f} us, pread+get {waited * 1e6:.2f}, by interface {named * 1e6:.2f}, slice {sliced * 1e6:.2f}"
    assert waited < 8 * sync, report
    assert named < 3 * sync, report
    assert sliced < 5 * sync, report
