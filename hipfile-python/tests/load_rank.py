"""One rank of a read-once load over a process group (gloo), run by test_distributed_load.py:

    python load_rank.py file|dir|shard|die|url PATH [cpu|cuda] [PIECE_BYTES]

Every rank loads PATH (a safetensors file; ``dir``: a checkpoint directory) with
``process_group=`` a group made of all ranks (not the world group), pieces of PIECE_BYTES, and
checks every tensor bitwise against ``safetensors``' own load (``url``: PATH is ``URL|LOCAL``, the
object loaded and the file it is served from; ``shard``: against the rank's
``torch.chunk`` part). ``die``: rank 1 exits while the others wait for its second piece; the
others must raise. Prints one JSON line: the rank, the bytes this process read from files
(hipfile's statistics), and what happened."""

import json
import os
import sys

import torch
import torch.distributed as dist
from safetensors.torch import load_file as reference

import hipfile
import hipfile._distributed
import hipfile.safetensors as hs


def expected(path: str, mode: str):
    if mode == "url":
        return reference(path.split("|")[1])
    if mode != "dir":
        return reference(path)
    out = {}
    for name in sorted(os.listdir(path)):
        if name.endswith(".safetensors"):
            out.update(reference(os.path.join(path, name)))
    return out


def main(mode: str, path: str, device: str = "cpu", piece: str = "4096") -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    group = dist.new_group(list(range(world)))
    hipfile._distributed.PIECE_BYTES = int(piece)
    report = {"rank": rank, "world": world, "mode": mode}
    try:
        if mode == "die":
            real = hipfile._distributed._whole

            def dying(future, size, file_offset, p):
                if rank == 1 and future is not None and file_offset > 4096:
                    os._exit(3)  # gone, mid-load, holding a piece the others wait for
                return real(future, size, file_offset, p)

            hipfile._distributed._whole = dying
        shard = (rank, world) if mode == "shard" else None
        if mode == "dir":
            got = hs.load_model_dir(path, device=device, process_group=group)
        elif mode == "url":  # "URL|LOCAL": the object, and the file it was served from
            got = hs.load_file(path.split("|")[0], device=device, process_group=group)
        else:
            got = hs.load_file(path, device=device, shard=shard, process_group=group)
        want = expected(path, mode)
        assert list(got) == list(want) or set(got) == set(want), (list(got), list(want))
        for name, tensor in want.items():
            if shard is not None and tensor.dim():
                tensor = torch.chunk(tensor, world)[rank] if rank < len(torch.chunk(tensor, world)) else tensor[:0]
            as_bytes = lambda t: t.cpu().contiguous().reshape(-1).view(torch.uint8)  # noqa: E731
            assert torch.equal(as_bytes(got[name]), as_bytes(tensor)), name
        report["ok"] = True
    except Exception as exc:  # noqa: BLE001 - reported, then the exit status says it
        report["error"] = f"{type(exc).__name__}: {exc}"[:300]
    report["read_bytes"] = hipfile.stats()["read"]["bytes"]
    print(json.dumps(report), flush=True)
    if "error" in report:
        sys.exit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:5])
