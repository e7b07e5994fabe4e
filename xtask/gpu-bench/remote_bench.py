"""A safetensors checkpoint from object storage into GPU 0 (docs/remote.md): hipfile-rs beside
what users run instead, in one process, against one SeaweedFS server on this machine (loopback).

    harness.py remote WEED WORKDIR [--size-gb 4.3] [--rounds 2] [--peers kvikio,runai,curl]
        [--only first,cache,procs,save]

WEED: the `weed` binary. WORKDIR/model.safetensors is made if missing (bf16 tensors of
4096x4096), uploaded to s3://bench/model.safetensors (anonymous access; the upload is timed:
hipfile's `open(url, "w")` fed from the file).

Measured (GB/s = the object's bytes / wall seconds / 1e9, each timer stopped after
torch.cuda.synchronize(); CPU seconds per GB from getrusage, children included for curl):
  ceiling      hipfile.open(url).read(numpy array): parallel range GETs into host memory by
               the library's native client (16 connections x 8 MiB), the store's ceiling here
  hipfile      hipfile.safetensors.load_file(url, device="cuda:0"), no cache: straight from
               the store through pinned staging
  kvikio       kvikio.RemoteFile.open_http(http url).read(cupy buffer) of the whole object,
               num_threads 1 (default), 8, 16, 32 (its best is reported)
  runai        runai_model_streamer SafetensorsStreamer().stream_file(s3 url, device="cuda"),
               every tensor taken
  boto3        boto3's download_file to a local file, then safetensors.torch.load_file
  curl         `curl -o` of the object to a local file, then safetensors.torch.load_file
Every loader's tensors are compared bitwise (torch.equal on the GPU) with the local file's.
--only cache: the node cache: a first load filling it, a second load (page cache warm), one with
the page cache dropped, beside load_file of the local file cold. --only dcp: dcp.save to a
store's prefix with hipfile.dcp.StorageWriter (and dcp.load back) beside FileSystemWriter to a
local directory then boto3's upload of its files. --only procs: 4 processes
loading the object at once through one node cache: how many fetched it. --only save:
save_file(url) of the tensors from GPU memory beside safetensors' save_file then an upload of
that file with `curl -T` and with boto3's upload_file.
"""

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from benchlib import counts, drop, emit, subcommand, write_json

BUCKET = "bench"
np = torch = None  # numpy and torch, imported by `remote` (so that --help needs neither)


def register(sub):
    p = subcommand(sub, "remote", remote, "a checkpoint from object storage (SeaweedFS on loopback): hipfile beside "
                   "KvikIO, runai, boto3, curl", __doc__)
    p.add_argument("weed")
    p.add_argument("workdir")
    counts(p, size_gb=4.3, rounds=2)
    p.add_argument("--peers", default="kvikio,runai,boto3,curl")
    p.add_argument("--only", default="first,cache,procs,save,dcp")
    p.add_argument("--sweep", default="", help="CONNECTIONSxPART_MIB settings, comma-separated (e.g. 16x8,32x8,32x16)")
    p.add_argument("--ab", default="", help="DIR of an older build of the package, alternated with this one")
    p.add_argument("--json")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_weed(binary, data):
    s3 = free_port()
    ports = {f: free_port() for f in ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
                                       "filer.port", "filer.port.grpc", "s3.port.grpc")}
    args = [binary, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3", "-s3.port.iceberg=0",
            "-s3.port.lance=0", "-master.volumeSizeLimitMB=1024", "-volume.max=64", f"-s3.port={s3}"]
    args += [f"-{k}={v}" for k, v in ports.items()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(os.path.join(data, "weed.log"), "wb"), env=env)
    endpoint = f"http://127.0.0.1:{s3}"
    for _ in range(300):
        try:
            req = urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT")
            with urllib.request.urlopen(req, timeout=5):
                return proc, endpoint
        except urllib.error.HTTPError as e:
            if e.code == 409:
                return proc, endpoint
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("SeaweedFS did not start")


def make_checkpoint(path, size_gb):
    from safetensors.torch import save_file

    n = max(1, int(size_gb * 1e9 / (4096 * 4096 * 2)))
    g = torch.Generator(device="cuda:0").manual_seed(1)
    tensors = {f"layers.{i}.weight": torch.randn(4096, 4096, device="cuda:0", dtype=torch.bfloat16, generator=g) for i in range(n)}
    tensors["norm.weight"] = torch.ones(4096, device="cuda:0", dtype=torch.bfloat16)
    save_file(tensors, path)


class Clock:
    def __enter__(self):
        torch.cuda.synchronize()
        self.r0 = resource.getrusage(resource.RUSAGE_SELF)
        self.c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self.t0
        r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = (r1.ru_utime - self.r0.ru_utime + r1.ru_stime - self.r0.ru_stime
                    + c1.ru_utime - self.c0.ru_utime + c1.ru_stime - self.c0.ru_stime)


