"""PyTorch's distributed checkpoint (DCP) of GPU tensors.

  dcp        hipfile.dcp's StorageWriter and StorageReader beside PyTorch's FileSystemWriter and
             FileSystemReader, alternated, in one process or under torchrun
  dcp-files  durable dcp.save with StorageWriter(files=k), k = 1, 2, 4, 8, beside FileSystemWriter
"""

import os
import shutil
import time
import warnings

from benchlib import counts, drop, emit, state_dict, subcommand, tensor_bytes, turn


def register(sub):
    p = subcommand(sub, "dcp", dcp_bench, "dcp.save/load/async_save with hipfile.dcp beside FileSystemWriter/Reader "
                   "(torchrun: every rank)", DCP_DOC)
    p.add_argument("dir")
    counts(p, size_gb=4.3, rounds=2)
    p.add_argument("--devices", choices=["shared", "own", "cpu"], default="shared")
    p.add_argument("--backend", default="cpu:gloo,cuda:nccl")
    p.add_argument("--storages", default="pytorch,hipfile")

    p = subcommand(sub, "dcp-files", dcp_files, "durable dcp.save with StorageWriter(files=1, 2, 4, 8) beside "
                   "FileSystemWriter", FILES_DOC)
    p.add_argument("dir")
    counts(p, size_gb=4.3)


DCP_DOC = """PyTorch's distributed checkpoint (DCP) of GPU tensors: hipfile.dcp's StorageWriter and
StorageReader beside PyTorch's FileSystemWriter and FileSystemReader, alternated, in one process
(GB/s = tensor bytes / seconds / 1e9):

    harness.py dcp DIR [--size-gb 4.3] [--rounds 2] [--storages pytorch,hipfile]
    torchrun --standalone --nproc-per-node N harness.py dcp DIR [--devices shared|own|cpu] [--backend B]

Under torchrun every rank saves and loads its own share of the state dict (its tensors named
after its rank, SIZE_GB / N each; --devices: all on cuda:0 (shared, the default), each rank on
cuda:LOCAL_RANK (own), or in host memory (cpu: a dry run on a machine without a GPU)), the
ranks timed together between barriers over the process group (`cpu:gloo,cuda:nccl` by default:
DCP's planning and `async_save` want a CPU backend beside NCCL); rank 0 prints.

Per round and storage: ``dcp.save`` (durable: FileSystemWriter's default sync_files=True, and
ours durable=True), again to the page cache (sync_files=False, durable=False; ours also with
files=1), then ``dcp.load`` of the durable checkpoint twice, cold (the page cache dropped) and
warm (as the cold load left it), into a zeroed copy of the state dict on the GPU, every tensor
compared bitwise with the saved one outside the timer;
then ``dcp.async_save``: the time the caller is blocked (until it returns) and the time until
the future completes, the tensors changed at once after it returned and the checkpoint checked
against the snapshot. Before each save the page cache is written back and dropped (as root).
The state dict is `save`'s (bf16 and fp32 tensors on cuda:0). One JSON line per round.
"""

FILES_DOC = """    harness.py dcp-files DIR [--size-gb 4.3]

dcp.save durable with hipfile.dcp.StorageWriter(files=k), k = 1, 2, 4, 8, and FileSystemWriter,
the page cache dropped before each (GB/s of tensor bytes); a warm-up save (files=8) first, the
driver's open; two rounds in opposite orders, one JSON line each.
"""


