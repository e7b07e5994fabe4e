"""The peer beside `hipfile bench`: KvikIO (compatibility mode) and naive paths on one file, the
comparison run.sh prints, paired rounds where the comparison is close, and several GPUs at once.

  whole    KvikIO's CuFile.read of a whole file (warm, --cold), a naive read, writes (--write),
           random reads (--random N), the raw disk (--raw-disk): the peer baseline of run.sh
           (the measurements of the project's kvikio_baseline.py, its JSON keys)
  compare  hipfile bench's JSON files beside the baseline's, with the ratios the bounce issue asks for
  random   paired rounds: 128 random 1 MiB reads of a warm file, KvikIO best of 1/4/16 threads
           (best of 5 runs each) against `hipfile bench` with 16 threads (best of 5 runs)
  cold     paired rounds: a whole-file read with the page cache dropped, KvikIO best of 1/4/16
           threads (one run each) against `hipfile bench`'s best of three runs (a drop before each)
  ceiling  pinned host memory copied to each GPU alone and to all at once (the bounce ceiling)
  devices  KvikIO reading one warm file into several GPUs at once
"""

import json
import os
import random
import statistics
import time
from pathlib import Path

from benchlib import (MIB, best_gbps, counts, drop, emit, hipfile_bench, kvikio_compat, make_file, subcommand,
                      switches, together, warm, write_json)


def register(sub):
    p = subcommand(sub, "whole", whole, "the peer baseline: KvikIO and naive reads of a whole file, writes, "
                   "random reads, the raw disk", WHOLE_DOC)
    p.add_argument("--file", default="hf-bench-data/data.bin")
    counts(p, size_gib=4)
    p.add_argument("--threads", default="1,4,16")
    counts(p, runs=3)
    switches(p, cold="also measure with the page cache dropped", write="also measure GPU -> file writes")
    p.add_argument("--random", type=int, default=0, metavar="N",
                   help="also measure N random 1 MiB reads of the warm file (KvikIO pread futures, all in flight)")
    switches(p, raw_disk="also measure the raw O_DIRECT read rate of the disk (8 threads x 4 MiB, caches dropped)")
    p.add_argument("--json")

    p = sub.add_parser("compare", help="hipfile bench beside the baseline, from run.sh's JSON files")
    p.add_argument("out", help="the directory run.sh wrote (peers.json, ours-*.json)")
    p.set_defaults(run=compare)

    for mode, text in (("random", "paired rounds: 128 random 1 MiB reads, KvikIO beside hipfile bench"),
                       ("cold", "paired rounds: a cold whole-file read, KvikIO beside hipfile bench, each "
                                "the best of three cold runs")):
        p = sub.add_parser(mode, help=text, description=text)
        p.add_argument("--hipfile", required=True, help="the hipfile binary")
        p.add_argument("--file", required=True)
        counts(p, rounds=5)
        p.add_argument("--json")
        switches(p, profile="keep each round's mean and bounce profile")
        p.set_defaults(run=rounds, mode="randread" if mode == "random" else "cold")

    p = sub.add_parser("ceiling", help="pinned host memory copied to each GPU alone and to all at once")
    p.add_argument("--devices", default="0,1")
    counts(p, size_gib=2, runs=5)
    p.set_defaults(run=ceiling)

    p = sub.add_parser("devices", help="KvikIO reading one warm file into several GPUs at once")
    p.add_argument("--file", required=True)
    p.add_argument("--devices", default="0,1")
    p.add_argument("--threads", default="16,32")
    counts(p, runs=3)
    p.set_defaults(run=devices)


WHOLE_DOC = """The peer baseline for GPU file I/O: KvikIO (compat mode) and naive paths. File -> GPU reads
(page cache warm and cold) and GPU -> file writes; one line per measurement and, with --json, the
JSON object (GB/s = 1e9 bytes per second, best of N runs). Needs root for the cold runs, CuPy, and
kvikio-cu13 + libkvikio-cu13 + rapids-logger on PYTHONPATH. The file is made (random bytes) unless
it has exactly the size asked.

    harness.py whole --file DATA --size-gib 4 --threads 1,4,16 --cold --write --random 128 --raw-disk --json OUT
"""


