#!/usr/bin/env python3
"""cuFile's clients in a PyTorch process after the one documented step (`python -m hipfile.cufile
use`, docs/cufile.md "In a PyTorch process"): InstantTensor's CUFILE backend beside its default
backend and hipfile's load_file, on one safetensors checkpoint, warm and cold, every tensor
compared bitwise with safetensors' own read (on the host). One loader per process (a fresh
process each run, as a server starts), so each run pays what a first load pays.

    python3 cufile_clients.py DIR [--size-gb 4] [--runs 2]      # the whole comparison (JSON)
    python3 cufile_clients.py --child LOADER PATH [--cold]       # one load (used by the above)

LOADER: instanttensor-cufile (backend=CUFILE), instanttensor (its default: URING, then AIO),
hipfile (hipfile.safetensors.load_file). Each child reports its seconds, whether every tensor was
bitwise equal, and the cuFile libraries mapped into it (hipfile.cufile.loaded()).
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def load(loader, path):
    import torch

    if loader.startswith("instanttensor"):
        import instanttensor

        kwargs = {"backend": instanttensor.Backend.CUFILE} if loader == "instanttensor-cufile" else {}
        tensors = {}
        with instanttensor.safe_open(path, framework="pt", device=0, **kwargs) as f:
            for name, tensor in f.tensors():
                tensors[name] = tensor
    else:
        import hipfile.safetensors

        tensors = hipfile.safetensors.load_file(path, device="cuda:0")
    torch.cuda.synchronize()
    return tensors


def child(loader, path, cold):
    import torch
    from safetensors.torch import load_file as host_load

    from hipfile import cufile
    from load_bench import drop_cache

    torch.zeros(1, device="cuda:0")  # CUDA initialised outside the timer
    if cold:
        drop_cache(path)
    start = time.perf_counter()
    tensors = load(loader, path)
    seconds = time.perf_counter() - start
    reference = host_load(path)
    bitwise = sorted(tensors) == sorted(reference) and all(
        torch.equal(tensors[n].cpu().view(torch.uint8), reference[n].view(torch.uint8)) for n in reference
    )
    print(json.dumps({"seconds": seconds, "bitwise": bitwise, "cufile_loaded": cufile.loaded()}))


def run_child(loader, path, cold):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", loader, path] + (["--cold"] if cold else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-3:]}"}
    result = json.loads(lines[-1])
    result["gbps"] = os.path.getsize(path) / result["seconds"] / 1e9
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir", nargs="?")
    parser.add_argument("--size-gb", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--child")
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.dir, args.cold)

    from hipfile import cufile
    from load_bench import make_checkpoint, warm_file

    path = os.path.join(args.dir, "model.safetensors")
    make_checkpoint(path, args.size_gb, 32)
    report = {"size_bytes": os.path.getsize(path), "status_before": cufile.status()}
    # Before the step: NVIDIA's library, which has no GPUDirect module to use here.
    report["before_use"] = {"instanttensor-cufile": run_child("instanttensor-cufile", path, False)}
    report["use"] = [str(p) for p in cufile.use()]
    try:
        report["status_after"] = cufile.status()
        rounds = []
        for _ in range(args.runs):
            for cold in (False, True):
                if not cold:
                    warm_file(path)
                for loader in ("instanttensor-cufile", "instanttensor", "hipfile"):
                    result = run_child(loader, path, cold)
                    rounds.append({"loader": loader, "cold": cold, **result})
                    print(json.dumps(rounds[-1]), file=sys.stderr)
        report["runs"] = rounds
    finally:
        report["restore"] = [str(p) for p in cufile.restore()]
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
