"""hipfile's Python API beside KvikIO's, in one process on one warm file.

  python (futures)  a whole file read into a CuPy array and a PyTorch tensor; 128 random 1 MiB
                    reads as futures from one thread (into one CuPy array, slices of it, slices
                    of a tensor), and as one batch; --kvikio: KvikIO's beside; --futures-only,
                    --rotate: the futures alone; --per-call BIN: what one 4 KiB read costs
  small             small random reads from Python threads, KvikIO beside hipfile, the Rust
                    API's figure (`hipfile bench`, the same shape) beside
"""

import contextlib
import os
import random
import time

from benchlib import (MIB, counts, emit, hipfile_bench, make_file, rotate, subcommand, switches, together,
                      warm)

SHAPES = [(4096, 1, 20000), (4096, 16, 4000), (65536, 16, 2000)]  # small: (bytes, threads, calls per thread)


def register(sub):
    p = subcommand(sub, "python", python, "hipfile's Python API beside KvikIO's: a whole file, 128 random 1 MiB "
                   "futures, one batch; the cost of one call", PYTHON_DOC, aliases=["futures"])
    p.add_argument("file")
    counts(p, size_gib=4, runs=3)
    switches(p, "kvikio")
    p.add_argument("--per-call", metavar="HIPFILE_BIN")
    switches(p, futures_only="only the random futures (KvikIO's with 16 threads)",
             rotate="futures only, hipfile's and KvikIO's runs in rotated turns")
    p.add_argument("--settle", type=float, default=0.0, help="seconds to wait after opening, before timing anything")

    p = subcommand(sub, "small", small, "small random reads from Python threads, KvikIO beside hipfile", SMALL_DOC)
    p.add_argument("--hipfile", required=True, help="the hipfile binary (the Rust API's figure)")
    p.add_argument("--file", required=True)
    counts(p, rounds=2)
    switches(p, "kvikio")


PYTHON_DOC = """hipfile's Python API beside KvikIO's, in one process on one file (GB/s = 1e9 B/s, best of
RUNS): a warm file read whole into a CuPy array and a PyTorch tensor; 128 random 1 MiB reads
as futures from one thread (into one CuPy array, slices of it, slices of a tensor), and as one
batch; and, with --per-call, the time one 4 KiB read costs from Python (into NumPy, a
DeviceBuffer, a CuPy array, a tensor, slices of both) against the same read from the Rust API
(`hipfile bench`, its JSON). One JSON object on stdout.

    harness.py python FILE [--size-gib 4] [--runs 3] [--kvikio] [--per-call HIPFILE_BIN] [--futures-only] [--settle S] [--rotate]
"""

SMALL_DOC = """Small random reads of a warm file into GPU memory, KvikIO beside hipfile: 4 KiB from 1 and 16
threads, 64 KiB from 16 threads. Both libraries are called the same way from Python threads
(each thread its own slice of one CuPy array, a read waited for before the next: KvikIO's
`pread(...).get()`, hipfile's `File.read`), and the Rust API's figure (`hipfile bench`, the
same shape) is given beside, with its CPU seconds per GB (the tool's own figure). Prints one JSON object.

    harness.py small --hipfile BIN --file DATA [--rounds 2] [--kvikio]
"""