def drop_objects(*urls):
    """Deletes objects (and every object under a prefix ending in '/'): the server's disk is the
    machine's, and a full one fails the next upload."""
    from hipfile import _hipfile, _remote

    for url in urls:
        for u in [x for x, _ in _remote.listdir(url)] if url.endswith("/") else [url]:
            _hipfile.remote_delete(u)


def report(results, name, size, clock, ok=True, **extra):
    row = {"loader": name, "gbps": round(size / clock.seconds / 1e9, 3), "seconds": round(clock.seconds, 3),
           "cpu_s_per_gb": round(clock.cpu / (size / 1e9), 3), "bitwise": ok, **extra}
    results.append(row)
    emit(row)


def same(got, reference):
    return sorted(got) == sorted(reference) and all(torch.equal(got[k], reference[k]) for k in reference)


def first_loads(args, url, http_url, size, reference, results):
    import hipfile
    from hipfile.safetensors import load_file

    for r in range(args.rounds):
        host = np.empty(size, dtype=np.uint8)
        host.fill(0)  # faulted in before the clock starts, as a loader's buffer would be
        with Clock() as c:
            with hipfile.open(url) as f:
                f.read(host)
        report(results, "ceiling: library's client into host memory", size, c, round=r)
        del host
        with Clock() as c:
            got = load_file(url, device="cuda:0")
        report(results, "hipfile load_file(url)", size, c, same(got, reference), round=r)
        del got
        if "kvikio" in args.peers:
            try:
                import cupy
                import kvikio
                import kvikio.defaults

                best = None
                for threads in (1, 8, 16, 32):
                    kvikio.defaults.set({"num_threads": threads})
                    buf = cupy.empty(size, dtype=cupy.uint8)
                    with Clock() as c:
                        with kvikio.RemoteFile.open_http(http_url) as rf:
                            rf.read(buf)
                    ok = bytes(buf[:1 << 20].get()) == open(args.local, "rb").read(1 << 20)
                    report(results, f"kvikio RemoteFile.open_http, {threads} threads", size, c, ok, round=r)
                    del buf
            except Exception as e:  # noqa: BLE001
                emit({"loader": "kvikio", "error": repr(e)})
        if "runai" in args.peers:
            try:
                from runai_model_streamer import SafetensorsStreamer

                got = {}
                with Clock() as c:
                    with SafetensorsStreamer() as streamer:
                        streamer.stream_file(url, device="cuda")
                        for name, tensor in streamer.get_tensors():
                            got[name] = tensor.clone() if tensor.device.type == "cuda" else tensor.to("cuda:0")
                report(results, "runai-model-streamer SafetensorsStreamer", size, c, same(got, reference), round=r)
                del got
            except Exception as e:  # noqa: BLE001
                emit({"loader": "runai", "error": repr(e)})
        if "boto3" in args.peers:
            try:
                import boto3
                from safetensors.torch import load_file as st_load

                client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
                dst = os.path.join(args.workdir, "boto3.safetensors")
                with Clock() as c:
                    client.download_file(BUCKET, "model.safetensors", dst)
                    got = st_load(dst, device="cuda:0")
                report(results, "boto3 download_file + safetensors.torch.load_file", size, c, same(got, reference), round=r)
                del got
                os.unlink(dst)
            except Exception as e:  # noqa: BLE001
                emit({"loader": "boto3", "error": repr(e)})
        if "curl" in args.peers:
            from safetensors.torch import load_file as st_load

            dst = os.path.join(args.workdir, "downloaded.safetensors")
            with Clock() as c:
                subprocess.run(["curl", "-s", "-f", "-o", dst, http_url], check=True)
                got = st_load(dst, device="cuda:0")
            report(results, "curl download + safetensors.torch.load_file", size, c, same(got, reference), round=r)
            del got
            os.unlink(dst)


SWEEP = r"""
import json, os, sys, time, torch
from hipfile.safetensors import load_file
url = sys.argv[1]
for r in range(int(sys.argv[2])):
    torch.cuda.synchronize(); t = time.perf_counter()
    got = load_file(url, device="cuda:0")
    torch.cuda.synchronize()
    print(json.dumps({"seconds": time.perf_counter() - t}), flush=True)
    del got
"""


