# load_storage of the gds benchmark's shapes (9.27 GB, none registered) from a file as written
# (its pages cached by the writes) and read back (the pages dropped, then read with 64 MiB reads,
# as a checkpoint on disk is cached), two rounds.
import os, sys, time
sys.path.insert(0, "xtask/gpu-bench")
from cufile_bench import llm_shapes, warm
import torch
import torch.cuda.gds as gds

d = sys.argv[1]
_, sizes, offsets = llm_shapes(9)
path, total = os.path.join(d, "cache.bin"), sum(sizes)
dst = [torch.empty(n, dtype=torch.uint8, device="cuda:0") for n in sizes]

def write():
    with open(path, "wb") as f:
        for at, n in zip(offsets, sizes):
            f.seek(at)
            f.write(os.urandom(1 << 20) * (n >> 20) + os.urandom(n % (1 << 20)))
    os.sync()

def read_back():
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    t = time.perf_counter(); warm(path)
    return round(os.path.getsize(path) / (time.perf_counter() - t) / 1e9, 2)

def load(n=3):
    f = gds.GdsFile(path, os.O_RDONLY)
    out = []
    for _ in range(n):
        torch.cuda.synchronize(); t = time.perf_counter()
        for x, off in zip(dst, offsets):
            f.load_storage(x.untyped_storage(), off)
        torch.cuda.synchronize()
        out.append(round(total / (time.perf_counter() - t) / 1e9, 2))
    del f
    return out

for r in (1, 2):
    write()
    print(f"round {r}: as written {load()}", flush=True)
    cold = read_back()
    print(f"round {r}: read back (read from disk at {cold} GB/s) {load()}", flush=True)
with open(path, "rb") as c:
    c.seek(offsets[-1]); want = c.read(1 << 20)
print("last tensor's first MiB as in the file:", bytes(dst[-1][: 1 << 20].cpu().numpy()) == want)
os.unlink(path)
