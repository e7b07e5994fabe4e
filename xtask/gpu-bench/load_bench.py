"""A safetensors checkpoint into GPU 0 with hipfile.safetensors beside its peers, in one process on
one file (GB/s = bytes of the file / seconds / 1e9; every timer stops after
torch.cuda.synchronize()):

    harness.py load DIR [--size-gb 9.2] [--runs 3] [--cold] [--peers kvikio,fastsafetensors] [--first]

DIR/model.safetensors is made if missing: ~SIZE GB of random bf16 tensors shaped like an LLM's
(32 layers of q/k/v/o, gate/up/down and two norms, an embedding and an lm_head of 128256 rows;
the hidden size is scaled to reach SIZE: about 290 tensors).

Loaders (checkpoint_loaders.py), each run once per round (rounds interleave the loaders; best
of RUNS and every run): safetensors, hipfile and hipfile-driver-open always; --peers picks among
kvikio, kvikio-default, fastsafetensors, fastsafetensors-gds and hipfile-copy. KVIKIO_COMPAT_MODE
defaults to ON, as the project's KvikIO baseline runs it. A peer that cannot be imported or
fails is reported with its error and the others go on. Each loader's tensors are checked once,
outside the timers: every name, dtype and shape, and the bytes of the first, the last and 5
random tensors against safetensors' own (read on the host).

Warm: the file is read through once first (page cache). --cold: the same loaders with the page
cache dropped before every run (/proc/sys/vm/drop_caches as root, else posix_fadvise DONTNEED
on the file). The raw disk: the file read with O_DIRECT into page-aligned host buffers (mmap),
os.preadv in 64 MiB pieces from 8 threads: the disk's ceiling (the page cache plays no part).

Time to first tensor (hipfile, with and without the driver held open, and safetensors beside
it): safe_open(path, device="cuda:0").get_tensor(first name in the file), timed from the call
to safe_open; and load_file's progress callback: when the first callback arrives (hipfile calls
it after each 256 MiB step has landed, so it is the time to the first 256 MiB, not to one
tensor) and the whole load with the callback.

--first: each loader's first load in a fresh process (this subcommand in a hidden mode: imports
torch, initialises CUDA, imports the loader, times one load), the file warm; reported apart.

One JSON object is printed: figures, ratios hipfile/peer (warm, cold, first) and versions.
"""

import argparse
import gc
import importlib
import itertools
import json
import mmap
import os
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from benchlib import (DEVICE, PIECE, child_cmd, counts, drop, emit, err, kvikio_compat, log, make_checkpoint,
                      parse_header, subcommand, switches, warm, write_json)
from checkpoint_loaders import DriverHeld, make_loader, release, timed_load, verify

PEERS = ["kvikio", "kvikio-default", "fastsafetensors", "fastsafetensors-gds", "hipfile-copy"]


def register(sub):
    p = subcommand(sub, "load", load, "a safetensors checkpoint into GPU 0: hipfile beside safetensors, KvikIO, "
                   "fastsafetensors", __doc__)
    p.add_argument("dir")
    counts(p, size_gb=9.2, layers=32, runs=3)
    switches(p, "cold")
    p.add_argument("--peers", default="kvikio,fastsafetensors")
    switches(p, "first")
    counts(p, disk_threads=8)
    p.add_argument("--json", help="also write the JSON here")
    p.add_argument("--child", help=argparse.SUPPRESS)


def raw_disk(path, threads=8):
    """The file with O_DIRECT into page-aligned host buffers, PIECE at a time from `threads`
    threads taking pieces in file order; returns bytes read."""
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    pieces = itertools.count()
    lock = threading.Lock()

    def worker(_):
        buf = mmap.mmap(-1, PIECE)
        got = 0
        try:
            while True:
                with lock:
                    i = next(pieces)
                off = i * PIECE
                if off >= size:
                    return got
                n = os.preadv(fd, [buf], off)
                if n != min(PIECE, size - off):
                    raise OSError(f"O_DIRECT read at {off}: {n} bytes")
                got += n
        finally:
            buf.close()

    try:
        with ThreadPoolExecutor(threads) as ex:
            total = sum(ex.map(worker, range(threads)))
    finally:
        os.close(fd)
    if total != size:
        raise OSError(f"O_DIRECT read {total} of {size} bytes")
    return total


# --- measuring ---------------------------------------------------------------------------------


def gbps(size, seconds):
    return round(size / seconds / 1e9, 3)


