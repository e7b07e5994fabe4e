"""One fresh process: hipfile.safetensors.load_file of FILE four times into cuda:0 (the file
warm); prints each load's GB/s, the first being the process's first."""
import os
import sys
import time

import torch

torch.cuda.init()
torch.empty(1, device="cuda:0")
torch.cuda.synchronize()
import hipfile.safetensors as hst  # noqa: E402

path, size, rates = sys.argv[1], os.path.getsize(sys.argv[1]), []
for _ in range(4):
    torch.cuda.synchronize()
    t = time.perf_counter()
    got = hst.load_file(path, device="cuda:0")
    torch.cuda.synchronize()
    rates.append(size / (time.perf_counter() - t) / 1e9)
    del got
    torch.cuda.empty_cache()
print(" ".join(f"{r:.1f}" for r in rates))
