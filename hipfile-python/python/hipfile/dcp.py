"""PyTorch's distributed checkpoint (``torch.distributed.checkpoint``, DCP) over hipfile-rs.

``StorageWriter`` and ``StorageReader`` implement DCP's storage interfaces, so that
``dcp.save``, ``dcp.load`` and ``dcp.async_save`` move every rank's tensors between their
memory (GPU memory, or host memory for CPU tensors) and the files through the library, with no
host copy of tensor data in the caller's path::

    import torch.distributed.checkpoint as dcp
    import hipfile.dcp

    dcp.save(state_dict, storage_writer=hipfile.dcp.StorageWriter("ckpt"))
    dcp.load(state_dict, storage_reader=hipfile.dcp.StorageReader("ckpt"))

The layout is ``FileSystemWriter``'s (one ``__<rank>_0.distcp`` file per rank, the pickled
``.metadata`` written last, by the coordinator, under a temporary name renamed into place), with
one difference: each tensor is stored as its raw bytes (row-major, at a 4 KiB-aligned offset)
rather than as a ``torch.save`` record, so that it moves between the GPU and the file without a
host copy and without serialization. Its records carry the transform ``hipfile-raw/1``:
PyTorch's ``FileSystemReader`` refuses them with a ``ValueError`` naming it (it cannot load this
format); ``StorageReader`` loads both its own checkpoints and ``FileSystemWriter``'s (those
records through ``torch.load``, as PyTorch reads them). Non-tensor values (``BytesIO`` records)
are stored as ``FileSystemWriter`` stores them.

``path`` may be a store's prefix (``s3://bucket/ckpt/``, docs/remote.md): each rank's files are
multipart uploads fed from the tensors' memory, which appear only once whole, and the metadata
is written last; the reader reads each file straight from the store into the tensors (or from
the node cache, where one is configured).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import os
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.filesystem import _StorageInfo
from torch.distributed.checkpoint.planner import LoadItemType, LoadPlan, LoadPlanner, SavePlan, SavePlanner, WriteItemType
from torch.distributed.checkpoint.storage import WriteResult
from torch.futures import Future

from hipfile import _remote
from hipfile._api import File, open as _open

__all__ = ["StorageWriter", "StorageReader", "RAW"]

RAW = "hipfile-raw/1"
"""The transform descriptor of a tensor record stored as raw bytes."""

_ALIGN = 4096  # tensors start on a page: the bounce path's O_DIRECT interior, the p2p path's blocks
_STAGING = ("auto", "device", "host")
_FILE_BYTES = 256 << 20  # a rank's tensors spread over files of at least this much


def _move_files(write: bool, work: List[Tuple[File, List[Tuple[Any, int, int, int]]]]) -> None:
    """Each file's spans moved whole (``File._move_all``), the files at once: a thread per file,
    each waiting in the library with the GIL released."""
    if len(work) <= 1:
        for f, spans in work:
            f._move_all(write, spans)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(work)) as pool:
        for done in [pool.submit(f._move_all, write, spans) for f, spans in work]:
            done.result()


if "transform_descriptors" not in {f.name for f in dataclasses.fields(_StorageInfo)}:  # pragma: no cover
    raise ImportError(f"hipfile.dcp needs PyTorch 2.7 or later (records with transforms); this is {torch.__version__}")


class _ObjectStore:
    """DCP's file-system interface over a store's prefix (``s3://bucket/ckpt/``; docs/remote.md):
    DCP's small files (``.metadata``, ``FileSystemWriter``'s records) go through host memory;
    the tensors' files go through :func:`hipfile.open` (the writer's as ordered uploads, the
    reader's straight from the store or the node cache)."""

    def init_path(self, path, **kwargs):
        return os.fspath(path).rstrip("/")

    def concat_path(self, path, suffix):
        return f"{os.fspath(path).rstrip('/')}/{suffix}"

    def mkdir(self, path) -> None:
        pass  # a prefix needs no making

    def exists(self, path) -> bool:
        try:
            _remote.RemoteFile(os.fspath(path)).close()
            return True
        except FileNotFoundError:
            return False

    def rm_file(self, path) -> None:
        _hipfile_delete(os.fspath(path))

    def rename(self, path, new_path) -> None:
        """Objects have no rename: a copy (DCP renames only its metadata), then the delete."""
        with _remote.RemoteFile(os.fspath(path)) as src:
            body = bytearray(src.size())
            src.read(body)
        with _remote.RemoteWriteFile(os.fspath(new_path)) as dst:
            dst.write(body)
        _hipfile_delete(os.fspath(path))

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        return _remote.is_url(checkpoint_id)

    def ls(self, path):
        return [u for u, _ in _remote.listdir(self.concat_path(path, ""))]

    @contextlib.contextmanager
    def create_stream(self, path, mode: str):
        path = os.fspath(path)
        if "w" in mode:
            buf = io.BytesIO()
            yield buf
            with _remote.RemoteWriteFile(path) as dst:
                dst.write(buf.getbuffer())
        else:
            with _remote.RemoteFile(path) as src:
                body = bytearray(src.size())
                src.read(body)
            yield io.BytesIO(body)


