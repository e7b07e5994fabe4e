"""Where a durable save_file's time goes: variants of one save of GPU tensors, each durable,
the page cache dropped before each, two rounds in opposite orders (GB/s = file bytes / seconds;
the seconds at each step of the hand-made variants):

    LAYOUT=load|state [WAYS=name,name] python3 save_probe.py DIR

LAYOUT=load: load_bench.py's 291 tensors (4.03 GB, norms of 3840 bytes); state: save_bench.py's
78 (4.36 GB). Beside the saves: the library's own durable write of the same bytes from one GPU
buffer (auto and bypass), and dd O_DIRECT + fsync (the disk).
"""
import json, os, secrets, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from save_bench import state_dict, drop
import torch
import hipfile
import hipfile.safetensors as hs
from hipfile import File
from hipfile._saving import _plan

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
from load_bench import layout
LAYOUT = os.environ.get("LAYOUT", "load")
if LAYOUT == "load":
    gen = torch.Generator(device="cuda:0").manual_seed(5)
    tensors = {n: torch.randn(shape, device="cuda:0", dtype=torch.bfloat16, generator=gen) for n, shape in layout(1920, 32)}
else:
    tensors = state_dict(4.3)
planned, header, ranges = _plan(tensors, {"format": "pt"})
total = len(header) + max(e for _, e in ranges)
flat = torch.empty(total, dtype=torch.uint8, device="cuda:0")
sizes = [(e - b) for b, e in ranges]
print(json.dumps({"tensors": len(tensors), "bytes": total, "min": min(sizes), "max": max(sizes)}), flush=True)
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
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=64M", f"count={total >> 26}", "oflag=direct", "conv=fsync"], check=True, capture_output=True)
    return {"all": time.perf_counter() - t0}

def save(path, cache=None):
    t0 = time.perf_counter()
    hs.save_file(tensors, path, {"format": "pt"}, durable=True, cache=cache)
    return {"all": time.perf_counter() - t0}

ways = {
    "dd O_DIRECT": dd,
    "one write durable (auto)": one_write,
    "one write durable bypass": lambda p: one_write(p, "bypass"),
    "save_file durable (auto)": save,
    "save_file durable bypass": lambda p: save(p, "bypass"),
    "save_file durable keep": lambda p: save(p, "keep"),
    "steps durable": steps,
    "steps prealloc": lambda p: steps(p, prealloc=True),
    "steps per-tensor calls": lambda p: steps(p, batch=False),
    "steps not durable + fsync": lambda p: steps(p, file_durable=False),
    "steps bypass prealloc": lambda p: steps(p, cache="bypass", prealloc=True),
}
if os.environ.get("WAYS"):  # a comma-separated subset of the variants
    ways = {n: ways[n] for n in os.environ["WAYS"].split(",")}
for r in range(2):
    out = {"round": r + 1}
    for name in (list(ways) if r == 0 else list(reversed(ways))):
        path = os.path.join(d, f"probe.{secrets.token_hex(3)}")
        drop()
        t = ways[name](path)
        size = os.path.getsize(path)
        secs = max(t.values())
        out[name] = {"gbps": round(size / secs / 1e9, 3), **{k: round(v, 3) for k, v in t.items()}}
        os.unlink(path)
    print(json.dumps(out), flush=True)