def dcp_bench(args):
    warnings.simplefilter("ignore")  # DCP without a process group says so, each call

    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    import hipfile.dcp

    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    device = {"shared": "cuda:0", "own": f"cuda:{os.environ.get('LOCAL_RANK', '0')}", "cpu": "cpu"}[args.devices]
    gpu = device != "cpu"
    if gpu:
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group(args.backend)

    def together():
        """Every rank here, its GPU work done: the ranks' times start and end together."""
        if gpu:
            torch.cuda.synchronize()
        if world > 1:
            dist.barrier()

    def drop_all():
        together()
        if rank == 0:
            drop()
        together()

    sd = state_dict(args.size_gb / world, device, f"rank{rank}." if world > 1 else "", seed=7 + rank)
    nbytes = sum(t.numel() * t.element_size() for t in sd.values()) * world
    storages = {
        "pytorch": (lambda path, **kw: dcp.FileSystemWriter(path, **kw), lambda path: dcp.FileSystemReader(path)),
        "hipfile": (lambda path, **kw: hipfile.dcp.StorageWriter(path, **kw), lambda path: hipfile.dcp.StorageReader(path)),
    }
    storages = {name: storages[name] for name in args.storages.split(",")}
    not_durable = {"pytorch": {"sync_files": False}, "hipfile": {"durable": False}}

    def same(a, b):
        as_bytes = lambda t: t.reshape(-1).view(torch.uint8)  # noqa: E731
        return all(torch.equal(as_bytes(a[k]), as_bytes(b[k])) for k in b)

    for round_ in range(args.rounds):
        row = {"round": round_, "bytes": nbytes, "torch": torch.__version__}
        for name, (writer, reader) in storages.items():
            path = os.path.join(args.dir, name)
            if rank == 0:
                shutil.rmtree(path, ignore_errors=True)
            drop_all()
            start = time.perf_counter()
            dcp.save(sd, storage_writer=writer(path))
            together()
            row[f"{name}_save_gbps"] = round(nbytes / (time.perf_counter() - start) / 1e9, 3)
            # To the page cache (not durable), into a directory of its own; ours also in one file a rank.
            variants = [("cached", not_durable[name])]
            if name == "hipfile":
                variants.append(("cached_1file", dict(not_durable[name], files=1)))
            for label, kw in variants:
                other = path + "-" + label
                if rank == 0:
                    shutil.rmtree(other, ignore_errors=True)
                drop_all()
                start = time.perf_counter()
                dcp.save(sd, storage_writer=writer(other, **kw))
                together()
                row[f"{name}_save_{label}_gbps"] = round(nbytes / (time.perf_counter() - start) / 1e9, 3)
                together()
                if rank == 0:
                    shutil.rmtree(other, ignore_errors=True)
            # Loaded twice: cold (the page cache dropped), then warm (as the first load left it).
            drop_all()
            for temperature in ("cold", "warm"):
                out = {k: torch.zeros_like(v) for k, v in sd.items()}
                together()
                start = time.perf_counter()
                dcp.load(out, storage_reader=reader(path))
                together()
                row[f"{name}_load_{temperature}_gbps"] = round(nbytes / (time.perf_counter() - start) / 1e9, 3)
                row[f"{name}_load_{temperature}_bitwise"] = same(out, sd)
                del out
            # async_save: blocked until it returns; the caller then changes every tensor.
            together()
            if rank == 0:
                shutil.rmtree(path, ignore_errors=True)
            snapshot = {k: v.clone() for k, v in sd.items()}
            drop_all()
            start = time.perf_counter()
            fut = dcp.async_save(snapshot, storage_writer=writer(path))
            blocked = time.perf_counter() - start
            for t in snapshot.values():
                t.zero_()
            fut.result()
            together()
            row[f"{name}_async_blocked_s"] = round(blocked, 3)
            row[f"{name}_async_total_s"] = round(time.perf_counter() - start, 3)
            del snapshot
            out = {k: torch.zeros_like(v) for k, v in sd.items()}
            dcp.load(out, storage_reader=reader(path))
            row[f"{name}_async_bitwise"] = same(out, sd)
            del out
            together()
            if rank == 0:
                shutil.rmtree(path, ignore_errors=True)
            if gpu:
                torch.cuda.empty_cache()
        if len(storages) == 2:
            for key in ("save_gbps", "save_cached_gbps", "load_cold_gbps", "load_warm_gbps"):
                row[f"ratio_{key}"] = round(row[f"hipfile_{key}"] / row[f"pytorch_{key}"], 2)
            row["ratio_async_blocked"] = round(row["pytorch_async_blocked_s"] / row["hipfile_async_blocked_s"], 1)
        # Each rank checked its own tensors: every rank's must be equal.
        bitwise = [k for k in row if k.endswith("_bitwise")]
        if world > 1:
            mine = torch.tensor([int(all(row[k] for k in bitwise))], device=device)
            dist.all_reduce(mine, op=dist.ReduceOp.MIN)
            row.update({k: bool(mine.item()) for k in bitwise}, world=world, device=device)
        if rank == 0:
            emit(row)
    if world > 1:
        dist.destroy_process_group()



def dcp_files(a):
    warnings.filterwarnings("ignore")
    import torch.distributed.checkpoint as dcp

    import hipfile.dcp as hd

    sd = state_dict(a.size_gb)
    size = tensor_bytes(sd)

    def run(make):
        path = os.path.join(a.dir, "ck")
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
        emit({"round": r + 1, **{n: run(ways[n]) for n in turn(ways, r)}})