def _hipfile_delete(url: str) -> None:
    from hipfile import _hipfile

    _hipfile.remote_delete(url)


def _done(value) -> Future:
    fut: Future = Future()
    fut.set_result(value)
    return fut


def _bytes_of(t: torch.Tensor):
    """The memory of a contiguous tensor as the library takes it: a flat byte view (a NumPy
    view of host memory for CPU tensors)."""
    flat = t.reshape(-1).view(torch.uint8)
    return flat.numpy() if flat.device.type == "cpu" else flat


class StorageWriter(FileSystemWriter):
    """DCP's storage writer over hipfile-rs: ``dcp.save(sd, storage_writer=StorageWriter(path))``.

    ``durable`` (default ``True``, as ``FileSystemWriter``'s ``sync_files``): each rank's file on
    stable storage before the save completes. ``cache``: the page-cache policy of the writes
    (``hipfile.open``'s; ``None``: the driver's, ``HIPFILE_PAGE_CACHE``). ``staging``: how
    ``dcp.async_save`` snapshots the tensors before it returns: ``"device"`` clones each
    tensor in its own memory (GPU to GPU, no host copy; needs that much free GPU memory),
    ``"host"`` copies them to host memory as PyTorch's ``FileSystemWriter`` does, ``"auto"``
    (default) clones on the GPU when the device has twice the snapshot free, else copies to the
    host. ``files``: the most files each rank writes (``__<rank>_<k>.distcp``; its tensors
    spread over them by size, at least 256 MiB a file), written at once: buffered writes to one
    file take its inode's lock one at a time, to several files they proceed together.
    ``overwrite`` as ``FileSystemWriter``'s."""

    def __init__(
        self,
        path,
        *,
        durable: bool = True,
        cache: Optional[str] = None,
        staging: str = "auto",
        files: int = 8,
        overwrite: bool = True,
    ) -> None:
        if staging not in _STAGING:
            raise ValueError(f"staging={staging!r}: use 'auto', 'device' or 'host'")
        if not (isinstance(files, int) and files >= 1):
            raise ValueError(f"files={files!r}: give a number of files per rank, 1 or more")
        super().__init__(path, single_file_per_rank=True, sync_files=durable, thread_count=1, overwrite=overwrite)
        if _remote.is_url(path):  # a store's prefix: objects, each appearing once whole
            self.fs = _ObjectStore()
            self.path = self.fs.init_path(path)
        self.durable = durable
        self.cache = cache
        self.staging = staging
        self.files = files

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future:
        tensors = [i for i in plan.items if i.type != WriteItemType.BYTE_IO]
        # The bytes of each item: its chunk's (a shard's, of a DTensor), not the whole tensor's.
        sizes = {id(i): math.prod(i.tensor_data.chunk.sizes) * i.tensor_data.properties.dtype.itemsize for i in tensors}
        count = max(1, min(self.files, len(tensors), -(-sum(sizes.values()) // _FILE_BYTES)))
        buckets: List[List[Any]] = [[] for _ in range(count)]
        filled = [0] * count
        for item in sorted(tensors, key=lambda i: -sizes[id(i)]):  # largest first, to the emptiest
            k = filled.index(min(filled))
            buckets[k].append(item)
            filled[k] += sizes[id(item)]
        buckets[0] = [i for i in plan.items if i.type == WriteItemType.BYTE_IO] + buckets[0]
        results: List[WriteResult] = []
        work = []
        try:
            for k, items in enumerate(buckets):
                name = f"{plan.storage_data.prefix}{k}.distcp"
                spans = self._place(name, items, planner, results)
                path = self.fs.concat_path(self.path, name)
                if _remote.is_url(path):
                    work.append((_remote.RemoteWriteFile(path), spans))
                else:
                    work.append((File(path, "w", cache=self.cache, durable=self.durable), spans))
            _move_files(True, work)
            if self.durable:
                for f, _ in work:
                    if isinstance(f, File):  # an object is durable once its upload completes
                        os.fsync(f.fileno())  # the size, and what the writes themselves did not sync
        except BaseException:
            for f, _ in work:
                if isinstance(f, _remote.RemoteWriteFile):
                    f.abort()  # no partial object
            raise
        finally:
            for f, _ in work:
                f.close()
        return _done(results)

    @staticmethod
    def _place(name: str, items, planner: SavePlanner, results: List[WriteResult]) -> List[Tuple[Any, int, int, int]]:
        """Where each item goes in the file ``name`` (its result appended to ``results``): the
        spans to write."""
        spans = []
        at = 0
        for item in items:
            if item.type == WriteItemType.BYTE_IO:
                memory = planner.resolve_data(item).getvalue()
                offset, length, transforms = at, len(memory), None
            else:
                tensor = planner.resolve_data(item).detach()
                if not tensor.is_contiguous():
                    tensor = tensor.contiguous()
                offset = -(-at // _ALIGN) * _ALIGN
                length, transforms = tensor.numel() * tensor.element_size(), [RAW]
                memory = _bytes_of(tensor) if length else None
            if length:
                spans.append((memory, length, offset, 0))
            at = offset + length
            info = _StorageInfo(name, offset, length, transform_descriptors=transforms)
            results.append(WriteResult(index=item.index, size_in_bytes=length, storage_data=info))
        return spans

    def stage(self, state_dict: Dict[str, Any]) -> Dict[str, Any]:
        """``dcp.async_save``'s snapshot (see ``staging``): the state dict with every tensor
        copied, complete when this returns, so that the caller may change the originals."""
        from torch.utils._pytree import tree_flatten, tree_map_only

        tensors = [v for v in tree_flatten(state_dict)[0] if isinstance(v, torch.Tensor)]
        on_device = [t for t in tensors if t.device.type not in ("cpu", "meta")]
        if self.staging == "host" or (self.staging == "auto" and not _room_for(on_device)):
            return super().stage(state_dict)
        staged = tree_map_only(torch.Tensor, lambda t: t.detach().clone(), state_dict)
        for device in {t.device for t in on_device}:
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # the clones are complete: the caller may go on
        return staged


def _room_for(tensors: List[torch.Tensor]) -> bool:
    """Whether each CUDA device holding some of ``tensors`` has twice their bytes free."""
    need: Dict[torch.device, int] = {}
    for t in tensors:
        if t.device.type != "cuda":
            return False
        need[t.device] = need.get(t.device, 0) + t.numel() * t.element_size()
    return all(torch.cuda.mem_get_info(device)[0] >= 2 * n for device, n in need.items())


class StorageReader(FileSystemReader):
    """DCP's storage reader over hipfile-rs: ``dcp.load(sd, storage_reader=StorageReader(path))``.

    Loads checkpoints of :class:`StorageWriter` (each tensor's bytes read by the library straight
    into the tensor it loads into, or into one buffer on that tensor's device and copied from
    there where DCP asks for part of a stored chunk) and of PyTorch's ``FileSystemWriter`` (its
    records through ``torch.load``, as ``FileSystemReader`` reads them). ``cache``: the
    page-cache policy of the reads (``hipfile.open``'s)."""

    def __init__(self, path, *, cache: Optional[str] = None) -> None:
        super().__init__(path)
        if _remote.is_url(path):  # a store's prefix
            self.fs = _ObjectStore()
            self.path = self.fs.init_path(path)
        self.cache = cache
        self._chunks: Dict[Tuple[str, Tuple[int, ...]], Tuple[Tuple[int, ...], torch.dtype]] = {}

    def set_up_storage_reader(self, metadata, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        super().set_up_storage_reader(metadata, is_coordinator, *args, **kwargs)
        self._chunks = {}
        for fqn, md in metadata.state_dict_metadata.items():
            for chunk in getattr(md, "chunks", ()):
                self._chunks[(fqn, tuple(chunk.offsets))] = (tuple(chunk.sizes), md.properties.dtype)

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future:
        ours: Dict[str, List[Any]] = {}
        theirs = []
        for item in plan.items:
            info = self.storage_data[item.storage_index]
            if item.type != LoadItemType.BYTE_IO and RAW in (info.transform_descriptors or ()):
                ours.setdefault(info.relative_path, []).append(item)
            else:
                theirs.append(item)
        if theirs:
            super().read_data(dataclasses.replace(plan, items=theirs), planner).wait()
        work, after = [], []
        try:
            for relative_path, items in ours.items():
                spans: List[Tuple[Any, int, int, int]] = []
                work.append((_open(self.fs.concat_path(self.path, relative_path), "r", cache=self.cache), spans))
                spans.extend(self._plan_reads(items, planner, after))
            _move_files(False, work)
        finally:
            for f, _ in work:
                f.close()
        for item, target, staging, sizes in after:
            if staging is not None:
                target.copy_(_region(staging, sizes, item.storage_offsets, item.lengths, target.dtype))
            planner.commit_tensor(item, target)
        return _done(None)

    def _plan_reads(self, items, planner: LoadPlanner, after: List[Tuple]) -> List[Tuple[Any, int, int, int]]:
        """The reads of one file's items: straight into each target where the box is whole rows
        of the stored chunk and the target contiguous, else into a buffer on the target's device
        (``after`` gets what to copy and commit once the reads are done, with the chunk's
        sizes)."""
        spans = []
        for item in items:
            info = self.storage_data[item.storage_index]
            index = item.storage_index
            sizes, dtype = self._chunks[(index.fqn, tuple(index.offset))]
            target = planner.resolve_tensor(item).detach()
            begin, length, whole = _rows(sizes, item.storage_offsets, item.lengths, dtype.itemsize)
            staging = None
            if length and whole and target.is_contiguous():
                spans.append((_bytes_of(target), length, info.offset + begin, 0))
            elif length:
                staging = torch.empty(length, dtype=torch.uint8, device=target.device)
                spans.append((_bytes_of(staging), length, info.offset + begin, 0))
            after.append((item, target, staging, sizes))
        return spans


def _rows(sizes, offsets, lengths, itemsize: int) -> Tuple[int, int, bool]:
    """The bytes of a stored chunk of ``sizes`` (row-major) to read for the box ``offsets`` +
    ``lengths`` of it: ``(begin, length, whole)``, the rows of the first dimension that the box
    spans, and whether the box is exactly those rows (no narrowing of the other dimensions)."""
    if not sizes:
        return 0, itemsize, True
    row = math.prod(sizes[1:]) * itemsize
    whole = all(o == 0 and n == s for o, n, s in zip(offsets[1:], lengths[1:], sizes[1:]))
    return offsets[0] * row, lengths[0] * row, whole


def _region(rows: torch.Tensor, sizes, offsets, lengths, dtype: torch.dtype) -> torch.Tensor:
    """The box ``offsets`` + ``lengths`` of a chunk, from the bytes of the rows it spans."""
    if not sizes:
        return rows.view(dtype).reshape(())
    view = rows.view(dtype).reshape([lengths[0], *sizes[1:]])
    for dim in range(1, len(sizes)):
        view = view.narrow(dim, offsets[dim], lengths[dim])
    return view
