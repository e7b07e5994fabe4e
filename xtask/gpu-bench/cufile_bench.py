#!/usr/bin/env python3
"""cuFile's users over whichever libcufile.so.0 the process loads (hipfile-rs's with
LD_PRELOAD=.../lib/cufile/libcufile.so.0, else NVIDIA's), one JSON object on stdout:

    cufile_bench.py kvikio FILE [--runs 3]     KvikIO's CuFile.read of the whole (warm) file into a
                                              CuPy array, with its default thread count and 16
    cufile_bench.py batch FILE [--runs 5]     128 random 1 MiB reads as one cuFile batch
                                              (cuFileBatchIOSetUp/Submit/GetStatus, ctypes)
    cufile_bench.py gds DIR [--size-gb 9]     torch.cuda.gds: GdsFile.save_storage of tensors of
                                              an LLM's shapes, then load_storage (warm; half into
                                              buffers gds_register_buffer registered), checked
"""

import argparse
import ctypes
import json
import os
import random
import sys
import time


def loaded_cufile():
    """The libcufile.so.0 files mapped in this process (after one was loaded), and whether
    hipfile-rs's libhipfile.so.0 is (which only hipfile-rs's libcufile loads here)."""
    seen = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if ("libcufile" in path or "libhipfile" in path) and path not in seen:
                seen.append(path)
    return seen


