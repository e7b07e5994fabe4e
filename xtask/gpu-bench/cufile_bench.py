"""cuFile's users over whichever libcufile.so.0 the process loads (hipfile-rs's with
LD_PRELOAD=.../lib/cufile/libcufile.so.0, else NVIDIA's), one JSON object on stdout:

  harness.py cufile kvikio FILE [--runs 3]
      KvikIO's CuFile.read of the whole (warm) file into a CuPy array, with its default thread
      count and 16
  harness.py cufile batch FILE [--runs 5]
      128 random 1 MiB reads as one cuFile batch (cuFileBatchIOSetUp/Submit/GetStatus, ctypes)
  harness.py cufile gds DIR [--size-gb 9]
      torch.cuda.gds: GdsFile.save_storage of tensors of an LLM's shapes, then load_storage
      (warm; half into buffers gds_register_buffer registered), checked; --as-saved: the file is
      not read through first, the loads find what the save left in the page cache (its share is
      reported)
  harness.py cufile calls DIR [--size-gb 2]
      where load_storage's time goes: the gds benchmark's calls (same shapes and offsets, a file
      of random bytes) through load_storage into each tensor, into one tensor per shape, and
      through cuFileRead (ctypes) into the same; per-call medians
  harness.py cufile elsewhere FILE [--runs 3]
      with device 0 current, KvikIO's CuFile.read into a CuPy array on device 1 and
      torch.cuda.gds's load_storage into a tensor on cuda:1, each checked against the file (a
      machine of two GPUs or more)
  harness.py cufile ab DIR --env "" --env K=V,K2=V2 [--runs 3]
      load_storage of the gds benchmark's calls (none registered) with each --env setting in
      turn, in one process, the order reversed every other round, two passes each: for settings
      the library reads per call; closes the driver at the end (with HIPFILE_LOG=debug,
      hipfile-rs's counters on stderr)
"""

import ctypes
import os
import random
import sys
import time

from benchlib import counts, emit, loaded_cufile, page_cache_share, subcommand, switches, warm


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


def elsewhere(a):
    """Reads into memory of device 1 while device 0 is current, through KvikIO and through
    torch.cuda.gds: the bytes are checked, and the current device is still 0 afterwards."""
    import cupy as cp
    import kvikio
    import torch
    import torch.cuda.gds

    devices = cp.cuda.runtime.getDeviceCount()
    if devices < 2:
        raise SystemExit(f"elsewhere needs two GPUs; this machine has {devices}")
    size = os.path.getsize(a.file)
    warm(a.file)
    with open(a.file, "rb") as f:
        head = f.read(1 << 20)
    torch.cuda.set_device(0)
    cp.cuda.Device(0).use()
    with cp.cuda.Device(1):
        buf = cp.empty(size, dtype=cp.uint8)
    dst = torch.empty(size, dtype=torch.uint8, device="cuda:1")
    out, kv, gds = {}, [], []
    for _ in range(a.runs):
        with kvikio.CuFile(a.file, "r") as f:
            t = time.perf_counter()
            assert f.read(buf) == size
            kv.append(time.perf_counter() - t)
        g = torch.cuda.gds.GdsFile(a.file, os.O_RDONLY)
        t = time.perf_counter()
        g.load_storage(dst.untyped_storage(), 0)
        torch.cuda.synchronize(1)
        gds.append(time.perf_counter() - t)
        g.deregister_handle()
    with cp.cuda.Device(1):
        out["kvikio into device 1: first MiB as in the file"] = cp.asnumpy(buf[: 1 << 20]).tobytes() == head
    out["gds into cuda:1: first MiB as in the file"] = bytes(dst[: 1 << 20].cpu().numpy()) == head
    out["kvikio into device 1 GB/s"] = round(size / min(kv) / 1e9, 2)
    out["gds into cuda:1 GB/s"] = round(size / min(gds) / 1e9, 2)
    out["current device after"] = (torch.cuda.current_device(), cp.cuda.Device().id)
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


