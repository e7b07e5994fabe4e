"""Read-once loading over a ``torch.distributed`` process group (``load_file`` and
``load_model_dir`` with ``process_group=``): each byte of a checkpoint is read from the file by
one rank of the group, and reaches the others by the group's broadcast.

A file's data area is cut into pieces of ``PIECE_BYTES``; piece ``k`` of the load is read by rank
``k mod world`` (counted across the files of a directory, so small files spread too). Every rank
allocates the whole data area, as a load without a group does; a piece is read straight into its
place in the owner's allocation and broadcast from there into the same place in everyone else's,
so the group adds no memory at all beyond the tensors themselves. A rank submits all of its reads
at once (the library reads them on its threads) and then takes part in the broadcasts in order, so
reading and broadcasting overlap.

Failures are everyone's: before the data moves the ranks agree that each opened and checked the
file (and that they all see the same data size), and before each piece is broadcast that its
owner read it whole; a failure on any rank raises on every rank rather than leaving the others
waiting. A rank that dies outright ends the group's collectives with an error on the others (gloo,
NCCL), within the group's timeout at worst.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

PIECE_BYTES = 256 << 20


class Group:
    """A process group as the load uses it: this rank, the world, and where the collectives'
    small tensors live (NCCL/RCCL take only GPU tensors)."""

    def __init__(self, group) -> None:
        import torch
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            raise ValueError("process_group: torch.distributed is not initialized in this process")
        self.dist, self.group = dist, group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        if self.rank < 0:
            raise ValueError("process_group: this process is not a member of the group")
        nccl = dist.get_backend(group) == "nccl"
        self.small = torch.device("cuda", torch.cuda.current_device()) if nccl else torch.device("cpu")
        self.torch = torch

    def global_rank(self, rank: int) -> int:
        if self.group is None or self.group is self.dist.group.WORLD:
            return rank
        return self.dist.get_global_rank(self.group, rank)

    def all_max(self, values: List[int]) -> List[int]:
        t = self.torch.tensor(values, dtype=self.torch.int64, device=self.small)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX, group=self.group)
        return t.tolist()

    def together(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` on every rank; if it raised on any, raises on all (the rank's own error where
        it failed, else a ``RuntimeError`` naming ``what``)."""
        try:
            value, error = fn(), None
        except Exception as exc:  # noqa: BLE001 - told to the group, then raised
            value, error = None, exc
        if self.all_max([error is not None])[0]:
            if error is not None:
                raise error
            raise RuntimeError(f"{what} failed on another rank of the process group")
        return value

    def same(self, what: str, value: int) -> None:
        """Raises on every rank unless every rank has the same ``value``."""
        high, low = self.all_max([value, -value])
        if high != -low:
            raise RuntimeError(f"{what} differs between the ranks of the process group ({-low} to {high})")


def read_once(
    group: Group, f, flat, target, pieces: List[Tuple[int, int, int]], first: int, path: str, tally
) -> int:
    """Moves ``pieces`` (``(file_offset, size, offset in flat)``) into ``flat`` on every rank,
    each read by one rank (piece ``i`` by rank ``(first + i) mod world``; ``target`` is what
    the library reads into for ``flat``) and broadcast. Returns the number of pieces."""
    mine = {}
    try:
        for i, (file_offset, size, at) in enumerate(pieces):
            if (first + i) % group.world == group.rank:
                mine[i] = f.pread(target, size, file_offset, at)
        for i, (file_offset, size, at) in enumerate(pieces):
            owner = (first + i) % group.world
            group.together(f"reading {path}", lambda: _whole(mine.get(i), size, file_offset, path))
            group.dist.broadcast(flat[at : at + size], src=group.global_rank(owner), group=group.group)
            tally.add(size)
    finally:
        for future in mine.values():  # nothing may still write into flat once this returns
            try:
                future.get()
            except Exception:  # noqa: BLE001 - raised above already, or not needed
                pass
    return len(pieces)


def _whole(future, size: int, file_offset: int, path: str) -> None:
    if future is None:
        return  # another rank's piece
    got = future.get()
    if got != size:
        from hipfile._safetensors_format import SafetensorError

        raise SafetensorError(f"{path}: the file ended early ({got} of {size} bytes at {file_offset})")


def cut(start: int, length: int, pad: int, piece: Optional[int] = None) -> List[Tuple[int, int, int]]:
    """The data area ``[start, start + length)`` as pieces ``(file_offset, size, offset)``, the
    offset in an allocation whose byte ``pad`` holds the area's first."""
    piece = piece or PIECE_BYTES
    return [(start + at, min(piece, length - at), pad + at) for at in range(0, length, piece)]