def best(fn, nbytes, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(nbytes / min(times) / 1e9, 3)


def rotated(a, res, dev, futures, torch_slices, offs):
    """The futures into one CuPy array, into PyTorch slices, into the array registered, and
    KvikIO's (16 threads) into CuPy slices, one run each in turn, the order rotated every
    round (so that none is always first after the driver opens), best of RUNS rounds each."""
    import hipfile
    import kvikio
    import kvikio.defaults

    kvikio.defaults.set("num_threads", 16)
    chunk = MIB

    def kv():
        with kvikio.CuFile(a.file, "r") as g:
            futs = [g.pread(dev[i * chunk : (i + 1) * chunk], chunk, o) for i, o in enumerate(offs)]
            assert all(x.get() == chunk for x in futs)

    runs = [
        ("hipfile 128 random 1MiB futures", futures, False),
        ("hipfile 128 random 1MiB futures, torch slices", torch_slices, False),
        ("hipfile 128 random 1MiB futures, registered", futures, True),
        ("kvikio t=16 128 random 1MiB futures", kv, False),
    ]
    for r in range(a.runs):
        for name, fn, registered in rotate(runs, r):
            with hipfile.register(dev) if registered else contextlib.nullcontext():
                t = time.perf_counter()
                fn()
                gbps = round(len(offs) * chunk / (time.perf_counter() - t) / 1e9, 3)
            res[name] = max(res.get(name, 0.0), gbps)


def python(a):
    import hipfile

    res = {"runtime": hipfile.runtime()}
    if a.per_call:
        per_call(a, res)
        emit(res, indent=1)
        return
    import cupy as cp
    import torch

    size = int(a.size_gib * (1 << 30))
    make_file(a.file, size)
    warm(a.file)
    dev = cp.empty(size, dtype=cp.uint8)
    tensor = torch.empty(size, dtype=torch.uint8, device="cuda:0")
    with hipfile.open(a.file) as f:
        if not a.futures_only:
            res["hipfile read into cupy"] = best(lambda: f.read(dev), size, a.runs)
            res["hipfile read into torch"] = best(lambda: f.read(tensor), size, a.runs)
        else:
            f.read(dev, 1 << 20)
            f.read(tensor, 1 << 20)
        time.sleep(a.settle)
        ref = cp.asnumpy(dev[: 1 << 20]).tobytes()
        with open(a.file, "rb") as g:
            assert ref == g.read(1 << 20), "hipfile read verification failed"
        assert bytes(tensor[: 1 << 20].cpu().numpy().tobytes()) == ref
        chunk, n = MIB, 128
        rng = random.Random(11)
        offs = [rng.randrange(0, size // chunk) * chunk for _ in range(n)]

        def futures():
            futs = [f.pread(dev, chunk, o, i * chunk) for i, o in enumerate(offs)]
            assert all(x.get() == chunk for x in futs)

        def batch():
            assert f.read_batch([(dev, chunk, o, i * chunk) for i, o in enumerate(offs)]) == [chunk] * n

        def futures_into(view):
            futs = [f.pread(view(i), chunk, o) for i, o in enumerate(offs)]
            assert all(x.get() == chunk for x in futs)

        if a.rotate:
            rotated(a, res, dev, futures, lambda: futures_into(lambda i: tensor[i * chunk : (i + 1) * chunk]), offs)
            emit(res, indent=1)
            return
        res["hipfile 128 random 1MiB futures"] = best(futures, chunk * n, a.runs)
        res["hipfile 128 random 1MiB futures, torch slices"] = best(
            lambda: futures_into(lambda i: tensor[i * chunk : (i + 1) * chunk]), chunk * n, a.runs
        )
        res["hipfile 128 random 1MiB futures, cupy slices"] = best(
            lambda: futures_into(lambda i: dev[i * chunk : (i + 1) * chunk]), chunk * n, a.runs
        )
        res["hipfile 128 random 1MiB batch"] = best(batch, chunk * n, a.runs)
        with hipfile.register(dev):  # no pointer query per request
            res["hipfile 128 random 1MiB futures, registered"] = best(futures, chunk * n, a.runs)
            res["hipfile 128 random 1MiB batch, registered"] = best(batch, chunk * n, a.runs)
    if a.kvikio:
        import kvikio
        import kvikio.defaults

        for nt in (16,) if a.futures_only else (1, 16):
            kvikio.defaults.set("num_threads", nt)

            def kv_read():
                with kvikio.CuFile(a.file, "r") as f:
                    assert f.read(dev) == size

            def kv_torch():
                with kvikio.CuFile(a.file, "r") as f:
                    assert f.read(tensor) == size

            def kv_random():
                with kvikio.CuFile(a.file, "r") as f:
                    futs = [f.pread(dev[i * chunk : (i + 1) * chunk], chunk, o) for i, o in enumerate(offs)]
                    assert all(x.get() == chunk for x in futs)

            if not a.futures_only:
                res[f"kvikio t={nt} read into cupy"] = best(kv_read, size, a.runs)
                res[f"kvikio t={nt} read into torch"] = best(kv_torch, size, a.runs)
            res[f"kvikio t={nt} 128 random 1MiB futures"] = best(kv_random, chunk * n, a.runs)
    emit(res, indent=1)


def per_call(a, res):
    """µs per 4 KiB read: Python (`File.read` into a NumPy array and into device memory) and the
    Rust API (`hipfile bench`, one thread, same file and size)."""
    import numpy as np

    import hipfile

    size = 64 << 20
    make_file(a.file, size)
    warm(a.file)
    calls = 20000
    host = np.zeros(4096, np.uint8)
    dev = hipfile.DeviceBuffer(4096)
    rng = random.Random(5)
    offs = [rng.randrange(0, size // 4096) * 4096 for _ in range(calls)]
    named = [("python host", lambda: host), ("python device", lambda: dev)]
    try:  # the buffers users name on a GPU machine: a CuPy array, and slices of tensors
        import cupy
        import torch

        c, tt = cupy.empty(1 << 20, dtype=cupy.uint8), torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
        # "... slice made": the same slice made and dropped, the read into the whole array, so
        # that "... slice" less it is what resolving a slice costs the library.
        named += [("python cupy", lambda: c), ("python cupy slice", lambda: c[4096:8192]),
                  ("python cupy slice made", lambda: (c[4096:8192], c)[1]),
                  ("python torch", lambda: tt), ("python torch slice", lambda: tt[4096:8192]),
                  ("python torch slice made", lambda: (tt[4096:8192], tt)[1])]
        for name, make in (("cupy slice alone", lambda: c[4096:8192]), ("torch slice alone", lambda: tt[4096:8192])):
            start = time.perf_counter()
            for _ in offs:
                make()
            res[f"{name} us"] = round((time.perf_counter() - start) / calls * 1e6, 3)
    except ImportError:
        pass
    with hipfile.open(a.file) as f:
        for name, buf in named:
            for _ in range(5):
                t = time.perf_counter()
                for o in offs:
                    f.read(buf(), 4096, o)
                us = (time.perf_counter() - t) / calls * 1e6
                res[f"{name} us/call"] = min(us, res.get(f"{name} us/call", us))
    r = hipfile_bench(a.per_call, "--file", a.file, "--mode", "randread", "--io-size", "4K",
                      "--count", str(calls), "--threads", "1", "--runs", "3", "--json", "--no-verify")
    res["rust us/call"] = round(4096 / (r["best_gbps"] * 1e9) * 1e6, 3)
    res["rust bench"] = r


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
    r = hipfile_bench(a.hipfile, "--file", a.file, "--mode", "randread", "--io-size", str(size),
                      "--count", str(calls * threads), "--threads", str(threads), "--runs", "3", "--json", "--no-verify")
    return {"gbps": r["best_gbps"], "us_per_call": round(size * threads / (r["best_gbps"] * 1e9) * 1e6, 2),
            "cpu_s_per_gb": r["cpu_s_per_gb"]}


def small(a):
    import cupy as cp

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
    emit(res)

