"""    python3 dcp_files.py DIR

dcp.save durable with hipfile.dcp.StorageWriter(files=k), k = 1, 2, 4, 8, and FileSystemWriter,
the page cache dropped before each (GB/s of tensor bytes)."""
import json, os, shutil, sys, time, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.filterwarnings("ignore")
from save_bench import state_dict, drop
import torch
import torch.distributed.checkpoint as dcp
import hipfile.dcp as hd
d = sys.argv[1]
sd = state_dict(4.3)
size = sum(t.numel() * t.element_size() for t in sd.values())
def run(make):
    path = os.path.join(d, "ck")
    shutil.rmtree(path, ignore_errors=True)
    drop()
    t = time.perf_counter()
    dcp.save(sd, storage_writer=make(path))
    s = time.perf_counter() - t
    shutil.rmtree(path)
    return round(size / s / 1e9, 3)
ways = {f"hipfile files={k}": (lambda k: lambda p: hd.StorageWriter(p, files=k))(k) for k in (1, 2, 4, 8)}
ways["FileSystemWriter"] = lambda p: dcp.FileSystemWriter(p)
run(ways["hipfile files=8"])  # warm-up: the driver open
for r in range(2):
    names = list(ways) if r == 0 else list(reversed(ways))
    print(json.dumps({"round": r + 1, **{n: run(ways[n]) for n in names}}), flush=True)
