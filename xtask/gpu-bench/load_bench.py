#!/usr/bin/env python3
"""A safetensors checkpoint into GPU 0 with hipfile.safetensors beside its peers, in one process on
one file (GB/s = bytes of the file / seconds / 1e9; every timer stops after
torch.cuda.synchronize()):

    python3 load_bench.py DIR [--size-gb 9.2] [--runs 3] [--cold] [--peers kvikio,fastsafetensors] [--first]

DIR/model.safetensors is made if missing: ~SIZE GB of random bf16 tensors shaped like an LLM's
(32 layers of q/k/v/o, gate/up/down and two norms, an embedding and an lm_head of 128256 rows;
the hidden size is scaled to reach SIZE: about 290 tensors).

Loaders, each run once per round (rounds interleave the loaders; best of RUNS and every run):
  safetensors      safetensors.torch.load_file(path, device="cuda:0")
  kvikio           kvikio.CuFile(path, "r").read(buf) of the whole file into one torch uint8
                   buffer, num_threads 16 (its default is reported), then the tensors as views
                   of it from the header (parsed here with json; parsing and views are timed).
                   KVIKIO_COMPAT_MODE defaults to ON, as the project's KvikIO baseline runs it
  kvikio-default   the same with KvikIO's default num_threads
  fastsafetensors  SafeTensorsFileLoader(SingleGroup(), cuda:0, nogds=True), copy_files_to_device,
                   get_tensor for every name (or fastsafe_open where that is what the package has)
  fastsafetensors-gds  the same with nogds=False (cuFile, compatibility mode there)
  hipfile          hipfile.safetensors.load_file(path, device="cuda:0"), as a lone call runs:
                   it opens hipfile's driver (staging memory, threads) and closes it again
  hipfile-driver-open  the same with one use of the driver held from before the timer starts
                   (as in a process that keeps hipfile open): the load alone
  hipfile-copy     load_file with copy=True (each tensor its own memory)
--peers picks among kvikio, kvikio-default, fastsafetensors, fastsafetensors-gds and
hipfile-copy; safetensors, hipfile and hipfile-driver-open always run. A peer that cannot be
imported or fails is reported with its error and the others go on. Each loader's tensors are
checked once, outside the timers: every name, dtype and shape, and the bytes of the first, the
last and 5 random tensors against safetensors' own (read on the host).

Warm: the file is read through once first (page cache). --cold: the same loaders with the page
cache dropped before every run (/proc/sys/vm/drop_caches as root, else posix_fadvise DONTNEED
on the file). The raw disk: the file read with O_DIRECT into page-aligned host buffers (mmap),
os.preadv in 64 MiB pieces from 8 threads: the disk's ceiling (the page cache plays no part).

Time to first tensor (hipfile, with and without the driver held open, and safetensors beside
it): safe_open(path, device="cuda:0").get_tensor(first name in the file), timed from the call
to safe_open; and load_file's progress callback: when the first callback arrives (hipfile calls
it after each 256 MiB step has landed, so it is the time to the first 256 MiB, not to one
tensor) and the whole load with the callback.

--first: each loader's first load in a fresh process (this script in a hidden mode: imports
torch, initialises CUDA, imports the loader, times one load), the file warm; reported apart.

One JSON object is printed: figures, ratios hipfile/peer (warm, cold, first) and versions.
"""

import argparse
import gc
import importlib
import inspect
import itertools
import json
import mmap
import os
import random
import struct
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("KVIKIO_COMPAT_MODE", "ON")  # before KvikIO loads, as kvikio_baseline.py runs it

DEVICE = "cuda:0"
PIECE = 64 << 20
PEERS = ["kvikio", "kvikio-default", "fastsafetensors", "fastsafetensors-gds", "hipfile-copy"]
VOCAB = 128256


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def err(exc):
    return f"{type(exc).__name__}: {exc}"


# --- the checkpoint ----------------------------------------------------------------------------


