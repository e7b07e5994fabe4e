"""Saving a state dict of GPU tensors.

  save        hipfile.safetensors.save_file beside safetensors.torch.save_file and torch.save, to
              the page cache and durable, and the disk's sequential write speed (dd, O_DIRECT,
              fsync) in the same run
  save-steps  where a durable save_file's time goes: variants of one save, each durable, with
              the seconds at each step of the hand-made ones
"""

import os
import secrets
import subprocess
import time

from benchlib import counts, drop, emit, layout, state_dict, subcommand, turn


def register(sub):
    p = subcommand(sub, "save", save, "save_file of GPU tensors beside safetensors and torch.save, cached and "
                   "durable, and the disk", SAVE_DOC)
    p.add_argument("dir")
    counts(p, size_gb=4.3, rounds=2)

    p = subcommand(sub, "save-steps", save_steps, "where a durable save_file's time goes: variants, step by step",
                   STEPS_DOC)
    p.add_argument("dir")
    p.add_argument("--layout", choices=["load", "state"], default=os.environ.get("LAYOUT", "load"),
                   help="the tensors saved (default: $LAYOUT, else load)")
    p.add_argument("--ways", default=os.environ.get("WAYS", ""),
                   help="a comma-separated subset of the variants (default: $WAYS, else all)")


SAVE_DOC = """Saving a state dict of GPU tensors: hipfile.safetensors.save_file beside safetensors.torch.save_file
and torch.save, to the page cache and durable, and the disk's sequential write speed (dd,
O_DIRECT, fsync) in the same process's run (GB/s = bytes of the file / seconds / 1e9):

    harness.py save DIR [--size-gb 4.3] [--rounds 2]

The state dict: bf16 and fp32 tensors on cuda:0 shaped like an LLM's layers (random bytes).
Before each save the page cache is written back and dropped (as root), so every save starts
with nothing dirty; each file is removed after it is timed. Checked once, outside the timers:
hipfile's file is byte for byte safetensors' and loads back (safetensors.torch.load_file) with
every tensor bitwise equal. One JSON line per round.
"""

STEPS_DOC = """Where a durable save_file's time goes: variants of one save of GPU tensors, each durable,
the page cache dropped before each, two rounds in opposite orders (GB/s = file bytes / seconds;
the seconds at each step of the hand-made variants):

    harness.py save-steps DIR [--layout load|state] [--ways name,name]

--layout load: `load`'s checkpoint layout at hidden 1920 (291 tensors, 4.03 GB, norms of 3840
bytes); state: `save`'s state dict (78 tensors, 4.36 GB). Beside the saves: the library's own
durable write of the same bytes from one GPU buffer (auto and bypass), and dd O_DIRECT + fsync
(the disk).
"""


def save(a):
    import safetensors.torch as st
    import torch

    import hipfile.safetensors as hs

    os.makedirs(a.dir, exist_ok=True)
    tensors = state_dict(a.size_gb)
    ours, theirs = os.path.join(a.dir, "ours.safetensors"), os.path.join(a.dir, "theirs.safetensors")
    hs.save_file(tensors, ours, {"format": "pt"})
    st.save_file(tensors, theirs, {"format": "pt"})
    same = subprocess.run(["cmp", "-s", ours, theirs]).returncode == 0
    back = st.load_file(ours, device="cuda:0")
    equal = all(torch.equal(back[k].view(torch.uint8), v.view(torch.uint8)) for k, v in tensors.items())
    del back
    emit({"tensors": len(tensors), "bytes": os.path.getsize(ours), "same bytes as safetensors": same,
          "loads back bitwise equal": equal})
    os.unlink(theirs)

    def st_fsync(path):
        st.save_file(tensors, path, {"format": "pt"})
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    def dd(path):
        count = int(a.size_gb * 1e9) >> 26
        subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=64M", f"count={count}", "oflag=direct",
                        "conv=fsync"], check=True, capture_output=True)

    ways = {
        "hipfile save_file": lambda path: hs.save_file(tensors, path, {"format": "pt"}),
        "safetensors save_file": lambda path: st.save_file(tensors, path, {"format": "pt"}),
        "torch.save": lambda path: torch.save(tensors, path),
        "hipfile save_file durable": lambda path: hs.save_file(tensors, path, {"format": "pt"}, durable=True),
        "safetensors save_file + fsync": st_fsync,
        "dd O_DIRECT + fsync (the disk)": dd,
    }
    for r in range(a.rounds):
        out = {"round": r + 1}
        for name in turn(ways, r):
            path = os.path.join(a.dir, "bench.out")
            drop()
            start = time.perf_counter()
            ways[name](path)
            seconds = time.perf_counter() - start
            out[name] = round(os.path.getsize(path) / seconds / 1e9, 3)
            os.unlink(path)
        emit(out)
    os.unlink(ours)