def warm(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass


def kvikio_read(a):
    import cupy as cp
    import kvikio
    import kvikio.defaults

    size = os.path.getsize(a.file)
    buf = cp.empty(size, dtype=cp.uint8)
    warm(a.file)
    out = {"compat_mode": os.environ.get("KVIKIO_COMPAT_MODE", "AUTO (default)")}
    default_threads = kvikio.defaults.get("num_threads")
    for threads in (default_threads, 16):
        kvikio.defaults.set("num_threads", threads)
        times = []
        for _ in range(a.runs):
            with kvikio.CuFile(a.file, "r") as f:
                t = time.perf_counter()
                assert f.read(buf) == size
                times.append(time.perf_counter() - t)
        out[f"read GB/s, {threads} threads"] = round(size / min(times) / 1e9, 2)
    with open(a.file, "rb") as f:
        head = f.read(1 << 20)
    assert cp.asnumpy(buf[: 1 << 20]).tobytes() == head, "KvikIO's read gave other bytes"
    out["libcufile"] = loaded_cufile()
    return out


class Params(ctypes.Structure):
    _fields_ = [
        ("mode", ctypes.c_int),
        ("dev", ctypes.c_void_p),
        ("file_offset", ctypes.c_int64),
        ("dev_offset", ctypes.c_int64),
        ("size", ctypes.c_size_t),
        ("fh", ctypes.c_void_p),
        ("opcode", ctypes.c_int),
        ("cookie", ctypes.c_void_p),
    ]


class Events(ctypes.Structure):
    _fields_ = [("cookie", ctypes.c_void_p), ("status", ctypes.c_int), ("ret", ctypes.c_size_t)]


class Error(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class Descr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("fd", ctypes.c_int64), ("fs_ops", ctypes.c_void_p)]


def cufile_batch(a):
    import cupy as cp

    lib = ctypes.CDLL("libcufile.so.0")
    for name in ("cuFileDriverOpen", "cuFileHandleRegister", "cuFileBufRegister", "cuFileBatchIOSetUp",
                 "cuFileBatchIOSubmit", "cuFileBatchIOGetStatus"):
        getattr(lib, name).restype = Error
    ok = lambda e, what: e.err == 0 or sys.exit(f"{what}: {e.err}")  # noqa: E731
    ok(lib.cuFileDriverOpen(), "open")
    size = os.path.getsize(a.file)
    warm(a.file)
    fd = os.open(a.file, os.O_RDONLY | os.O_DIRECT)
    fh = ctypes.c_void_p()
    ok(lib.cuFileHandleRegister(ctypes.byref(fh), ctypes.byref(Descr(1, fd, None))), "register")
    chunk, n = 1 << 20, 128
    dev = cp.empty(chunk * n, dtype=cp.uint8)
    ok(lib.cuFileBufRegister(ctypes.c_void_p(dev.data.ptr), ctypes.c_size_t(chunk * n), 0), "buf register")
    rng = random.Random(11)
    offs = [rng.randrange(0, size // chunk) * chunk for _ in range(n)]
    io = (Params * n)(*[Params(1, dev.data.ptr, o, i * chunk, chunk, fh, 0, i + 1) for i, o in enumerate(offs)])
    batch = ctypes.c_void_p()
    ok(lib.cuFileBatchIOSetUp(ctypes.byref(batch), n), "setup")
    events = (Events * n)()
    times = []
    for _ in range(a.runs):
        t = time.perf_counter()
        ok(lib.cuFileBatchIOSubmit(batch, n, io, 0), "submit")
        seen = 0
        while seen < n:
            nr = ctypes.c_uint(n - seen)
            ok(lib.cuFileBatchIOGetStatus(batch, 1, ctypes.byref(nr), ctypes.byref(events, seen * ctypes.sizeof(Events)), None), "status")
            seen += nr.value
        times.append(time.perf_counter() - t)
        assert all(e.ret == chunk for e in events), [e.ret for e in events][:4]
    with open(a.file, "rb") as f:
        f.seek(offs[5])
        assert cp.asnumpy(dev[5 * chunk : 6 * chunk]).tobytes() == f.read(chunk), "batch gave other bytes"
    lib.cuFileBatchIODestroy(batch)
    return {"128 random 1 MiB as one cuFile batch GB/s": round(chunk * n / min(times) / 1e9, 2),
            "runs": [round(chunk * n / t / 1e9, 2) for t in times], "libcufile": loaded_cufile()}


def gds(a):
    import torch
    import torch.cuda.gds as gds

    path = os.path.join(a.file, "gds.bin")
    hidden = 3008
    # An LLM's shapes in bf16: per layer 4 projections of hidden^2 and 3 MLP matrices of 4*hidden*hidden.
    shapes = []
    while sum(s[0] * s[1] * 2 for s in shapes) < a.size_gb * 1e9:
        shapes += [(hidden, hidden)] * 4 + [(4 * hidden, hidden)] * 3
    src = [torch.randn(s, dtype=torch.bfloat16, device="cuda:0") for s in shapes]
    total = sum(t.numel() * 2 for t in src)
    offsets, at = [], 0
    for t in src:
        offsets.append(at)
        at += (t.numel() * 2 + 4095) // 4096 * 4096
    if os.path.exists(path):
        os.unlink(path)
    f = gds.GdsFile(path, os.O_CREAT | os.O_RDWR)
    t = time.perf_counter()
    for tensor, off in zip(src, offsets):
        f.save_storage(tensor.untyped_storage(), off)
    torch.cuda.synchronize()
    save_s = time.perf_counter() - t
    os.sync()
    warm(path)
    dst = [torch.empty_like(x) for x in src]
    # The rest of torch.cuda.gds: half the destinations registered as cuFile buffers.
    registered = [t.untyped_storage() for t in dst[::2]]
    for storage in registered:
        gds.gds_register_buffer(storage)
    times = []
    for _ in range(a.runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for tensor, off in zip(dst, offsets):
            f.load_storage(tensor.untyped_storage(), off)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    same = all(torch.equal(x, y) for x, y in zip(src, dst))
    for storage in registered:
        gds.gds_deregister_buffer(storage)
    f.deregister_handle()
    del f
    os.unlink(path)
    return {"tensors": len(src), "bytes": total, "save GB/s": round(total / save_s / 1e9, 2),
            "load_storage warm GB/s": round(total / min(times) / 1e9, 2), "runs": [round(total / x / 1e9, 2) for x in times],
            "bitwise equal": same, "libcufile": loaded_cufile()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["kvikio", "batch", "gds"])
    p.add_argument("file")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--size-gb", type=float, default=9)
    a = p.parse_args()
    out = {"kvikio": kvikio_read, "batch": cufile_batch, "gds": gds}[a.what](a)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