def summary(size, times):
    return {
        "best_gbps": gbps(size, min(times)),
        "median_gbps": gbps(size, sorted(times)[len(times) // 2]),
        "runs_gbps": [gbps(size, t) for t in times],
        "runs_s": [round(t, 4) for t in times],
    }


def measure(loaders, path, size, entries, runs, before, res, verified):
    """Rounds of every loader (the order turned each round); before() ahead of each run."""
    times = {name: [] for name in loaders}
    errors = {}
    order = list(loaders)
    for r in range(runs):
        for name in order[r % len(order):] + order[: r % len(order)]:
            if name in errors:
                continue
            if before:
                before()
            result = None
            try:
                dt, result = timed_load(loaders[name], path)
                times[name].append(dt)
                if name not in verified:
                    verified[name] = verify(result[0], path, entries)
                log(f"  {name}: {gbps(size, dt)} GB/s")
            except Exception as exc:
                errors[name] = err(exc)
                log(f"  {name} failed: {errors[name]}\n{traceback.format_exc()}")
            finally:
                if result is not None:
                    try:
                        release(result)
                    except Exception as exc:
                        errors.setdefault(name, f"cleanup: {err(exc)}")
                finish = getattr(loaders[name], "finish", None)
                if finish is not None:
                    finish()
                gc.collect()
    for name in loaders:
        entry = summary(size, times[name]) if times[name] else {}
        if name in errors:
            entry["error"] = errors[name]
        entry["verified"] = verified.get(name, "not run")
        res[name] = entry


def first_tensor(path, entries, before, runs):
    """Seconds to the first tensor of the file: safe_open + get_tensor (hipfile, safetensors),
    and hipfile's load_file with a progress callback (its first call, and the whole load)."""
    import torch
    import safetensors

    from hipfile import safetensors as hst

    first = entries[0][0]
    out = {"first tensor": first, "first tensor bytes": entries[0][4] - entries[0][3]}

    def via(mod):
        def run():
            with mod.safe_open(path, framework="pt", device=DEVICE) as f:
                t = f.get_tensor(first)
            return t

        return run

    held = DriverHeld()
    for label, fn, hold in (("hipfile safe_open+get_tensor", via(hst), False),
                            ("hipfile safe_open+get_tensor, driver open", via(hst), True),
                            ("safetensors safe_open+get_tensor", via(safetensors), False)):
        times = []
        try:
            for _ in range(runs):
                if before:
                    before()
                if hold:
                    held.open()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                t = fn()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
                held.close()
                del t
            out[label + " s"] = {"best": round(min(times), 4), "runs": [round(x, 4) for x in times]}
        except Exception as exc:
            held.close()
            out[label + " s"] = {"error": err(exc)}
    firsts, wholes, first_bytes = [], [], []
    try:
        size = os.path.getsize(path)
        for _ in range(runs):
            if before:
                before()
            seen = []

            def progress(done, total):
                if not seen:
                    seen.append((time.perf_counter(), done))

            torch.cuda.synchronize()
            t0 = time.perf_counter()
            got = hst.load_file(path, device=DEVICE, progress=progress)
            torch.cuda.synchronize()
            wholes.append(time.perf_counter() - t0)
            firsts.append(seen[0][0] - t0)
            first_bytes.append(seen[0][1])
            del got
            gc.collect()
            torch.cuda.empty_cache()
        out["hipfile load_file first progress callback s"] = {"best": round(min(firsts), 4),
                                                               "runs": [round(x, 4) for x in firsts],
                                                               "bytes done then": first_bytes[0]}
        out["hipfile load_file with progress"] = summary(size, wholes)
    except Exception as exc:
        out["hipfile load_file with progress"] = {"error": err(exc)}
    return out


def child(path, name):
    """The hidden mode: one first load in this fresh process; prints one JSON line."""
    t0 = time.perf_counter()
    import torch

    torch.cuda.init()
    torch.empty(1, device=DEVICE)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    names = [e[0] for e in parse_header(path)[1]]
    info = {}
    load = make_loader(name, info, names)
    t2 = time.perf_counter()
    dt, result = timed_load(load, path)
    size = os.path.getsize(path)
    n = len(result[0])
    release(result)
    if getattr(load, "finish", None) is not None:
        load.finish()
    emit({"torch+cuda init s": round(t1 - t0, 3), "import s": round(t2 - t1, 3), "load s": round(dt, 4),
          "gbps": gbps(size, dt), "tensors": n, **info})


def first_loads(path, names):
    out = {}
    for name in names:
        warm(path)
        cmd = child_cmd("load", path, "--child", name)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                out[name] = {"error": f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-2000:]}"}
                continue
            out[name] = json.loads(p.stdout.strip().splitlines()[-1])
        except Exception as exc:
            out[name] = {"error": err(exc)}
        log(f"  first {name}: {out[name]}")
    return out


def versions():
    out = {"python": sys.version.split()[0]}
    for mod in ("torch", "safetensors", "hipfile", "kvikio", "fastsafetensors", "cupy", "numpy"):
        try:
            m = importlib.import_module(mod)
            out[mod] = str(getattr(m, "__version__", "?"))
        except Exception as exc:
            out[mod] = f"unavailable: {err(exc)}"
    return out


def ratios(section, base="hipfile"):
    """hipfile's best GB/s over each peer's (a first load's GB/s in the --first section)."""
    out = {}
    ours = section.get(base, {}).get("best_gbps") or section.get(base, {}).get("gbps")
    for name, entry in section.items():
        if name == base or not isinstance(entry, dict):
            continue
        theirs = entry.get("best_gbps") or entry.get("gbps")
        if ours and theirs:
            out[f"{base}/{name}"] = round(ours / theirs, 3)
    return out


def load(a):
    kvikio_compat()  # before KvikIO loads
    if a.child:  # hidden: DIR is the file
        return child(a.dir, a.child)

    import torch

    import hipfile

    torch.cuda.init()
    torch.empty(1, device=DEVICE)
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "model.safetensors")
    made = make_checkpoint(path, a.size_gb, a.layers)
    size = os.path.getsize(path)
    start, entries, meta = parse_header(path)
    res = {
        "file": path, "made now": made, "bytes": size, "tensors": len(entries), "data start": start,
        "metadata": meta, "versions": versions(), "hipfile runtime": hipfile.runtime(),
        "gpu": torch.cuda.get_device_name(0), "cpus": os.cpu_count(), "runs": a.runs,
        "env": {k: v for k, v in os.environ.items() if k.startswith(("KVIKIO_", "HIPFILE_"))},
    }
    peers = [x.strip() for x in a.peers.split(",") if x.strip()]
    for x in peers:
        if x not in PEERS:
            raise SystemExit(f"unknown peer {x!r} (choose among {', '.join(PEERS)})")
    names = ["safetensors"] + [x for x in peers if x in PEERS] + ["hipfile", "hipfile-driver-open"]
    loaders, unavailable = {}, {}
    for name in names:
        try:
            loaders[name] = make_loader(name, res, [e[0] for e in entries])
        except Exception as exc:
            unavailable[name] = {"error": f"unavailable: {err(exc)}"}
            log(f"{name} unavailable: {err(exc)}")
    verified = {}

    log("warm")
    warm(path)
    res["warm"] = dict(unavailable)
    measure(loaders, path, size, entries, a.runs, None, res["warm"], verified)
    res["first tensor warm"] = first_tensor(path, entries, None, a.runs)

    log("raw disk, O_DIRECT")
    try:
        times = []
        for _ in range(a.runs):
            t = time.perf_counter()
            raw_disk(path, a.disk_threads)
            times.append(time.perf_counter() - t)
        res["raw disk O_DIRECT"] = {**summary(size, times), "threads": a.disk_threads, "piece MiB": PIECE >> 20}
    except Exception as exc:
        res["raw disk O_DIRECT"] = {"error": err(exc)}

    if a.cold:
        log("cold")
        how = []
        res["cold"] = dict(unavailable)
        before = lambda: how.append(drop(path))  # noqa: E731
        measure(loaders, path, size, entries, a.runs, before, res["cold"], verified)
        res["first tensor cold"] = first_tensor(path, entries, before, a.runs)
        res["cache dropped by"] = sorted(set(how))
        warm(path)

    if a.first:
        log("first loads, fresh processes")
        res["first load"] = first_loads(path, [n for n in names if n not in unavailable])

    sections = [("warm", res["warm"])] + ([("cold", res["cold"])] if a.cold else [])
    sections += [("first", res["first load"])] if a.first else []
    res["ratios"] = {}
    for label, section in sections:
        res["ratios"][label] = {**ratios(section, "hipfile"), **ratios(section, "hipfile-driver-open")}
    if a.cold:
        disk = res["raw disk O_DIRECT"].get("best_gbps")
        for base in ("hipfile", "hipfile-driver-open"):
            ours = res["cold"].get(base, {}).get("best_gbps")
            if disk and ours:
                res["ratios"]["cold"][f"{base}/raw disk O_DIRECT"] = round(ours / disk, 3)
    if a.json:
        write_json(a.json, res, default=str)
    emit(res, indent=1, default=str)
