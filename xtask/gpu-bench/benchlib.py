"""What the harness's measurements share: the page cache (dropped, warmed, its share of a file),
the files they read (a file of random bytes, an LLM-shaped safetensors checkpoint, a state dict
of GPU tensors), best-of-N timing, threads started together, paired rounds' order, the block
devices' bytes, `hipfile bench`'s JSON, the JSON record, and the subcommands' parsers.

Nothing here imports a GPU package at import time (torch, cupy, kvikio and hipfile are imported
where used), so that `harness.py --help` runs on a machine without them.
"""

import argparse
import ctypes
import datetime
import json
import os
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "harness.py")
DEVICE = "cuda:0"
MIB = 1 << 20
PIECE = 64 << 20  # warming and the raw disk read this much at a time
VOCAB = 128256  # the checkpoint's embedding and lm_head rows (Llama 3's)


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def err(exc):
    return f"{type(exc).__name__}: {exc}"


def kvikio_compat():
    """KvikIO in compatibility mode unless the environment says otherwise, before KvikIO loads
    (as the project's KvikIO baseline has always run it)."""
    os.environ.setdefault("KVIKIO_COMPAT_MODE", "ON")


# --- the JSON record -----------------------------------------------------------------------------

_record = {"path": None, "command": None}
# The checkout this runs from (xtask/gpu-bench, or the bundle in target/gpu-bench), with a slash.
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + "/"


def start_record(path, command):
    """Every object `emit` is given is also appended to PATH (one JSON line, with the command
    and the time; paths inside the checkout relative to it); no file where PATH is empty."""
    _record.update(path=path or None, command=command)


def emit(obj, indent=None, stdout=True, default=None):
    """Prints OBJ as JSON (unless `stdout` is false) and appends it to the record."""
    if stdout:
        print(json.dumps(obj, indent=indent, default=default), flush=True)
    if _record["path"]:
        os.makedirs(os.path.dirname(os.path.abspath(_record["path"])), exist_ok=True)
        at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        line = json.dumps({"command": _record["command"], "at": at, "record": obj}, default=str)
        with open(_record["path"], "a") as f:
            # Paths in the checkout as the repository names them (records are committed).
            f.write(line.replace(_CHECKOUT, "") + "\n")


def write_json(path, obj, default=None):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, default=default)


def child_cmd(subcommand, *args):
    """The command line of this harness's SUBCOMMAND in a fresh process (no record of its own:
    its parent records what it reports)."""
    return [sys.executable, HARNESS, "--record", "", subcommand, *map(str, args)]


# --- the subcommands' parsers --------------------------------------------------------------------