def sweep(args, url, size, results):
    """load_file(url) in a fresh process per setting of HIPFILE_REMOTE_CONNECTIONS and
    HIPFILE_REMOTE_PART_MIB (read once per process)."""
    for setting in args.sweep.split(","):
        conns, _, part = setting.partition("x")
        env = dict(os.environ, HIPFILE_REMOTE_CONNECTIONS=conns, HIPFILE_REMOTE_PART_MIB=part or "8")
        out = subprocess.run([sys.executable, "-c", SWEEP, url, str(args.rounds)], env=env, capture_output=True, text=True)
        runs = [json.loads(line)["seconds"] for line in out.stdout.splitlines() if line.startswith("{")]
        row = {"loader": f"hipfile load_file(url), {conns} connections x {part or 8} MiB parts",
               "gbps": [round(size / s / 1e9, 3) for s in runs], "error": out.stderr[-500:] if out.returncode else None}
        results.append(row)
        emit(row)


def ab(args, url, size, results):
    """load_file(url) by the package at --ab DIR (an older build) and by this one, alternated in
    fresh processes (3 each, 2 loads a process)."""
    here = os.environ.get("PYTHONPATH", "")
    for turn in range(6):
        which = "old" if turn % 2 == 0 else "new"
        path = f"{args.ab}:{here}" if which == "old" else here
        env = dict(os.environ, PYTHONPATH=path)
        out = subprocess.run([sys.executable, "-c", SWEEP, url, "2"], env=env, capture_output=True, text=True)
        runs = [json.loads(line)["seconds"] for line in out.stdout.splitlines() if line.startswith("{")]
        row = {"loader": f"hipfile load_file(url), {which} build", "turn": turn,
               "gbps": [round(size / s / 1e9, 3) for s in runs], "error": out.stderr[-500:] if out.returncode else None}
        results.append(row)
        emit(row)