def save_steps(a):
    import torch

    import hipfile.safetensors as hs
    from hipfile import File
    from hipfile._saving import _plan

    d = a.dir
    os.makedirs(d, exist_ok=True)
    if a.layout == "load":
        gen = torch.Generator(device="cuda:0").manual_seed(5)
        tensors = {n: torch.randn(shape, device="cuda:0", dtype=torch.bfloat16, generator=gen)
                   for n, shape in layout(1920, 32)}
    else:
        tensors = state_dict(4.3)
    planned, header, ranges = _plan(tensors, {"format": "pt"})
    total = len(header) + max(e for _, e in ranges)
    flat = torch.empty(total, dtype=torch.uint8, device="cuda:0")
    sizes = [(e - b) for b, e in ranges]
    emit({"tensors": len(tensors), "bytes": total, "min": min(sizes), "max": max(sizes)})
    hs.save_file({"w": tensors[next(iter(tensors))]}, os.path.join(d, "warm.safetensors"))  # the driver open, once
    os.unlink(os.path.join(d, "warm.safetensors"))

    def steps(path, durable=True, cache=None, prealloc=False, batch=True, final_sync=True, file_durable=None):
        t = {}
        t0 = time.perf_counter()
        fd_dur = durable if file_durable is None else file_durable
        with File(path, "x", file_mode=0o666, cache=cache, durable=fd_dur) as f:
            if prealloc:
                os.posix_fallocate(f.fileno(), 0, total)
            t["open"] = time.perf_counter() - t0
            f.write(header)
            t["header"] = time.perf_counter() - t0
            start = len(header)
            spans = [(p.memory, e - b, start + b, 0) for p, (b, e) in zip(planned, ranges)]
            if batch:
                f._move_all(True, spans)
            else:
                for s in spans:
                    f._move_all(True, [s])
            t["data"] = time.perf_counter() - t0
            if final_sync:
                os.fsync(f.fileno())
            t["fsync"] = time.perf_counter() - t0
        t["close"] = time.perf_counter() - t0
        return t

    def one_write(path, cache=None):
        t0 = time.perf_counter()
        with File(path, "x", file_mode=0o666, cache=cache, durable=True) as f:
            f._move_all(True, [(flat, total, 0, 0)])
            os.fsync(f.fileno())
        return {"all": time.perf_counter() - t0}

    def dd(path):
        t0 = time.perf_counter()
        subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=64M", f"count={total >> 26}", "oflag=direct",
                        "conv=fsync"], check=True, capture_output=True)
        return {"all": time.perf_counter() - t0}

    def saved(path, cache=None):
        t0 = time.perf_counter()
        hs.save_file(tensors, path, {"format": "pt"}, durable=True, cache=cache)
        return {"all": time.perf_counter() - t0}

    ways = {
        "dd O_DIRECT": dd,
        "one write durable (auto)": one_write,
        "one write durable bypass": lambda p: one_write(p, "bypass"),
        "save_file durable (auto)": saved,
        "save_file durable bypass": lambda p: saved(p, "bypass"),
        "save_file durable keep": lambda p: saved(p, "keep"),
        "steps durable": steps,
        "steps prealloc": lambda p: steps(p, prealloc=True),
        "steps per-tensor calls": lambda p: steps(p, batch=False),
        "steps not durable + fsync": lambda p: steps(p, file_durable=False),
        "steps bypass prealloc": lambda p: steps(p, cache="bypass", prealloc=True),
    }
    if a.ways:
        ways = {n: ways[n] for n in a.ways.split(",")}
    for r in range(2):
        out = {"round": r + 1}
        for name in turn(ways, r):
            path = os.path.join(d, f"probe.{secrets.token_hex(3)}")
            drop()
            t = ways[name](path)
            size = os.path.getsize(path)
            secs = max(t.values())
            out[name] = {"gbps": round(size / secs / 1e9, 3), **{k: round(v, 3) for k, v in t.items()}}
            os.unlink(path)
        emit(out)