def subcommand(sub, name, run, help, description, aliases=()):
    """The parser of the harness's subcommand NAME (and its ALIASES) in SUB, the harness's
    subparsers: HELP is its line in the harness's --help, DESCRIPTION its own --help's text (as
    written), and RUN(args) what it does. Its arguments are the caller's to add."""
    p = sub.add_parser(name, aliases=list(aliases), help=help, description=description,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(run=run)
    return p


def counts(p, **defaults):
    """Adds to parser P an option --NAME (NAME's underscores as dashes) for each keyword, in the
    order given, with its value as the default: the sizes (size_gb, size_gib) are floats, every
    other (runs, rounds, layers, ...) a whole number."""
    for name, default in defaults.items():
        p.add_argument("--" + name.replace("_", "-"), type=float if name.startswith("size_") else int, default=default)


def switches(p, *names, **helps):
    """Adds to parser P an on/off option --NAME (NAME's underscores as dashes; off unless given)
    for each of NAMES, then for each keyword, its value the option's help, in the order given."""
    for name, help in [(name, None) for name in names] + list(helps.items()):
        p.add_argument("--" + name.replace("_", "-"), action="store_true", help=help)


# --- the page cache ------------------------------------------------------------------------------


def drop(path=None, strict=False):
    """Writes back and drops the page cache: all of it where this process may (as root), and
    returns "drop_caches". Otherwise: with `strict`, fails; with PATH, drops that file's pages
    (fdatasync, posix_fadvise DONTNEED) and returns "posix_fadvise DONTNEED"; else says so on
    stderr and returns None."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "drop_caches"
    except OSError as e:
        if strict:
            raise
        if path is None:
            log(f"cannot drop caches: {e}")
            return None
        with open(path, "rb") as f:
            os.fdatasync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        return "posix_fadvise DONTNEED"


def warm(path):
    """Reads PATH through once, so that its pages are in the page cache."""
    buf = bytearray(PIECE)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def page_cache_share(path):
    """The fraction of the file's pages in the page cache (cachestat, Linux 6.5; None where
    the kernel lacks it)."""

    class Range(ctypes.Structure):
        _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]

    class Stat(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "writeback", "evicted", "recent")]

    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        r, st = Range(0, 0), Stat()
        if libc.syscall(451, fd, ctypes.byref(r), ctypes.byref(st), 0) != 0:
            return None
        return round(st.cache * 4096 / max(os.fstat(fd).st_size, 1), 4)
    finally:
        os.close(fd)


def disk_read_bytes():
    """Bytes read by whole block devices (not partitions, loop, RAM or device-mapper devices)
    since boot (/proc/diskstats)."""
    total = 0
    with open("/proc/diskstats") as f:
        for line in f:
            parts = line.split()
            name = parts[2]
            if os.path.exists(f"/sys/block/{name}") and not name.startswith(("loop", "ram", "dm-")):
                total += int(parts[5]) * 512
    return total


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


# --- the files read ------------------------------------------------------------------------------


def make_file(path, size, exact=False):
    """PATH of SIZE random bytes (64 MiB of them repeated), unless it is there with SIZE bytes
    (`exact`) or at least SIZE bytes; written back before it is read."""
    if os.path.exists(path) and (os.path.getsize(path) == size if exact else os.path.getsize(path) >= size):
        return
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    block = os.urandom(64 << 20)
    with open(path, "wb") as f:
        left = size
        while left > 0:
            f.write(block[: min(left, len(block))])
            left -= len(block)
    os.sync()


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


def make_checkpoint(path, size_gb, layers=32):
    """PATH, unless it exists: ~SIZE_GB of random bf16 tensors shaped like an LLM's (`layout`,
    the hidden size scaled to reach SIZE_GB: about 290 tensors at 32 layers). True if made."""
    if os.path.exists(path):
        return False
    import torch
    from safetensors.torch import save_file

    if os.path.dirname(path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    target = size_gb * 1e9
    hidden = min(range(128, 16384 + 1, 64), key=lambda h: abs(nbytes(layout(h, layers)) - target))
    entries = layout(hidden, layers)
    log(f"making {path}: hidden {hidden}, {len(entries)} tensors, {nbytes(entries) / 1e9:.2f} GB")
    gen = torch.Generator(device=DEVICE).manual_seed(1234)
    tensors = {}
    for name, shape in entries:  # made on the GPU one at a time, kept in host memory
        tensors[name] = torch.randn(shape, device=DEVICE, dtype=torch.bfloat16, generator=gen).cpu()
    tmp = path + ".tmp"
    # "made_by" as the checkpoints made before the harness say it, so that the files are the same.
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


def state_dict(size_gb, device=DEVICE, prefix="", seed=7):
    """bf16 and fp32 tensors of an LLM's layer shapes on `device`, `size_gb` GB of them (3 a
    layer: qkv, up, norm), their names after `prefix`."""
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    hidden, tensors, total, i = 4096, {}, 0, 0
    while total < size_gb * 1e9:
        for name, shape, dtype in (
            (f"{prefix}layers.{i}.attn.qkv.weight", (3 * hidden, hidden), torch.bfloat16),
            (f"{prefix}layers.{i}.mlp.up.weight", (2 * hidden, hidden), torch.bfloat16),
            (f"{prefix}layers.{i}.norm.weight", (hidden,), torch.float32),
        ):
            t = torch.randint(0, 1 << 15, shape, generator=gen, device=device, dtype=torch.int16).view(dtype)
            tensors[name] = t if dtype == torch.bfloat16 else torch.randn(shape, generator=gen, device=device)
            total += tensors[name].numel() * tensors[name].element_size()
        i += 1
    if device != "cpu":
        torch.cuda.synchronize()
    return tensors


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors.values())


# --- timing --------------------------------------------------------------------------------------


def best_gbps(fn, nbytes, runs, before=None, sync=None):
    """The best GB/s (1e9 B/s) of RUNS calls of FN moving NBYTES, each timed alone: `before()`
    ahead of the clock, `sync()` (the device's work done) inside it."""
    best = 0.0
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        best = max(best, nbytes / (time.perf_counter() - t) / 1e9)
    return best


def together(work, n, after=None):
    """Seconds from the moment `n` threads are all ready until all are done (and `after()` has
    run): thread `i` first runs `work(i)`, its setup, untimed, which returns what it then runs
    with the others."""
    barrier = threading.Barrier(n + 1)

    def run(i):
        go = work(i)
        barrier.wait()
        go()

    ths = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in ths:
        th.start()
    barrier.wait()
    start = time.perf_counter()
    for th in ths:
        th.join()
    if after:
        after()
    return time.perf_counter() - start


def turn(items, r):
    """Round R's order of paired measurements: as given in even rounds, reversed in odd ones."""
    return list(items) if r % 2 == 0 else list(reversed(list(items)))


def rotate(items, r):
    """Round R's order, rotated by R (so that none is always first)."""
    items = list(items)
    k = r % len(items)
    return items[k:] + items[:k]


def hipfile_bench(binary, *args):
    """`BINARY bench ARGS` (which should include --json): its first result."""
    out = subprocess.run([binary, "bench", *map(str, args)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["results"][0]