def cache_loads(args, url, size, reference, results):
    from hipfile.safetensors import load_file

    cache = os.path.join(args.workdir, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    with Clock() as c:
        got = load_file(url, device="cuda:0", cache_dir=cache)
    report(results, "hipfile first load, filling the node cache", size, c, same(got, reference))
    del got
    for r in range(args.rounds):
        with Clock() as c:
            got = load_file(url, device="cuda:0", cache_dir=cache)
        report(results, "hipfile second load (node cache, page cache warm)", size, c, same(got, reference), round=r)
        del got
    for r in range(args.rounds):
        drop()
        with Clock() as c:
            got = load_file(url, device="cuda:0", cache_dir=cache)
        report(results, "hipfile load from the node cache, page cache dropped", size, c, same(got, reference), round=r)
        del got
        drop()
        with Clock() as c:
            got = load_file(args.local, device="cuda:0")
        report(results, "hipfile load_file(local file), page cache dropped", size, c, same(got, reference), round=r)
        del got


PROC = r"""
import json, sys, time, hipfile
from hipfile import _hipfile
url, cache = sys.argv[1], sys.argv[2]
t = time.perf_counter()
path, how = _hipfile.remote_cached(url, cache, None)
from hipfile.safetensors import load_file
got = load_file(path, device="cuda:0")
import torch; torch.cuda.synchronize()
print(json.dumps({"served": how, "seconds": time.perf_counter() - t, "tensors": len(got)}))
"""


def processes(args, url, size, results):
    cache = os.path.join(args.workdir, "cache-procs")
    shutil.rmtree(cache, ignore_errors=True)
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", PROC, url, cache], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    seconds = time.perf_counter() - t
    fetched = sum(1 for o in outs if o["served"] == "fetched")
    row = {"loader": "4 processes, one node cache", "fetched_by": fetched, "store_bytes_over_object": fetched,
           "seconds": round(seconds, 3), "each": outs}
    results.append(row)
    emit(row)


def saves(args, endpoint, size, reference, results):
    from hipfile.safetensors import save_file
    from safetensors.torch import save_file as st_save

    for r in range(args.rounds):
        url = f"s3://{BUCKET}/saved-{r}.safetensors"
        with Clock() as c:
            save_file(reference, url)
        report(results, "hipfile save_file(url) from GPU memory", size, c, round=r)
        local = os.path.join(args.workdir, "st-saved.safetensors")
        with Clock() as c:
            st_save(reference, local)
            subprocess.run(["curl", "-s", "-f", "-T", local, f"{endpoint}/{BUCKET}/curl-saved-{r}.safetensors"], check=True)
        report(results, "safetensors save_file + curl -T upload", size, c, round=r)
        drop_objects(url, f"s3://{BUCKET}/curl-saved-{r}.safetensors")
        if "boto3" in args.peers:
            try:
                import boto3

                client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
                with Clock() as c:
                    st_save(reference, local)
                    client.upload_file(local, BUCKET, f"boto3-saved-{r}.safetensors")
                report(results, "safetensors save_file + boto3 upload_file", size, c, round=r)
                drop_objects(f"s3://{BUCKET}/boto3-saved-{r}.safetensors")
            except Exception as e:  # noqa: BLE001
                emit({"loader": "boto3 upload", "error": repr(e)})
        os.unlink(local)


def dcp_saves(args, size, reference, results):
    """dcp.save of the tensors (GPU memory) to a store's prefix with hipfile.dcp.StorageWriter,
    beside PyTorch's FileSystemWriter to a local directory followed by boto3's upload_file of
    each file it wrote; then dcp.load back with StorageReader (bitwise)."""
    import warnings

    import torch.distributed.checkpoint as dcp

    import hipfile.dcp

    warnings.simplefilter("ignore")
    for r in range(args.rounds):
        for files in (1, 8):
            prefix = f"s3://{BUCKET}/dcp-{r}-{files}/"
            with Clock() as c:
                dcp.save(reference, storage_writer=hipfile.dcp.StorageWriter(prefix, files=files))
            report(results, f"hipfile.dcp.StorageWriter(url, files={files}) dcp.save", size, c, round=r)
            if files == 1:
                drop_objects(prefix)
        out = {k: torch.empty_like(v) for k, v in reference.items()}
        with Clock() as c:
            dcp.load(out, storage_reader=hipfile.dcp.StorageReader(prefix))
        report(results, "hipfile.dcp.StorageReader(url) dcp.load", size, c, same(out, reference), round=r)
        del out
        drop_objects(prefix)
        if "boto3" in args.peers:
            import boto3

            client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
            local = os.path.join(args.workdir, f"fsw-{r}")
            shutil.rmtree(local, ignore_errors=True)
            try:
                with Clock() as c:
                    dcp.save(reference, storage_writer=dcp.FileSystemWriter(local))
                    for name in sorted(os.listdir(local)):
                        client.upload_file(os.path.join(local, name), BUCKET, f"fsw-{r}/{name}")
                report(results, "FileSystemWriter dcp.save + boto3 upload_file of its files", size, c, round=r)
                drop_objects(f"s3://{BUCKET}/fsw-{r}/")
            except Exception as e:  # noqa: BLE001
                emit({"loader": "FileSystemWriter + boto3", "error": repr(e)})
            shutil.rmtree(local, ignore_errors=True)


def remote(args):
    global np, torch
    import numpy as np
    import torch

    args.peers = args.peers.split(",")
    os.makedirs(args.workdir, exist_ok=True)
    args.local = os.path.join(args.workdir, "model.safetensors")
    if not os.path.exists(args.local):
        make_checkpoint(args.local, args.size_gb)
    size = os.path.getsize(args.local)
    data = tempfile.mkdtemp(dir=args.workdir, prefix="weed-")
    proc, endpoint = start_weed(args.weed, data)
    os.environ.update(AWS_ENDPOINT_URL=endpoint, AWS_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    # runai's S3 client (the AWS SDK) signs every request; SeaweedFS without identities takes any key.
    os.environ.update(RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING="0", AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret")
    results = []
    try:
        import hipfile
        from safetensors.torch import load_file as st_load

        url = f"s3://{BUCKET}/model.safetensors"
        http_url = f"{endpoint}/{BUCKET}/model.safetensors"
        with Clock() as c:
            with open(args.local, "rb") as src, hipfile.open(url, "w") as dst:
                while True:
                    chunk = src.read(64 << 20)
                    if not chunk:
                        break
                    dst.write(chunk)
        report(results, "upload: hipfile open(url, 'w') from the file", size, c)
        with Clock() as c:
            subprocess.run(["curl", "-s", "-f", "-T", args.local, f"{endpoint}/{BUCKET}/curl-upload.safetensors"], check=True)
        report(results, "upload: curl -T", size, c)
        drop_objects(f"s3://{BUCKET}/curl-upload.safetensors")
        reference = st_load(args.local, device="cuda:0")
        only = args.only.split(",")
        sections = [
            ("first", lambda: first_loads(args, url, http_url, size, reference, results)),
            ("sweep", lambda: sweep(args, url, size, results) if args.sweep else None),
            ("ab", lambda: ab(args, url, size, results) if args.ab else None),
            ("cache", lambda: cache_loads(args, url, size, reference, results)),
            ("procs", lambda: processes(args, url, size, results)),
            ("save", lambda: saves(args, endpoint, size, reference, results)),
            ("dcp", lambda: dcp_saves(args, size, reference, results)),
        ]
        for name, section in sections:
            if name in only or name in ("sweep", "ab"):
                try:
                    section()
                except Exception as e:  # noqa: BLE001 - reported; the other sections go on
                    row = {"section": name, "error": repr(e)[:2000]}
                    results.append(row)
                    emit(row)
            if args.json:  # what is measured so far, whatever comes next
                write_json(args.json, {"size": size, "results": results})
            shutil.rmtree(os.path.join(args.workdir, "cache"), ignore_errors=True)
            shutil.rmtree(os.path.join(args.workdir, "cache-procs"), ignore_errors=True)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(data, ignore_errors=True)
    if args.json:
        write_json(args.json, {"size": size, "results": results})

