"""Saving a state dict of GPU tensors: hipfile.safetensors.save_file beside safetensors.torch.save_file
and torch.save, to the page cache and durable, and the disk's sequential write speed (dd,
O_DIRECT, fsync) in the same process's run (GB/s = bytes of the file / seconds / 1e9):

    python3 save_bench.py DIR [--size-gb 4.3] [--rounds 2]

The state dict: bf16 and fp32 tensors on cuda:0 shaped like an LLM's layers (random bytes).
Before each save the page cache is written back and dropped (as root), so every save starts
with nothing dirty; each file is removed after it is timed. Checked once, outside the timers:
hipfile's file is byte for byte safetensors' and loads back (safetensors.torch.load_file) with
every tensor bitwise equal. One JSON line per round.
"""

import argparse
import json
import os
import subprocess
import time


def options(positional: str, **flags):
    """The command line of a bench script: ``positional``, then ``--name`` for each flag, typed
    and defaulted by its value (``size_gb=4.3`` is ``--size-gb``, a float, 4.3)."""
    p = argparse.ArgumentParser()
    p.add_argument(positional)
    for name, default in flags.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    return p.parse_args()


def drop():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def state_dict(size_gb, device="cuda:0", prefix="", seed=7):
    """bf16 and fp32 tensors of an LLM's layer shapes on `device`, `size_gb` GB of them, their
    names after `prefix`."""
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


def timed(fn, path):
    drop()
    start = time.perf_counter()
    fn(path)
    seconds = time.perf_counter() - start
    size = os.path.getsize(path)
    return size, seconds


def main():
    a = options("dir", size_gb=4.3, rounds=2)
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
    print(json.dumps({"tensors": len(tensors), "bytes": os.path.getsize(ours), "same bytes as safetensors": same,
                      "loads back bitwise equal": equal}), flush=True)
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
        order = list(ways) if r % 2 == 0 else list(reversed(ways))
        out = {"round": r + 1}
        for name in order:
            path = os.path.join(a.dir, "bench.out")
            size, seconds = timed(ways[name], path)
            out[name] = round(size / seconds / 1e9, 3)
            os.unlink(path)
        print(json.dumps(out), flush=True)
    os.unlink(ours)


if __name__ == "__main__":
    main()