def llm_shapes(size_gb, hidden=3008):
    """An LLM's tensors of about SIZE_GB in bf16 (per layer 4 projections of hidden^2 and 3 MLP
    matrices of 4*hidden*hidden): their shapes, bytes, and file offsets (4 KiB aligned)."""
    shapes = []
    while sum(r * c * 2 for r, c in shapes) < size_gb * 1e9:
        shapes += [(hidden, hidden)] * 4 + [(4 * hidden, hidden)] * 3
    sizes = [r * c * 2 for r, c in shapes]
    offsets, at = [], 0
    for n in sizes:
        offsets.append(at)
        at += (n + 4095) // 4096 * 4096
    return shapes, sizes, offsets


def random_file(path, sizes, offsets):
    """Writes random bytes of SIZES at OFFSETS into PATH, cached (by the writes); returns PATH."""
    with open(path, "wb") as f:
        for at, n in zip(offsets, sizes):
            f.seek(at)
            f.write(os.urandom(1 << 20) * (n >> 20) + os.urandom(n % (1 << 20)))
    os.sync()
    warm(path)
    return path


def load_pass(f, dst, offsets):
    """Seconds for one load_storage of each tensor of DST at its offset, synchronized."""
    import torch

    torch.cuda.synchronize()
    t = time.perf_counter()
    for tensor, off in zip(dst, offsets):
        f.load_storage(tensor.untyped_storage(), off)
    torch.cuda.synchronize()
    return time.perf_counter() - t


def first_mib(path, at):
    """The file's MiB at AT (to check a tensor's first bytes against)."""
    with open(path, "rb") as f:
        f.seek(at)
        return f.read(1 << 20)


def gds(a):
    import torch
    import torch.cuda.gds as gds

    path = os.path.join(a.file, "gds.bin")
    shapes, sizes, offsets = llm_shapes(a.size_gb)
    src = [torch.randn(s, dtype=torch.bfloat16, device="cuda:0") for s in shapes]
    total = sum(sizes)
    if os.path.exists(path):
        os.unlink(path)
    f = gds.GdsFile(path, os.O_CREAT | os.O_RDWR)
    t = time.perf_counter()
    for tensor, off in zip(src, offsets):
        f.save_storage(tensor.untyped_storage(), off)
    torch.cuda.synchronize()
    save_s = time.perf_counter() - t
    os.sync()
    resident = page_cache_share(path)
    if not a.as_saved:
        warm(path)
    dst = [torch.empty_like(x) for x in src]
    # The rest of torch.cuda.gds: half the destinations registered as cuFile buffers.
    registered = [t.untyped_storage() for t in dst[::2]]
    for storage in registered:
        gds.gds_register_buffer(storage)
    times = [load_pass(f, dst, offsets) for _ in range(a.runs)]
    same = all(torch.equal(x, y) for x, y in zip(src, dst))
    for storage in registered:
        gds.gds_deregister_buffer(storage)
    f.deregister_handle()
    del f
    os.unlink(path)
    return {"tensors": len(src), "bytes": total, "save GB/s": round(total / save_s / 1e9, 2),
            "load_storage warm GB/s": round(total / min(times) / 1e9, 2), "runs": [round(total / x / 1e9, 2) for x in times],
            "in the page cache after the save": resident, "as saved": a.as_saved,
            "bitwise equal": same, "libcufile": loaded_cufile()}