def whole(a):
    kvikio_compat()
    import cupy as cp
    import kvikio
    import kvikio.defaults
    import numpy as np

    size = int(a.size_gib * (1 << 30))
    make_file(a.file, size, exact=True)
    dev = cp.empty(size, dtype=cp.uint8)
    res = {"kvikio": kvikio.__version__, "size_bytes": size}
    threads = [int(x) for x in a.threads.split(",")]

    def timed(fn, nbytes, before=None):
        return round(best_gbps(fn, nbytes, a.runs, before, cp.cuda.runtime.deviceSynchronize), 2)

    def naive():
        with open(a.file, "rb", buffering=0) as f:
            buf = bytearray(16 << 20)
            off = 0
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                dev[off:off + n].set(np.frombuffer(buf, dtype=np.uint8, count=n))
                off += n

    def kv_read():
        with kvikio.CuFile(a.file, "r") as f:
            assert f.read(dev) == size

    def drop_all():
        drop(strict=True)

    warm(a.file)
    modes = [("warm", None)]
    if a.cold:
        modes.append(("cold", drop_all))
    for mode, before in modes:
        res[f"read {mode} naive-16MiB-pageable"] = timed(naive, size, before)
        for nt in threads:
            kvikio.defaults.set("num_threads", nt)
            res[f"read {mode} kvikio-compat t={nt}"] = timed(kv_read, size, before)
        if mode == "cold":
            warm(a.file)

    ref = cp.asnumpy(dev[: 1 << 20])
    assert (ref == np.fromfile(a.file, dtype=np.uint8, count=1 << 20)).all(), "read verification failed"

    if a.random:
        rng = random.Random(11)
        offs = [rng.randrange(0, size // MIB) * MIB for _ in range(a.random)]
        for nt in threads:
            kvikio.defaults.set("num_threads", nt)

            def kv_random():
                with kvikio.CuFile(a.file, "r") as f:
                    futs = [f.pread(dev[i * MIB:(i + 1) * MIB], MIB, o) for i, o in enumerate(offs)]
                    assert all(x.get() == MIB for x in futs)

            res[f"randread 1MiB x{a.random} warm kvikio-compat t={nt}"] = timed(kv_random, MIB * a.random)

    if a.raw_disk:
        import mmap
        from concurrent.futures import ThreadPoolExecutor

        blk = 4 << 20

        def raw():
            fd = os.open(a.file, os.O_RDONLY | os.O_DIRECT)
            bufs = [mmap.mmap(-1, blk) for _ in range(8)]

            def worker(t):
                for off in range(t * blk, size, 8 * blk):
                    os.preadv(fd, [bufs[t]], off)

            with ThreadPoolExecutor(8) as ex:
                list(ex.map(worker, range(8)))
            os.close(fd)

        res["raw disk O_DIRECT 8x4MiB cold"] = timed(raw, size, drop_all)
        warm(a.file)

    if a.write:
        out = a.file + ".out"
        for nt in threads:
            kvikio.defaults.set("num_threads", nt)

            def kv_write():
                with kvikio.CuFile(out, "w") as f:
                    assert f.write(dev) == size

            def kv_write_sync():
                kv_write()
                fd = os.open(out, os.O_RDONLY)
                os.fdatasync(fd)
                os.close(fd)

            res[f"write kvikio-compat t={nt}"] = timed(kv_write, size)
            res[f"write+fdatasync kvikio-compat t={nt}"] = timed(kv_write_sync, size)
        os.remove(out)

    for k, v in res.items():
        print(f"{k}: {v}")
    emit(res, stdout=False)
    if a.json:
        write_json(a.json, res)


def compare(a):
    out = Path(a.out)
    peers = json.loads((out / "peers.json").read_text())

    def ours(name, mode):
        results = json.loads((out / name).read_text())["results"]
        (r,) = [r for r in results if r["mode"] == mode]
        assert r["verified"] is not False, f"{name}: verification failed"
        return r["best_gbps"]

    platform = json.loads((out / "ours-read.json").read_text())["platform"]
    warm_default = ours("ours-read.json", "read")
    warm_best = max([warm_default] + [ours(f"ours-read-t{t}.json", "read") for t in (1, 4, 16)])
    kv_warm = {t: peers[f"read warm kvikio-compat t={t}"] for t in (1, 4, 16)}
    kv_cold = max(peers[f"read cold kvikio-compat t={t}"] for t in (1, 4, 16))
    cold = ours("ours-read-cold.json", "read")
    raw = peers["raw disk O_DIRECT 8x4MiB cold"]
    write = ours("ours-write.json", "write")
    kv_write = max(peers[f"write+fdatasync kvikio-compat t={t}"] for t in (1, 4, 16))
    rand = ours("ours-randread.json", "randread")
    kv_rand = max(peers[f"randread 1MiB x128 warm kvikio-compat t={t}"] for t in (1, 4, 16))

    rows = [
        ("warm read 4 GiB, hipfile default", warm_default, "KvikIO default (t=1)", kv_warm[1], 5.0),
        ("warm read 4 GiB, hipfile best of 1/4/16/default", warm_best, "KvikIO best of 1/4/16", max(kv_warm.values()),
         1.1),
        ("cold read 4 GiB", cold, "KvikIO best cold", kv_cold, 1.0),
        ("cold read 4 GiB", cold, "raw O_DIRECT disk", raw, 0.95),
        ("write 4 GiB + fdatasync", write, "KvikIO write+fdatasync best", kv_write, 1.2),
        ("random 1 MiB reads x128, 16 threads", rand, "KvikIO best of 1/4/16", kv_rand, 1.0),
    ]
    print(f"\nplatform: {platform}\n")
    print(f"{'measurement':<48} {'hipfile':>8} {'peer':>8}  {'ratio':>6}  {'target':>6}  peer")
    table = []
    for name, mine, peer_name, theirs, target in rows:
        ratio = mine / theirs if theirs else float("inf")
        mark = "ok" if ratio >= target else "MISSED"
        table.append({"measurement": name, "hipfile": mine, "peer": peer_name, "peer_gbps": theirs, "ratio": ratio,
                      "target": target})
        print(f"{name:<48} {mine:>8.2f} {theirs:>8.2f}  {ratio:>5.2f}x  {target:>5.2f}x  {peer_name} [{mark}]")
    print(f"\nwarm read >= 50 GB/s: {warm_best:.2f} [{'ok' if warm_best >= 50 else 'MISSED'}]")
    emit({"platform": platform, "rows": table, "warm_best": warm_best}, stdout=False)


def rounds(a):
    """Alternates KvikIO (compat mode, as `whole` measures it) and `hipfile bench` on the same
    file for several rounds, so that a comparison close to parity is judged on medians of
    paired rounds rather than on one sample of each."""
    kvikio_compat()
    import cupy as cp
    import kvikio
    import kvikio.defaults

    size = os.path.getsize(a.file)
    size_arg = f"{size // MIB}M"
    sync = cp.cuda.runtime.deviceSynchronize

    def ours(extra):
        """hipfile bench's best GB/s, and its mean and bounce profile with --profile."""
        out = hipfile_bench(a.hipfile, "--file", a.file, "--json", "--no-verify", *extra,
                            *(["--profile"] if a.profile else []))
        seen = {"mean": out["mean_gbps"], "profile": out["profile"].get("bounce")} if a.profile else {}
        return out["best_gbps"], seen

    if a.mode == "randread":
        rng = random.Random(11)
        offs = [rng.randrange(0, size // MIB) * MIB for _ in range(128)]
        dev = cp.empty(128 * MIB, dtype=cp.uint8)

        def kv():
            with kvikio.CuFile(a.file, "r") as f:
                futs = [f.pread(dev[i * MIB:(i + 1) * MIB], MIB, o) for i, o in enumerate(offs)]
                assert all(x.get() == MIB for x in futs)

        def peer():
            best = 0.0
            for nt in (1, 4, 16):
                kvikio.defaults.set("num_threads", nt)
                best = max(best, best_gbps(kv, 128 * MIB, 5, sync=sync))
            return best

        extra = ["--size", size_arg, "--mode", "randread", "--io-size", "1M", "--count", "128",
                 "--threads", "16", "--runs", "5"]
    else:
        dev = cp.empty(size, dtype=cp.uint8)

        def kv():
            with kvikio.CuFile(a.file, "r") as f:
                assert f.read(dev) == size

        def peer():
            best = 0.0
            for nt in (1, 4, 16):
                kvikio.defaults.set("num_threads", nt)
                best = max(best, best_gbps(kv, size, 1, lambda: drop(strict=True), sync))
            return best

        # Three cold runs, the page cache dropped before each, as KvikIO's best of 1/4/16
        # threads is three: a best of three against a best of three.
        extra = ["--size", size_arg, "--mode", "read", "--cold", "--runs", "3"]

    done = []
    for r in range(a.rounds):
        theirs = peer()
        mine, seen = ours(extra)
        done.append({"hipfile": round(mine, 2), "kvikio_best": round(theirs, 2), "ratio": round(mine / theirs, 3),
                     **seen})
        print(f"{a.mode} round {r + 1}: hipfile {mine:.2f}  KvikIO best {theirs:.2f}  ratio {mine / theirs:.2f}x",
              json.dumps(seen) if seen else "", flush=True)
    ratios = [x["ratio"] for x in done]
    summary = {"mode": a.mode, "rounds": done, "median_ratio": statistics.median(ratios),
               "min_ratio": min(ratios), "max_ratio": max(ratios)}
    print(f"{a.mode}: median ratio {summary['median_ratio']:.2f}x over {a.rounds} rounds "
          f"(from {summary['min_ratio']:.2f}x to {summary['max_ratio']:.2f}x)")
    emit(summary, stdout=False)
    if a.json:
        write_json(a.json, summary)


def ceiling(a):
    """The ceiling of a bounce read into several GPUs: pinned host memory copied to each device
    alone and to all of --devices at once (one stream per device, copies issued together), GB/s =
    1e9 B/s of all devices together, best of --runs. Prints JSON."""
    import cupy as cp
    import cupyx

    devs = [int(d) for d in a.devices.split(",")]
    size = int(a.size_gib * (1 << 30))
    host = cupyx.empty_pinned((size,), dtype=cp.uint8)
    host[:] = 7
    dst, streams = {}, {}
    for d in devs:
        with cp.cuda.Device(d):
            dst[d] = cp.empty(size, dtype=cp.uint8)
            streams[d] = cp.cuda.Stream(non_blocking=True)

    def copy(ds):
        start = time.perf_counter()
        for d in ds:
            with cp.cuda.Device(d):
                dst[d].set(host, stream=streams[d])
        for d in ds:
            streams[d].synchronize()
        return size * len(ds) / (time.perf_counter() - start) / 1e9

    out = {}
    for name, ds in [(f"device {d}", [d]) for d in devs] + [("together", devs)]:
        copy(ds)  # first touch
        out[name] = round(max(copy(ds) for _ in range(a.runs)), 2)
        print(f"pinned host -> GPU, {name}: {out[name]} GB/s", flush=True)
    emit(out)


def devices(a):
    """The peer (KvikIO, compat mode) reading one warm file into several GPUs at once. For each
    thread-pool size: the file read whole into device 0 alone, and into every device of
    --devices at once, two ways: one Python thread per device calling CuFile.read (KvikIO
    releases the GIL while it reads), and one thread issuing CuFile.pread futures for every
    device and waiting for them all. GB/s = 1e9 B/s of all devices together, best of --runs."""
    kvikio_compat()
    import cupy as cp
    import kvikio
    import kvikio.defaults

    devs = [int(d) for d in a.devices.split(",")]
    size = os.path.getsize(a.file)
    bufs = {}
    for d in devs:
        with cp.cuda.Device(d):
            bufs[d] = cp.empty(size, dtype=cp.uint8)
    warm(a.file)

    def sync():
        for d in devs:
            with cp.cuda.Device(d):
                cp.cuda.runtime.deviceSynchronize()

    def threads_way(ds):
        def one(i):
            d = ds[i]
            cp.cuda.Device(d).use()
            f = kvikio.CuFile(a.file, "r")

            def read():
                with f:
                    assert f.read(bufs[d]) == size

            return read

        return together(one, len(ds), sync) / (size * len(ds) / 1e9)

    def futures_way(ds):
        with kvikio.CuFile(a.file, "r") as f:
            start = time.perf_counter()
            futs = [f.pread(bufs[d]) for d in ds]
            for fut in futs:
                assert fut.get() == size
            sync()
            return (time.perf_counter() - start) / (size * len(ds) / 1e9)

    out = {"kvikio": kvikio.__version__, "size_bytes": size, "devices": devs, "results": {}}
    for nt in (int(x) for x in a.threads.split(",")):
        kvikio.defaults.set("num_threads", nt)
        for name, ds in (("alone", devs[:1]), ("together", devs)):
            for way, fn in (("threads", threads_way), ("futures", futures_way)):
                gbps = round(max(1 / fn(ds) for _ in range(a.runs)), 2)
                out["results"][f"{name} {way} t={nt}"] = gbps
                print(f"kvikio {name} {way} t={nt}: {gbps} GB/s", flush=True)
    emit(out)
