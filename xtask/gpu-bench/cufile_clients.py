"""cuFile's clients in a PyTorch process, over whichever libcufile.so.0 the process loads.

  clients       InstantTensor's CUFILE backend beside its default backend and hipfile's
                load_file after `python -m hipfile.cufile use`, each load in a fresh process
  gds-examples  the examples of PyTorch's own torch.cuda.gds documentation, run as doctests
"""

import doctest
import json
import os
import subprocess
import sys
import tempfile
import time

from benchlib import child_cmd, counts, drop, emit, loaded_cufile, make_checkpoint, subcommand, switches, warm


def register(sub):
    p = subcommand(sub, "clients", clients, "InstantTensor's CUFILE backend beside its default and hipfile's "
                   "load_file, after `python -m hipfile.cufile use`", CLIENTS_DOC)
    p.add_argument("dir", nargs="?")
    counts(p, size_gb=4.0, runs=2)
    p.add_argument("--child", help="one load in this process, by LOADER (DIR is then the file)")
    switches(p, "cold")

    p = subcommand(sub, "gds-examples", gds_examples, "PyTorch's own torch.cuda.gds examples, run as doctests",
                   EXAMPLES_DOC)
    p.add_argument("dir", nargs="?")


CLIENTS_DOC = """cuFile's clients in a PyTorch process after the one documented step (`python -m hipfile.cufile
use`, docs/cufile.md "In a PyTorch process"): InstantTensor's CUFILE backend beside its default
backend and hipfile's load_file, on one safetensors checkpoint, warm and cold, every tensor
compared bitwise with safetensors' own read (on the host). One loader per process (a fresh
process each run, as a server starts), so each run pays what a first load pays.

    harness.py clients DIR [--size-gb 4] [--runs 2]      # the whole comparison (JSON)
    harness.py clients --child LOADER PATH [--cold]       # one load (used by the above)

LOADER: instanttensor-cufile (backend=CUFILE), instanttensor (its default: URING, then AIO),
hipfile (hipfile.safetensors.load_file). Each child reports its seconds, whether every tensor was
bitwise equal, and the cuFile libraries mapped into it (hipfile.cufile.loaded()).
"""

EXAMPLES_DOC = """Runs the examples of the installed PyTorch's own `torch.cuda.gds` documentation (the
docstrings of `GdsFile`, `gds_register_buffer` and `gds_deregister_buffer`, as doctests) over
whichever libcufile.so.0 the process loads, in a temporary directory; one JSON object on stdout:
examples tried and failed per docstring, and the libcufile mapped.

PyTorch marks these examples skipped in its own doctest runs (they need a file system cuFile
accepts); here they run, with `f` the path of a file in DIR.

    harness.py gds-examples DIR
"""


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

    torch.zeros(1, device="cuda:0")  # CUDA initialised outside the timer
    if cold:
        drop(path)
    start = time.perf_counter()
    tensors = load(loader, path)
    seconds = time.perf_counter() - start
    reference = host_load(path)
    bitwise = sorted(tensors) == sorted(reference) and all(
        torch.equal(tensors[n].cpu().view(torch.uint8), reference[n].view(torch.uint8)) for n in reference
    )
    print(json.dumps({"seconds": seconds, "bitwise": bitwise, "cufile_loaded": cufile.loaded()}))


def run_child(loader, path, cold):
    cmd = child_cmd("clients", "--child", loader, path, *(["--cold"] if cold else []))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-3:]}"}
    result = json.loads(lines[-1])
    result["gbps"] = os.path.getsize(path) / result["seconds"] / 1e9
    return result


def clients(args):
    if args.child:
        return child(args.child, args.dir, args.cold)
    if not args.dir:
        raise SystemExit("harness.py clients: say DIR")

    from hipfile import cufile

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
                    warm(path)
                for loader in ("instanttensor-cufile", "instanttensor", "hipfile"):
                    result = run_child(loader, path, cold)
                    rounds.append({"loader": loader, "cold": cold, **result})
                    print(json.dumps(rounds[-1]), file=sys.stderr)
        report["runs"] = rounds
    finally:
        report["restore"] = [str(p) for p in cufile.restore()]
    emit(report, indent=1)


def gds_examples(a):
    import torch
    import torch.cuda.gds as gds

    out = {"torch": torch.__version__}
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        for name in ("GdsFile", "gds_register_buffer", "gds_deregister_buffer"):
            obj = getattr(gds, name)
            finder = doctest.DocTestFinder(recurse=False)
            globs = {"torch": torch, "os": os, "f": os.path.join(d, f"{name}.bin")}
            globs.update({n: getattr(gds, n) for n in gds.__all__})  # the examples call them by name
            runner = doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS)
            for test in finder.find(obj, name, globs=globs):
                runner.run(test, out=sys.stderr.write)
            result = runner.summarize(verbose=False)
            out[name] = {"examples": result.attempted, "failed": result.failed}
    out["libcufile"] = sorted(set(loaded_cufile()))
    emit(out)