def calls(a):
    import statistics

    import torch
    import torch.cuda.gds as gds

    _, sizes, offsets = llm_shapes(a.size_gb)
    path = random_file(os.path.join(a.file, "calls.bin"), sizes, offsets)
    total = sum(sizes)
    each = [torch.empty(n, dtype=torch.uint8, device="cuda:0") for n in sizes]
    one = {n: torch.empty(n, dtype=torch.uint8, device="cuda:0") for n in set(sizes)}
    f = gds.GdsFile(path, os.O_RDONLY)
    lib = ctypes.CDLL("libcufile.so.0")
    lib.cuFileHandleRegister.restype = Error
    lib.cuFileRead.restype = ctypes.c_ssize_t
    fd = os.open(path, os.O_RDONLY)
    fh = ctypes.c_void_p()
    assert lib.cuFileHandleRegister(ctypes.byref(fh), ctypes.byref(Descr(1, fd, None))).err == 0

    def load(t, off):
        f.load_storage(t.untyped_storage(), off)

    def read(t, off):
        n = t.numel()
        assert lib.cuFileRead(fh, ctypes.c_void_p(t.data_ptr()), ctypes.c_size_t(n), ctypes.c_int64(off), ctypes.c_int64(0)) == n

    out = {"tensors": len(sizes), "bytes": total}
    ways = {"load_storage, each tensor": (load, each), "load_storage, one per shape": (load, None),
            "cuFileRead, one per shape": (read, None)}
    for name, (fn, dst) in ways.items():
        best, per = None, {}
        for _ in range(a.runs):
            torch.cuda.synchronize()
            spent = {}
            t0 = time.perf_counter()
            for i, (n, off) in enumerate(zip(sizes, offsets)):
                t = time.perf_counter()
                fn(dst[i] if dst else one[n], off)
                spent.setdefault(n, []).append(time.perf_counter() - t)
            torch.cuda.synchronize()
            wall = time.perf_counter() - t0
            if best is None or wall < best:
                best, per = wall, spent
        out[name] = {"GB/s": round(total / best / 1e9, 2),
                     "median us per call": {n: round(statistics.median(v) * 1e6) for n, v in per.items()},
                     "GB/s per shape (median call)": {n: round(n / statistics.median(v) / 1e9, 1) for n, v in per.items()}}
    small = torch.empty(4096, dtype=torch.uint8, device="cuda:0")
    for name, fn in (("load_storage", load), ("cuFileRead", read)):
        times = []
        for i in range(300):
            t = time.perf_counter()
            fn(small, offsets[i % len(offsets)])
            times.append(time.perf_counter() - t)
        out[f"{name} of 4 KiB, median us"] = round(statistics.median(times[50:]) * 1e6, 1)
    want = first_mib(path, offsets[-1])
    got = [bytes(t[: 1 << 20].cpu().numpy()) for t in (each[-1], one[sizes[-1]])]
    out["the last tensor's first MiB as in the file"] = got == [want, want]
    lib.cuFileHandleDeregister(fh)
    os.close(fd)
    os.unlink(path)
    out["libcufile"] = loaded_cufile()
    return out


def ab(a):
    import torch
    import torch.cuda.gds as gds

    settings = [dict(kv.split("=", 1) for kv in e.split(",") if kv) for e in a.env]
    started = {k: os.environ.get(k) for setting in settings for k in setting}
    _, sizes, offsets = llm_shapes(a.size_gb)
    path = random_file(os.path.join(a.file, "ab.bin"), sizes, offsets)
    total = sum(sizes)
    dst = [torch.empty(n, dtype=torch.uint8, device="cuda:0") for n in sizes]
    f = gds.GdsFile(path, os.O_RDONLY)
    runs = [[] for _ in settings]
    for r in range(a.runs):
        for i in (reversed if r % 2 else list)(range(len(settings))):
            for k, v in started.items():  # each setting over the environment as started
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            os.environ.update(settings[i])
            runs[i] += [round(total / load_pass(f, dst, offsets) / 1e9, 2) for _ in range(2)]
    ok = bytes(dst[-1][: 1 << 20].cpu().numpy()) == first_mib(path, offsets[-1])
    f.deregister_handle()
    os.unlink(path)
    # The last close: with HIPFILE_LOG=debug, hipfile-rs writes its backends' counters (where
    # the bounce path's threads spent their time) to stderr.
    ctypes.CDLL("libcufile.so.0").cuFileDriverClose()
    out = {e or "as started": {"best GB/s": max(r), "median GB/s": sorted(r)[len(r) // 2], "runs": r}
           for e, r in zip(a.env, runs)}
    return {**out, "the last tensor's first MiB as in the file": ok, "libcufile": loaded_cufile()}


def register(sub):
    p = subcommand(sub, "cufile", cufile, "cuFile's users (KvikIO, a cuFile batch, torch.cuda.gds) over the "
                   "libcufile.so.0 loaded", __doc__)
    p.add_argument("what", choices=list(MODES))
    p.add_argument("file")
    counts(p, runs=3, size_gb=9)
    p.add_argument("--env", action="append", default=[], help="ab: one setting, K=V[,K=V...] ('' as started)")
    switches(p, as_saved="gds: load what the save left, without reading it first")


MODES = {"kvikio": kvikio_read, "batch": cufile_batch, "gds": gds, "calls": calls, "ab": ab, "elsewhere": elsewhere}


def cufile(a):
    if a.what == "ab" and not a.env:
        raise SystemExit("harness.py cufile ab needs at least one --env")
    emit(MODES[a.what](a))