def layout(hidden, layers):
    """(name, shape) of an LLM-like checkpoint of this hidden size (Llama-3's proportions)."""
    inter = max(256, round(3.5 * hidden / 256) * 256)
    kv = max(32, hidden // 4)
    out = [("model.embed_tokens.weight", (VOCAB, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (hidden,)),
            (p + "self_attn.q_proj.weight", (hidden, hidden)),
            (p + "self_attn.k_proj.weight", (kv, hidden)),
            (p + "self_attn.v_proj.weight", (kv, hidden)),
            (p + "self_attn.o_proj.weight", (hidden, hidden)),
            (p + "post_attention_layernorm.weight", (hidden,)),
            (p + "mlp.gate_proj.weight", (inter, hidden)),
            (p + "mlp.up_proj.weight", (inter, hidden)),
            (p + "mlp.down_proj.weight", (hidden, inter)),
        ]
    out += [("model.norm.weight", (hidden,)), ("lm_head.weight", (VOCAB, hidden))]
    return out


def nbytes(entries):
    total = 0
    for _, shape in entries:
        n = 2
        for d in shape:
            n *= d
        total += n
    return total


def make_checkpoint(path, size_gb, layers):
    if os.path.exists(path):
        return False
    import torch
    from safetensors.torch import save_file

    target = size_gb * 1e9
    hidden = min(range(128, 16384 + 1, 64), key=lambda h: abs(nbytes(layout(h, layers)) - target))
    entries = layout(hidden, layers)
    log(f"making {path}: hidden {hidden}, {len(entries)} tensors, {nbytes(entries) / 1e9:.2f} GB")
    gen = torch.Generator(device=DEVICE).manual_seed(1234)
    tensors = {}
    for name, shape in entries:  # made on the GPU one at a time, kept in host memory
        tensors[name] = torch.randn(shape, device=DEVICE, dtype=torch.bfloat16, generator=gen).cpu()
    tmp = path + ".tmp"
    save_file(tensors, tmp, metadata={"format": "pt", "made_by": "load_bench.py", "hidden": str(hidden)})
    del tensors
    os.replace(tmp, path)
    os.sync()  # dirty pages would slow the first reads
    return True


def parse_header(path):
    """(data_start, [(name, dtype, shape, begin, end)] in offset order, metadata)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    meta = header.pop("__metadata__", None)
    entries = sorted(
        ((name, e["dtype"], tuple(e["shape"]), e["data_offsets"][0], e["data_offsets"][1]) for name, e in header.items()),
        key=lambda e: (e[3], e[4]),
    )
    return 8 + n, entries, meta


def torch_dtype(name):
    import torch

    return {
        "BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16, "F16": torch.float16,
        "BF16": torch.bfloat16, "I32": torch.int32, "F32": torch.float32, "F64": torch.float64,
        "I64": torch.int64, "C64": torch.complex64, "F8_E4M3": getattr(torch, "float8_e4m3fn", None),
        "F8_E5M2": getattr(torch, "float8_e5m2", None), "U16": getattr(torch, "uint16", None),
        "U32": getattr(torch, "uint32", None), "U64": getattr(torch, "uint64", None),
    }[name]


# --- the page cache and the disk ----------------------------------------------------------------


def warm_file(path):
    buf = bytearray(PIECE)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def drop_cache(path):
    """Drops the page cache (all of it as root, else the file's pages); says how."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "drop_caches"
    except OSError:
        with open(path, "rb") as f:
            os.fdatasync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        return "posix_fadvise DONTNEED"


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


# --- the loaders -------------------------------------------------------------------------------
# Each is made once (imports, settings) and gives load(path) -> (dict of tensors, cleanup or None).


def kvikio_threads(kvikio, n=None):
    """KvikIO's num_threads (set to n first, where n is given), across its API versions."""
    d = kvikio.defaults
    if n is not None:
        try:
            d.set("num_threads", n)
        except (AttributeError, TypeError):
            d.num_threads_reset(n)
    try:
        return d.get("num_threads")
    except (AttributeError, TypeError):
        return d.num_threads()


def kvikio_setting(kvikio, key):
    try:
        return kvikio.defaults.get(key)
    except Exception:
        try:
            return getattr(kvikio.defaults, key)()
        except Exception as exc:
            return err(exc)


def make_kvikio(threads, info):
    import kvikio
    import kvikio.defaults
    import torch

    settings = info.setdefault("kvikio settings", {})
    settings.setdefault("num_threads default", kvikio_threads(kvikio))
    settings["compat_mode"] = str(kvikio_setting(kvikio, "compat_mode"))
    default = settings["num_threads default"]
    if threads:
        settings["num_threads used by 'kvikio'"] = threads

    def load(path):
        start, entries, _ = parse_header(path)
        size = os.path.getsize(path)
        buf = torch.empty(size, dtype=torch.uint8, device=DEVICE)
        f = kvikio.CuFile(path, "r")
        try:
            n = f.read(buf)
        finally:
            f.close()
        if n != size:
            raise OSError(f"KvikIO read {n} of {size} bytes")
        out = {}
        for name, dtype, shape, b, e in entries:
            out[name] = buf[start + b : start + e].view(torch_dtype(dtype)).reshape(shape)
        return out, None

    # Outside the timer: a change of num_threads makes KvikIO a new thread pool.
    load.prepare = lambda: kvikio_threads(kvikio, threads or default)
    return load


def make_fastsafetensors(nogds, info, names):
    import torch

    api = {}
    try:
        from fastsafetensors import SafeTensorsFileLoader, SingleGroup

        sig = inspect.signature(SafeTensorsFileLoader)
        api["SafeTensorsFileLoader"] = str(sig)
        ann = sig.parameters["device"].annotation if "device" in sig.parameters else None
        device = DEVICE if ann in (str, "str") else torch.device(DEVICE)
        kwargs = {"nogds": nogds} if "nogds" in sig.parameters else {}
    except Exception as exc:
        SafeTensorsFileLoader = None
        api["SafeTensorsFileLoader"] = err(exc)
    info.setdefault("fastsafetensors api", api)

    def unwrap(t):
        if isinstance(t, torch.Tensor):
            return t
        for attr in ("get_raw", "real_tensor", "tensor"):
            v = getattr(t, attr, None)
            if v is not None:
                v = v() if callable(v) else v
                if isinstance(v, torch.Tensor):
                    return v
        raise TypeError(f"fastsafetensors gave a {type(t).__name__}, not a torch tensor")

    if SafeTensorsFileLoader is not None:
        try:
            group = SingleGroup()
        except TypeError:
            group = SingleGroup

        def load(path):
            loader = SafeTensorsFileLoader(group, device, **kwargs)
            loader.add_filenames({0: [path]})
            fb = loader.copy_files_to_device()
            out = {name: unwrap(fb.get_tensor(name)) for name in names}

            def cleanup():
                fb.close()
                loader.close()

            return out, cleanup

        return load

    from fastsafetensors import fastsafe_open

    def load_open(path):
        f = fastsafe_open(filenames=[path], framework="pt", device=DEVICE, nogds=nogds)
        out = {name: unwrap(f.get_tensor(name)) for name in names}
        return out, getattr(f, "close", None)

    api["fastsafe_open"] = str(inspect.signature(fastsafe_open))
    return load_open


def make_loader(name, info, names):
    """load(path) -> (tensors, cleanup or None) for one loader; `names` are the file's."""
    if name == "safetensors":
        from safetensors.torch import load_file

        return lambda path: (load_file(path, device=DEVICE), None)
    if name in ("hipfile", "hipfile-copy", "hipfile-driver-open"):
        from hipfile.safetensors import load_file

        copy = name == "hipfile-copy"

        def load(path):
            return load_file(path, device=DEVICE, copy=copy), None

        if name == "hipfile-driver-open":
            held = DriverHeld()
            load.prepare, load.finish = held.open, held.close
        return load
    if name == "kvikio":
        return make_kvikio(16, info)
    if name == "kvikio-default":
        return make_kvikio(None, info)
    if name == "fastsafetensors":
        return make_fastsafetensors(True, info, names)
    if name == "fastsafetensors-gds":
        return make_fastsafetensors(False, info, names)
    raise ValueError(f"unknown loader {name!r}")


class DriverHeld:
    """One use of hipfile's driver held from before a timer starts until after the run: a load
    then finds the driver open (its staging memory and threads made), as in a process that
    keeps hipfile open, where a lone load_file opens and closes the driver itself."""

    def __init__(self):
        self.driver = None

    def open(self):
        import hipfile

        if self.driver is None:
            self.driver = hipfile.Driver()
            self.driver.open()

    def close(self):
        if self.driver is not None:
            self.driver, d = None, self.driver
            d.close()


def release(result):
    tensors, cleanup = result
    tensors.clear()
    del tensors
    gc.collect()
    if cleanup is not None:
        cleanup()
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def timed_load(load, path):
    import torch

    prepare = getattr(load, "prepare", None)
    if prepare is not None:
        prepare()
    torch.cuda.synchronize()
    t = time.perf_counter()
    result = load(path)
    torch.cuda.synchronize()
    return time.perf_counter() - t, result


def verify(tensors, path, entries):
    """Every name, dtype and shape; the bytes of the first, the last and 5 random tensors against
    safetensors' own (read into host memory). Returns True or what differs."""
    import torch
    from safetensors import safe_open

    names = [e[0] for e in entries]
    if sorted(tensors) != sorted(names):
        return f"names differ: {len(tensors)} tensors against {len(names)}"
    pick = [names[0], names[-1]] + random.Random(7).sample(names, min(5, len(names)))
    with safe_open(path, framework="pt", device="cpu") as f:
        for name in names:
            t = tensors[name]
            want = f.get_slice(name)
            if list(t.shape) != list(want.get_shape()) or t.device != torch.device(DEVICE):
                return f"{name}: shape {list(t.shape)} on {t.device}, want {want.get_shape()} on {DEVICE}"
            if t.dtype != torch_dtype(want.get_dtype()):
                return f"{name}: dtype {t.dtype}, want {want.get_dtype()}"
        for name in pick:
            t, want = tensors[name], f.get_tensor(name)
            if t.dtype != want.dtype:
                return f"{name}: dtype {t.dtype}, want {want.dtype}"
            a = t.detach().contiguous().reshape(-1).view(torch.uint8).cpu()
            b = want.contiguous().reshape(-1).view(torch.uint8)
            if not torch.equal(a, b):
                return f"{name}: bytes differ"
    return True


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
    print(json.dumps({"torch+cuda init s": round(t1 - t0, 3), "import s": round(t2 - t1, 3), "load s": round(dt, 4),
                      "gbps": gbps(size, dt), "tensors": n, **info}))


def first_loads(path, names):
    out = {}
    for name in names:
        warm_file(path)
        cmd = [sys.executable, os.path.abspath(__file__), path, "--child", name]
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir")
    p.add_argument("--size-gb", type=float, default=9.2)
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cold", action="store_true")
    p.add_argument("--peers", default="kvikio,fastsafetensors")
    p.add_argument("--first", action="store_true")
    p.add_argument("--disk-threads", type=int, default=8)
    p.add_argument("--json", help="also write the JSON here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
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
            p.error(f"unknown peer {x!r} (choose among {', '.join(PEERS)})")
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
    warm_file(path)
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
        before = lambda: how.append(drop_cache(path))  # noqa: E731
        measure(loaders, path, size, entries, a.runs, before, res["cold"], verified)
        res["first tensor cold"] = first_tensor(path, entries, before, a.runs)
        res["cache dropped by"] = sorted(set(how))
        warm_file(path)

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
    text = json.dumps(res, indent=1, default=str)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
