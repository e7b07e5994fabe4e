"""PyTorch's distributed checkpoint (DCP) of GPU tensors: hipfile.dcp's StorageWriter and
StorageReader beside PyTorch's FileSystemWriter and FileSystemReader, alternated, in one process
(GB/s = tensor bytes / seconds / 1e9):

    python3 dcp_bench.py DIR [--size-gb 4.3] [--rounds 2]

Per round and storage: ``dcp.save`` (durable: FileSystemWriter's default sync_files=True, and
ours durable=True), again to the page cache (sync_files=False, durable=False; ours also with
files=1), then ``dcp.load`` of the durable checkpoint twice, cold (the page cache dropped) and
warm (as the cold load left it), into a zeroed copy of the state dict on the GPU, every tensor
compared bitwise with the saved one outside the timer;
then ``dcp.async_save``: the time the caller is blocked (until it returns) and the time until
the future completes, the tensors changed at once after it returned and the checkpoint checked
against the snapshot. Before each save the page cache is written back and dropped (as root).
The state dict is save_bench.py's (bf16 and fp32 tensors on cuda:0). One JSON line per round.
"""

import json
import os
import shutil
import time
import warnings

from save_bench import drop, options, state_dict


def main():
    args = options("dir", size_gb=4.3, rounds=2)
    warnings.simplefilter("ignore")  # DCP without a process group says so, each call

    import torch
    import torch.distributed.checkpoint as dcp

    import hipfile.dcp

    sd = state_dict(args.size_gb)
    nbytes = sum(t.numel() * t.element_size() for t in sd.values())
    storages = {
        "pytorch": (lambda path, **kw: dcp.FileSystemWriter(path, **kw), lambda path: dcp.FileSystemReader(path)),
        "hipfile": (lambda path, **kw: hipfile.dcp.StorageWriter(path, **kw), lambda path: hipfile.dcp.StorageReader(path)),
    }
    not_durable = {"pytorch": {"sync_files": False}, "hipfile": {"durable": False}}

    def same(a, b):
        as_bytes = lambda t: t.reshape(-1).view(torch.uint8)  # noqa: E731
        return all(torch.equal(as_bytes(a[k]), as_bytes(b[k])) for k in b)

    for round_ in range(args.rounds):
        row = {"round": round_, "bytes": nbytes, "torch": torch.__version__}
        for name, (writer, reader) in storages.items():
            path = os.path.join(args.dir, name)
            shutil.rmtree(path, ignore_errors=True)
            drop()
            start = time.perf_counter()
            dcp.save(sd, storage_writer=writer(path))
            row[f"{name}_save_gbps"] = round(nbytes / (time.perf_counter() - start) / 1e9, 3)
            # To the page cache (not durable), into a directory of its own; ours also in one file a rank.
            variants = [("cached", not_durable[name])]
            if name == "hipfile":
                variants.append(("cached_1file", dict(not_durable[name], files=1)))
            for label, kw in variants:
                other = path + "-" + label
                shutil.rmtree(other, ignore_errors=True)
                drop()
                start = time.perf_counter()
                dcp.save(sd, storage_writer=writer(other, **kw))
                row[f"{name}_save_{label}_gbps"] = round(nbytes / (time.perf_counter() - start) / 1e9, 3)
                shutil.rmtree(other, ignore_errors=True)
            # Loaded twice: cold (the page cache dropped), then warm (as the first load left it).
            drop()
            for temperature in ("cold", "warm"):
                out = {k: torch.zeros_like(v) for k, v in sd.items()}
                torch.cuda.synchronize()
                start = time.perf_counter()
                dcp.load(out, storage_reader=reader(path))
                torch.cuda.synchronize()
                row[f"{name}_load_{temperature}_gbps"] = round(nbytes / (time.perf_counter() - start) / 1e9, 3)
                row[f"{name}_load_{temperature}_bitwise"] = same(out, sd)
                del out
            # async_save: blocked until it returns; the caller then changes every tensor.
            shutil.rmtree(path, ignore_errors=True)
            snapshot = {k: v.clone() for k, v in sd.items()}
            drop()
            torch.cuda.synchronize()
            start = time.perf_counter()
            fut = dcp.async_save(snapshot, storage_writer=writer(path))
            blocked = time.perf_counter() - start
            for t in snapshot.values():
                t.zero_()
            fut.result()
            row[f"{name}_async_blocked_s"] = round(blocked, 3)
            row[f"{name}_async_total_s"] = round(time.perf_counter() - start, 3)
            del snapshot
            out = {k: torch.zeros_like(v) for k, v in sd.items()}
            dcp.load(out, storage_reader=reader(path))
            row[f"{name}_async_bitwise"] = same(out, sd)
            del out
            shutil.rmtree(path, ignore_errors=True)
            torch.cuda.empty_cache()
        for key in ("save_gbps", "save_cached_gbps", "load_cold_gbps", "load_warm_gbps"):
            row[f"ratio_{key}"] = round(row[f"hipfile_{key}"] / row[f"pytorch_{key}"], 2)
        row["ratio_async_blocked"] = round(row["pytorch_async_blocked_s"] / row["hipfile_async_blocked_s"], 1)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
