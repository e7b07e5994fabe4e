"""The page cache as users meet it: a checkpoint loaded again and again, by several processes at
once, written then read back. Each measurement runs in fresh processes (one per load sequence),
the page cache dropped before it (/proc/sys/vm/drop_caches as root, else posix_fadvise DONTNEED);
GB/s = bytes / seconds / 1e9, every timer stopping after torch.cuda.synchronize().

    harness.py cache loads PATH [--settings S1;S2;...] [--rounds 2] [--loads 3]
    harness.py cache procs PATH [--n 1,2,4] [--settings ...]
    harness.py cache write DIR [--size-gb 4] [--settings ...] [--rounds 2]

A setting is a loader and environment variables: `hipfile` (hipfile.safetensors.load_file),
`safetensors` (safetensors.torch.load_file), `fastsafetensors` / `fastsafetensors-gds` (see
checkpoint_loaders.py; `fastsafetensors-gds-forced`: the same with its check for /dev/nvidia-fs0 told
yes, so that it uses the libcufile.so.0 loaded), each optionally followed by `,VAR=value` pairs, for example
`hipfile,HIPFILE_PAGE_CACHE=bypass`. PATH is made (as `load` makes it, --size-gb) if it is
missing.

loads: per setting and round, `--loads` loads in one process after the cache was dropped: each
load's GB/s, the bytes the block devices read during it (/proc/diskstats), and the fraction of
the file in the page cache after it (cachestat). procs: N processes started together on the
cold file, each loading once: wall time until the last is done, and block-device bytes.
write: a GPU tensor written with hipfile (File.write, durable) then read back in the same
process: both GB/s, the file's page-cache fraction after the write, and block-device bytes of
the read back.

One JSON object per measurement is printed, one per line.
"""
import argparse
import json
import os
import subprocess
import time

from benchlib import (child_cmd, counts, disk_read_bytes, drop, emit, make_checkpoint, page_cache_share as resident,
                      parse_header, subcommand)


def register(sub):
    p = subcommand(sub, "cache", cache, "the page cache: a checkpoint loaded again and again, by several processes, "
                   "written then read back", __doc__)
    p.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)  # one child process's work
    what = p.add_subparsers(dest="what", metavar="{loads,procs,write}")
    for name in ("loads", "procs"):
        s = what.add_parser(name)
        s.add_argument("path")
        counts(s, size_gb=8.6)
        s.add_argument("--settings", default="hipfile,HIPFILE_PAGE_CACHE=bypass;hipfile;safetensors")
        counts(s, rounds=2, loads=3)
        s.add_argument("--n", default="1,2,4")
    s = what.add_parser("write")
    s.add_argument("dir")
    counts(s, size_gb=4)
    s.add_argument("--settings", default="hipfile,HIPFILE_PAGE_CACHE=bypass;hipfile")
    counts(s, rounds=2)


def parse_setting(text):
    name, *pairs = [p.strip() for p in text.split(",") if p.strip()]
    env = dict(p.split("=", 1) for p in pairs)
    return name, env


def loader(name):
    import torch

    if name == "hipfile":
        import hipfile.safetensors as hs

        return lambda path: hs.load_file(path, device="cuda:0")
    if name == "safetensors":
        import safetensors.torch as st

        return lambda path: st.load_file(path, device="cuda:0")
    if name.startswith("fastsafetensors"):
        from checkpoint_loaders import make_fastsafetensors

        if name.endswith("-forced"):
            # fastsafetensors 0.5 takes its cuFile path only where /dev/nvidia-fs0 exists (else
            # its own O_DIRECT reader, whatever libcufile is loaded): say it does.
            exists = os.path.exists
            os.path.exists = lambda p: True if str(p) == "/dev/nvidia-fs0" else exists(p)

        info = {}
        made = {}

        def load(path):
            if "load" not in made:
                names = [e[0] for e in parse_header(path)[1]]
                made["load"] = make_fastsafetensors("-gds" not in name, info, names)
            out, cleanup = made["load"](path)
            torch.cuda.synchronize()
            if cleanup:
                cleanup()
            return out

        return load
    raise SystemExit(f"no loader {name!r}")


def child_loads(name, path, loads):
    import torch

    torch.cuda.init()
    torch.empty(1, device="cuda:0")
    load = loader(name)
    size = os.path.getsize(path)
    out = []
    for _ in range(loads):
        before = disk_read_bytes()
        t = time.perf_counter()
        tensors = load(path)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
        out.append({"gbps": round(size / dt / 1e9, 3), "s": round(dt, 3),
                    "disk_gb": round((disk_read_bytes() - before) / 1e9, 3), "resident": resident(path)})
        del tensors
        torch.cuda.empty_cache()
    return out


