"""Two builds (say, before and after a change) on the same files, ROUNDS times, the order swapped
every round, each measure in a fresh process; GB/s best of 3 runs each. --modes picks among:

  warm, cold, write, randread  the `hipfile` binaries OLD and NEW on a 4 GiB file: a warm read,
                               a cold read, a durable write, 128 random 1 MiB reads from 16 threads
  python                       the Python packages in --py-old and --py-new (directories given as
                               PYTHONPATH): `harness.py python` on that file (whole into CuPy and
                               PyTorch; 128 random 1 MiB futures into one array, CuPy and PyTorch
                               slices; one batch), PyTorch and CuPy installed on the machine
  load_file                    hipfile.safetensors.load_file of --ckpt (made as `load` makes its
                               checkpoint, 8.6 GB, if missing), warm, into cuda:0

One line per build and round ("round 1 old: warm 52.1 cold 1.9 ..."), and its JSON in the record.

    harness.py ab OLD_HIPFILE NEW_HIPFILE [--modes "warm cold write randread"] [--rounds 2]
        [--py-old DIR --py-new DIR] [--data FILE] [--ckpt FILE]

The defaults come from the environment as the earlier ab.sh took them: MODES, ROUNDS, PY_OLD,
PY_NEW, CKPT, and the data file HIPFILE_BENCH_DIR/data.bin (/root/hf-bench/data.bin).
"""

import json
import os
import subprocess
import sys

from benchlib import HERE, child_cmd, counts, emit, hipfile_bench, subcommand

SHORT = {"read into cupy": "cupy", "read into torch": "torch", "128 random 1MiB futures": "futures",
         "128 random 1MiB futures, torch slices": "torch_slices",
         "128 random 1MiB futures, cupy slices": "cupy_slices", "128 random 1MiB batch": "batch"}

LOAD_FILE = r"""
import os, sys, time, torch, hipfile.safetensors as hs
path = sys.argv[1]
hs.load_file(path, device="cuda:0")  # warm: the page cache and the driver
times = []
for _ in range(3):
    start = time.perf_counter()
    tensors = hs.load_file(path, device="cuda:0")
    torch.cuda.synchronize()
    times.append(time.perf_counter() - start)
    del tensors
print(round(os.path.getsize(path) / min(times) / 1e9, 2))
"""


def register(sub):
    env = os.environ.get
    p = subcommand(sub, "ab", ab, "two builds (binaries, Python packages) alternated on the same files", __doc__)
    p.add_argument("old", help="the old build's hipfile binary")
    p.add_argument("new", help="the new build's hipfile binary")
    p.add_argument("--modes", default=env("MODES", "warm cold write randread"))
    counts(p, rounds=int(env("ROUNDS", "2")))
    p.add_argument("--py-old", default=env("PY_OLD", ""), help="the old build's Python package (a PYTHONPATH)")
    p.add_argument("--py-new", default=env("PY_NEW", ""), help="the new build's Python package (a PYTHONPATH)")
    p.add_argument("--data", default=os.path.join(env("HIPFILE_BENCH_DIR", "/root/hf-bench"), "data.bin"))
    p.add_argument("--ckpt", default=env("CKPT", "/root/ckpt/model.safetensors"))


def python_env(pythonpath):
    return dict(os.environ, PYTHONPATH=pythonpath)


def measure(a, binary, pythonpath):
    """One build's figures, each mode in turn: {name: GB/s}."""
    bench = ("--file", a.data, "--size", "4G", "--json", "--no-verify", "--runs", "3")
    got = {}
    for mode in a.modes.split():
        if mode == "warm":
            got["warm"] = hipfile_bench(binary, "--mode", "read", *bench)["best_gbps"]
        elif mode == "cold":
            got["cold"] = hipfile_bench(binary, "--mode", "read", "--cold", *bench)["best_gbps"]
        elif mode == "write":
            got["write"] = hipfile_bench(binary, "--mode", "write", *bench)["best_gbps"]
        elif mode == "randread":
            got["randread"] = hipfile_bench(binary, "--mode", "randread", "--io-size", "1M", "--count", "128",
                                            "--threads", "16", *bench)["best_gbps"]
        elif mode == "python":
            cmd = child_cmd("python", a.data, "--size-gib", "4", "--runs", "3")
            out = subprocess.run(cmd, env=python_env(pythonpath), check=True, capture_output=True, text=True)
            r = json.loads(out.stdout)
            got.update({v: r["hipfile " + k] for k, v in SHORT.items()})
        elif mode == "load_file":
            out = subprocess.run([sys.executable, "-c", LOAD_FILE, a.ckpt], env=python_env(pythonpath), check=True,
                                 capture_output=True, text=True)
            got["load_file"] = float(out.stdout.split()[-1])
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    return got


def ab(a):
    os.environ["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64:" + os.environ.get("LD_LIBRARY_PATH", "")
    for path in (a.data, a.ckpt):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if "load_file" in a.modes.split() and not os.path.exists(a.ckpt):
        make = f"import sys; sys.path.insert(0, {HERE!r}); import benchlib; benchlib.make_checkpoint(sys.argv[1], 8.6, 32)"
        subprocess.run([sys.executable, "-c", make, a.ckpt], env=python_env(a.py_new), check=True)
    builds = [("old", a.old, a.py_old), ("new", a.new, a.py_new)]
    for r in range(1, a.rounds + 1):
        for name, binary, pythonpath in builds if r % 2 == 1 else reversed(builds):
            got = measure(a, binary, pythonpath)
            print(f"round {r} {name}: " + " ".join(f"{k} {v}" for k, v in got.items()), flush=True)
            emit({"round": r, "build": name, **got}, stdout=False)