def run_child(args, env_extra, wait=True):
    env = dict(os.environ, **env_extra)
    p = subprocess.Popen(child_cmd("cache", "--child", *args), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if not wait:
        return p
    return finish(p)


def finish(p):
    out, err = p.communicate()
    if p.returncode != 0:
        return {"error": (err or out).strip().splitlines()[-3:]}
    result = json.loads(out.strip().splitlines()[-1])
    said = [line.strip() for line in err.splitlines() if "page cache" in line]
    if said and isinstance(result, list):
        result.append({"log": said[:4]})
    elif said:
        result["log"] = said[:4]
    return result


def ensure_checkpoint(path, size_gb):
    if not os.path.exists(path):
        make_checkpoint(path, size_gb, 32)
        os.sync()


def cmd_loads(a):
    ensure_checkpoint(a.path, a.size_gb)
    size = os.path.getsize(a.path)
    for r in range(a.rounds):
        for text in a.settings.split(";"):
            name, env = parse_setting(text)
            how = drop(a.path)
            res = run_child(["child", name, a.path, str(a.loads)], env)
            emit({"what": "loads", "round": r + 1, "setting": text, "bytes": size, "dropped": how, "loads": res})


def cmd_procs(a):
    ensure_checkpoint(a.path, a.size_gb)
    size = os.path.getsize(a.path)
    for text in a.settings.split(";"):
        name, env = parse_setting(text)
        for n in [int(x) for x in a.n.split(",")]:
            drop(a.path)
            # The children wait for a go file so that startup (imports, CUDA) is not timed.
            go = f"/tmp/cache_bench_go_{os.getpid()}"
            if os.path.exists(go):
                os.remove(go)
            ps = [run_child(["one", name, a.path, go], env, wait=False) for _ in range(n)]
            ready = f"{go}.ready"
            deadline = time.time() + 120
            while time.time() < deadline and sum(os.path.exists(f"{ready}.{p.pid}") for p in ps) < n:
                time.sleep(0.05)
            before = disk_read_bytes()
            t = time.perf_counter()
            open(go, "w").close()
            results = [finish(p) for p in ps]
            wall = time.perf_counter() - t
            disk = disk_read_bytes() - before
            for p in ps:
                try:
                    os.remove(f"{ready}.{p.pid}")
                except OSError:
                    pass
            os.remove(go)
            emit({"what": "procs", "setting": text, "n": n, "bytes": size, "wall_s": round(wall, 3),
                  "disk_gb": round(disk / 1e9, 3), "disk_x_file": round(disk / size, 3), "each": results})


def child_one(name, path, go):
    import torch

    torch.cuda.init()
    torch.empty(1, device="cuda:0")
    load = loader(name)
    # The parent waits for this file of the child's pid: the harness's own process (no wrapper).
    open(f"{go}.ready.{os.getpid()}", "w").close()
    while not os.path.exists(go):
        time.sleep(0.005)
    t = time.perf_counter()
    tensors = load(path)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    del tensors
    return {"s": round(dt, 3), "gbps": round(os.path.getsize(path) / dt / 1e9, 3)}


def child_write(path, size_gb):
    import torch

    import hipfile

    n = int(size_gb * 1e9) // 4096 * 4096
    src = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda:0")
    dst = torch.empty_like(src)
    torch.cuda.synchronize()
    if os.path.exists(path):
        os.remove(path)
    with hipfile.open(path, "w") as f:
        t = time.perf_counter()
        got = f.write(src)
        wt = time.perf_counter() - t
    assert got == n, got
    res = resident(path)
    before = disk_read_bytes()
    with hipfile.open(path, "r") as f:
        t = time.perf_counter()
        got = f.read(dst)
        torch.cuda.synchronize()
        rt = time.perf_counter() - t
    assert got == n, got
    disk = disk_read_bytes() - before
    same = bool(torch.equal(src, dst))
    os.remove(path)
    return {"write_gbps": round(n / wt / 1e9, 3), "resident_after_write": res, "read_back_gbps": round(n / rt / 1e9, 3),
            "read_back_disk_gb": round(disk / 1e9, 3), "equal": same}


def cmd_write(a):
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "cache_bench_write.bin")
    for r in range(a.rounds):
        for text in a.settings.split(";"):
            _, env = parse_setting(text)
            os.sync()
            res = run_child(["wchild", path, str(a.size_gb)], env)
            emit({"what": "write", "round": r + 1, "setting": text, "result": res})


def cache(a):
    if a.child:  # a child process: one JSON line on stdout
        kind, *args = a.child
        if kind == "child":
            print(json.dumps(child_loads(args[0], args[1], int(args[2]))))
        elif kind == "one":
            print(json.dumps(child_one(*args)))
        else:
            print(json.dumps(child_write(args[0], float(args[1]))))
        return
    if not a.what:
        raise SystemExit("harness.py cache: say loads, procs or write")
    {"loads": cmd_loads, "procs": cmd_procs, "write": cmd_write}[a.what](a)
