"""safetensors checkpoints straight into device memory, the way the ``safetensors`` package's
``load_file`` and ``safe_open`` read them, at the speed of the page cache or the disk.

Each file's header is checked before a byte moves (hipfile-safetensors: its length against the
file and a 100 MB limit, the JSON, names, dtypes, shapes against their byte counts, every range
inside the data area, no overlaps); a bad one raises :class:`SafetensorError` naming the
problem. Then one plan reads the file: all of its data area into one allocation in one call (the
bounce path pipelines it over its threads and staging buffers; the direct path where it serves),
or each tensor's (or shard's) bytes into its own memory as one batch.

Example::

    from hipfile.safetensors import load_file, safe_open, load_model_dir
    weights = load_file("model.safetensors", device="cuda:0")            # dict of torch tensors
    with safe_open("model.safetensors", framework="pt", device="cuda:0") as f:
        w = f.get_slice("lm_head.weight")[rank * rows : (rank + 1) * rows]
    model = load_model_dir("Llama-3-8B/", device="cuda:0")               # sharded: files in parallel

Frameworks: ``"pt"`` (PyTorch), ``"cupy"``, ``"np"`` (host memory). Tensors are views into one
allocation per file by default (freed when the last of them goes); ``copy=True`` gives each
tensor its own memory.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from hipfile import _hipfile, _remote
from hipfile._api import MAX_BATCH_ENTRIES, _Closing, open as _open
from hipfile._safetensors_format import _NUMPY, _TORCH, SafetensorError
from hipfile._saving import save, save_file, save_model_dir

__all__ = [
    "SafetensorError", "load_file", "load", "safe_open", "load_model_dir", "read_header", "save_file", "save", "save_model_dir"
]

Progress = Callable[[int, int], None]

#: Bytes per read when a progress callback asks to be told along the way.
PROGRESS_STEP = 256 << 20

#: Each range read goes to an offset of its allocation congruent to its file offset modulo
#: this, so that the file's aligned pieces land on aligned device memory (as a read of the
#: whole file from offset 0 would): the header's length rarely leaves the data aligned.
ALIGN = 4096


def _pad(file_offset: int) -> int:
    return file_offset % ALIGN


class Header:
    """A checked header: ``data_start``, ``data_len``, ``tensors`` (name -> ``(dtype, shape,
    begin, end)``, offsets within the data area, in offset order) and ``metadata``."""

    def __init__(self, path: str) -> None:
        try:
            if _remote.is_url(path):
                start, length, tensors, metadata = _remote.RemoteFile(path).safetensors_header()
            else:
                start, length, tensors, metadata = _hipfile.safetensors_header(os.fspath(path))
        except ValueError as exc:
            raise SafetensorError(str(exc)) from None
        self.path = path if _remote.is_url(path) else os.fspath(path)
        self.data_start: int = start
        self.data_len: int = length
        self.tensors: Dict[str, Tuple[str, List[int], int, int]] = {
            name: (dtype, shape, begin, end) for name, dtype, shape, begin, end, _ in tensors
        }
        self._row_bytes = {t[0]: t[5] for t in tensors}
        self.metadata: Optional[Dict[str, str]] = metadata

    def __repr__(self) -> str:
        return (f"Header({self.path!r}: {len(self.tensors)} tensors, data_start={self.data_start}, "
                f"data_len={self.data_len}, metadata={self.metadata!r})")

    def row_bytes(self, name: str) -> int:
        """The bytes of one row of ``name``'s first dimension (a scalar has none; a row of a
        packed dtype must end on a byte)."""
        row = self._row_bytes[name]
        if isinstance(row, str):  # why it has no rows (the header parser's words)
            raise SafetensorError(row)
        return row

    def names(self) -> List[str]:
        """The tensors' names, sorted (the order ``safetensors`` gives)."""
        return sorted(self.tensors)


def read_header(path) -> Header:
    """The checked header of ``path`` (raises :class:`SafetensorError` or ``OSError``)."""
    return Header(path)


class _Framework:
    """Allocation and views for one framework on one device."""

    def __init__(self, framework: str, device) -> None:
        self.name = {"pt": "pt", "torch": "pt", "pytorch": "pt", "np": "np", "numpy": "np", "cupy": "cupy", "cp": "cupy"}.get(
            framework
        )
        if self.name is None:
            raise ValueError(f"framework must be 'pt', 'cupy' or 'np', not {framework!r}")
        if self.name == "pt":
            import torch

            self.mod = torch
            self.device = torch.device(f"cuda:{device}" if isinstance(device, int) else (device or "cuda:0"))
            self.host = self.device.type == "cpu"
        elif self.name == "cupy":
            import cupy

            self.mod = cupy
            self.device = _device_index(device)
            self.host = False
        else:
            import numpy

            self.mod = numpy
            if device not in (None, "cpu"):  # "cpu" is safe_open's default
                raise ValueError("framework 'np' loads into host memory: device must be 'cpu' or None")
            self.host = True
            self.device = None

    def empty(self, nbytes: int):
        """``nbytes`` of uninitialised memory (uint8) on the device."""
        if self.name == "pt" and self.host:
            import numpy  # a CPU tensor has no memory hipfile can take: NumPy's, shared

            return self.mod.from_numpy(numpy.empty(nbytes, dtype=numpy.uint8))
        if self.name == "pt":
            return self.mod.empty(nbytes, dtype=self.mod.uint8, device=self.device)
        if self.name == "cupy":
            with self.mod.cuda.Device(self.device):
                return self.mod.empty(nbytes, dtype=self.mod.uint8)
        return self.mod.empty(nbytes, dtype=self.mod.uint8)

    def target(self, flat):
        """What hipfile reads into for ``flat`` (a CPU tensor's NumPy view)."""
        return flat.numpy() if self.name == "pt" and self.host else flat

    def dtype(self, name: str, tensor: str):
        """The framework's dtype for a header's, and the factor its last dimension shrinks by
        (2 for F4, which PyTorch packs two to a byte)."""
        if self.name == "pt":
            attr, pack = _TORCH.get(name, (None, 1))
            dt = getattr(self.mod, attr, None) if attr else None
        else:
            attr, pack = _NUMPY.get(name), 1
            dt = self.mod.dtype(attr) if attr else None
        if dt is None:
            raise SafetensorError(f"tensor {tensor!r}: dtype {name} has no {_NAMES[self.name]} type")
        return dt, pack

    def view(self, flat, begin: int, end: int, dtype: str, shape: Sequence[int], tensor: str):
        """The tensor at ``flat[begin:end]``: a view where the framework allows it (aligned),
        else a copy."""
        dt, pack = self.dtype(dtype, tensor)
        shape = list(shape)
        if pack > 1:
            if not shape or shape[-1] % pack:
                raise SafetensorError(f"tensor {tensor!r}: {dtype}'s last dimension must be even")
            shape[-1] //= pack
        part = flat[begin:end]
        size = _itemsize(self, dt)
        if begin % size == 0:
            return part.view(dt).reshape(shape)
        # Not aligned for its dtype (the format allows it): copied into memory of its own.
        if self.name == "pt":
            out = self.mod.empty(shape, dtype=dt, device=flat.device)
            out.reshape(-1).view(self.mod.uint8).copy_(part)
        else:
            out = self.mod.empty(shape, dtype=dt) if self.name == "np" else _cupy_empty(self, shape, dt)
            out.reshape(-1).view(self.mod.uint8)[...] = part
        return out


def _cupy_empty(fw: _Framework, shape, dt):
    with fw.mod.cuda.Device(fw.device):
        return fw.mod.empty(shape, dtype=dt)


def _itemsize(fw: _Framework, dt) -> int:
    size = getattr(dt, "itemsize", None)  # torch.dtype has it from PyTorch 2.1
    return size if size is not None else fw.mod.empty((), dtype=dt).element_size()


def _device_index(device) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    text = str(device)
    if text in ("cuda", "hip", "gpu"):
        return 0
    for prefix in ("cuda:", "hip:", "gpu:"):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return int(text[len(prefix):])
    raise ValueError(f"device must be an index or 'cuda:N', not {device!r}")


_NAMES = {"pt": "PyTorch", "cupy": "CuPy", "np": "NumPy"}



class _Tally:
    """Bytes arrived so far, told to ``progress(done, total)`` after each read; one call at a
    time (files load on several threads), the counts only growing."""

    def __init__(self, progress: Optional[Progress], total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0
        self.lock = threading.Lock()

    def add(self, n: int) -> None:
        if self.progress is not None:
            with self.lock:
                self.done += n
                self.progress(self.done, self.total)


def _read_all(f, target, header: Header, tally: _Tally) -> None:
    """The whole data area into ``target`` from offset ``_pad(data_start)``: one call, or steps
    of PROGRESS_STEP when someone listens."""
    step = header.data_len if tally.progress is None else PROGRESS_STEP
    pad = _pad(header.data_start)
    at = 0
    while at < header.data_len:
        n = min(step, header.data_len - at)
        got = f.read(target, n, header.data_start + at, pad + at)
        if got != n:
            raise SafetensorError(f"{header.path}: the file ended {header.data_len - at - got} bytes early")
        at += n
        tally.add(n)


def _read_ranges(f, path: str, ranges: List[Tuple[Any, int, int, int]], tally: _Tally) -> None:
    """``(buffer, size, file_offset, buf_offset)`` reads as batches; every one must be whole."""
    todo = [r for r in ranges if r[1] > 0]
    for start in range(0, len(todo), MAX_BATCH_ENTRIES):
        part = todo[start : start + MAX_BATCH_ENTRIES]
        got = f.read_batch(part)
        for (_, size, _, _), n in zip(part, got):
            if n != size:
                raise SafetensorError(f"{path}: the file ended early ({n} of {size} bytes of a tensor)")
        tally.add(sum(r[1] for r in part))


def _plan(header: Header, shard: Optional[Tuple[int, int]]):
    """Per tensor: ``(name, dtype, shape, begin, end)`` of what is loaded (the rank's rows of
    each tensor with a first dimension when ``shard`` is ``(rank, world)``)."""
    out = []
    for name, (dtype, shape, begin, end) in header.tensors.items():
        if shard is not None and shape:
            lo, hi = _hipfile.safetensors_shard_rows(shape[0], *shard)
            row = header.row_bytes(name)
            shape = [hi - lo] + list(shape[1:])
            begin, end = begin + lo * row, begin + hi * row
        out.append((name, dtype, shape, begin, end))
    return out


def _check_shard(shard) -> Optional[Tuple[int, int]]:
    if shard is None:
        return None
    rank, world = shard
    if not (isinstance(rank, int) and isinstance(world, int) and world >= 1 and 0 <= rank < world):
        raise ValueError(f"shard must be (rank, world_size) with 0 <= rank < world_size, not {shard!r}")
    return rank, world


def _to_read(header: Header, plan, copy: bool, sharded: bool) -> int:
    """The bytes a load reads: the planned ranges, or the whole data area in one piece."""
    return sum(e - b for _, _, _, b, e in plan) if (copy or sharded) else header.data_len


def _load(
    header: Header, plan, fw: _Framework, copy: bool, sharded: bool, tally: _Tally, cache: Optional[str]
) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    with _open(header.path, cache=cache) as f:
        if copy:
            ranges, made = [], []
            for name, dtype, shape, begin, end in plan:
                pad = _pad(header.data_start + begin)
                flat = fw.empty(pad + end - begin)
                made.append((name, flat, dtype, shape, pad, end - begin))
                ranges.append((fw.target(flat), end - begin, header.data_start + begin, pad))
            _read_ranges(f, header.path, ranges, tally)
            for name, flat, dtype, shape, pad, n in made:
                out[name] = fw.view(flat, pad, pad + n, dtype, shape, name)
        elif not sharded:
            pad = _pad(header.data_start)
            flat = fw.empty(pad + header.data_len)
            _read_all(f, fw.target(flat), header, tally)
            for name, dtype, shape, begin, end in plan:
                out[name] = fw.view(flat, pad + begin, pad + end, dtype, shape, name)
        else:
            # The rank's rows of every tensor, in one allocation in plan order.
            at, ranges, places = 0, [], []
            for name, dtype, shape, begin, end in plan:
                at += (_pad(header.data_start + begin) - at) % ALIGN
                ranges.append((None, end - begin, header.data_start + begin, at))
                places.append((name, dtype, shape, at, at + end - begin))
                at += end - begin
            flat = fw.empty(at)
            target = fw.target(flat)
            _read_ranges(f, header.path, [(target,) + r[1:] for r in ranges], tally)
            for name, dtype, shape, begin, end in places:
                out[name] = fw.view(flat, begin, end, dtype, shape, name)
    return out


def load_file(
    path,
    device=None,
    framework: str = "pt",
    *,
    copy: bool = False,
    shard: Optional[Tuple[int, int]] = None,
    progress: Optional[Progress] = None,
    cache: Optional[str] = None,
    process_group=None,
    cache_dir=None,
) -> Dict[str, Any]:
    """Every tensor of ``path``, as ``safetensors.torch.load_file(path, device=...)`` gives them
    (same names, dtypes, shapes and bytes; keys in the order of their bytes in the file, as
    safetensors 0.8 gives them, empty tensors at one offset in name order), in ``framework``'s
    memory on ``device`` (``None``: ``"cuda:0"``, or host memory for ``"np"``; ``"cpu"`` for
    host memory).

    ``copy=False`` (default): views into one allocation per file, freed when the last tensor is
    gone. ``copy=True``: each tensor owns its memory. ``shard=(rank, world_size)``: only the
    rank's part of each tensor's first dimension (``torch.chunk``'s split; scalars whole), the
    way tensor-parallel ranks load. ``progress(done_bytes, total_bytes)`` is called as the
    data arrives. ``cache``: the page-cache policy of this load (``'keep'``: the file stays in
    memory for the next load; ``'bypass'``: ``O_DIRECT``, nothing else is evicted; ``'auto'``:
    keep while it fits comfortably; ``None``: the driver's, ``HIPFILE_PAGE_CACHE``).
    ``process_group``: a ``torch.distributed`` group whose every rank calls this with the same
    file (PyTorch only): each byte is read from the file by one rank and broadcast to the others,
    with no memory beyond the tensors (with ``shard``, each rank reads only its own rows); an
    error on any rank raises on every rank.

    ``path`` may be a URL (``s3://bucket/key``, ``gs://``, ``az://``, ``http(s)://``;
    docs/remote.md): read through the node cache where one is configured (``cache_dir``, or
    ``HIPFILE_REMOTE_CACHE``), else straight from the store, by ranges in parallel; with
    ``process_group``, each rank fetches its share of the object from the store."""
    fw = _Framework(framework, device)
    shard = _check_shard(shard)
    if process_group is not None:
        return _load_group([_name(path)], fw, copy, shard, progress, cache, process_group)
    header = Header(_local(path, cache_dir))
    plan = _plan(header, shard)
    total = _to_read(header, plan, copy, shard is not None)
    return _load(header, plan, fw, copy, shard is not None, _Tally(progress, total), cache)


def _name(path) -> str:
    return path if _remote.is_url(path) else os.fspath(path)


def _local(path, cache_dir=None) -> str:
    """``path``, or for a URL its node cache's copy where a cache is configured."""
    if _remote.is_url(path):
        return _remote.localize(path, cache_dir) or path
    return os.fspath(path)


def _checkpoint(path) -> Tuple[List[str], Dict[str, str]]:
    """The files of a checkpoint and its index's weight map; for a URL, a prefix
    (``s3://bucket/dir/``: its ``model.safetensors.index.json`` and the files it names, else its
    ``*.safetensors``) or one object."""
    if not _remote.is_url(path):
        try:
            files, weight_map = _hipfile.safetensors_checkpoint(os.fspath(path))
        except ValueError as exc:
            raise SafetensorError(str(exc)) from None
        return [os.fspath(f) for f in files], weight_map
    if path.endswith(".safetensors"):
        return [path], {}
    import json

    prefix = path.rstrip("/") + "/"
    index_url = prefix + "model.safetensors.index.json"
    try:
        with _remote.RemoteFile(index_url) as index:
            body = bytearray(index.size())
            index.read(body)
    except FileNotFoundError:  # no index: every object of the prefix
        body = None
    if body is not None:
        try:
            weight_map = json.loads(bytes(body))["weight_map"]
            names = sorted(set(weight_map.values()))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SafetensorError(f"{index_url}: not a safetensors index ({exc})") from None
        for name in names:
            if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
                raise SafetensorError(f"{index_url}: {name!r} is not a file of this directory")
        return [prefix + n for n in names], weight_map
    files = [u for u, _ in _remote.listdir(prefix) if u.endswith(".safetensors") and "/" not in u[len(prefix) :]]
    if not files:
        raise SafetensorError(f"{prefix}: no model.safetensors.index.json and no .safetensors objects")
    return files, {}


def _merge(headers: List[Header], parts: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The files' tensors in one dict; a name in two files is a :class:`SafetensorError`."""
    out: Dict[str, Any] = {}
    for h, part in zip(headers, parts):
        for name, tensor in part.items():
            if name in out:
                raise SafetensorError(f"tensor {name!r} is in more than one file ({h.path})")
            out[name] = tensor
    return out


def _load_files(files, fw: _Framework, copy: bool, shard, progress, cache, max_workers: int) -> Dict[str, Any]:
    headers = [Header(f) for f in files]
    plans = [_plan(h, shard) for h in headers]
    total = sum(_to_read(h, plan, copy, shard is not None) for h, plan in zip(headers, plans))
    tally = _Tally(progress, total)
    with ThreadPoolExecutor(max(1, min(max_workers, len(headers)))) as pool:
        parts = list(pool.map(lambda hp: _load(*hp, fw, copy, shard is not None, tally, cache), zip(headers, plans)))
    return _merge(headers, parts)


def _load_group(files, fw: _Framework, copy: bool, shard, progress, cache, process_group) -> Dict[str, Any]:
    """:func:`load_file`/:func:`load_model_dir` over a process group (hipfile._distributed)."""
    from hipfile import _distributed

    if fw.name != "pt":
        raise ValueError("process_group: loads PyTorch tensors (framework 'pt')")
    group = _distributed.Group(process_group)
    if shard is not None:  # each rank reads its own rows only: read once already, nothing to share
        return group.together("loading", lambda: _load_files(files, fw, copy, shard, progress, cache, 1))
    headers = group.together("checking the checkpoint", lambda: [Header(f) for f in files])
    group.same("the number of files", len(headers))
    for h in headers:
        group.same(f"the data size of {h.path}", h.data_len)
    tally = _Tally(progress, sum(h.data_len for h in headers))
    parts, first = [], 0
    for h in headers:
        pad = _pad(h.data_start)
        flat = group.together(f"allocating for {h.path}", lambda: fw.empty(pad + h.data_len))
        with group.together(f"opening {h.path}", lambda: _open(h.path, cache=cache)) as f:
            pieces = _distributed.cut(h.data_start, h.data_len, pad)
            first += _distributed.read_once(group, f, flat, fw.target(flat), pieces, first, h.path, tally)
        part = {}
        for name, dtype, shape, begin, end in _plan(h, None):
            tensor = fw.view(flat, pad + begin, pad + end, dtype, shape, name)
            part[name] = tensor.clone() if copy else tensor
        parts.append(part)
    return _merge(headers, parts)


def load(data: bytes, framework: str = "np") -> Dict[str, Any]:
    """Tensors from the bytes of a safetensors file in memory (host memory; as
    ``safetensors.numpy.load``): written to a temporary file and loaded."""
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".safetensors") as tmp:
        tmp.write(data)
        tmp.flush()
        return load_file(tmp.name, device=None, framework=framework)


def load_model_dir(
    path,
    device=None,
    framework: str = "pt",
    *,
    copy: bool = False,
    shard: Optional[Tuple[int, int]] = None,
    progress: Optional[Progress] = None,
    max_workers: int = 4,
    cache: Optional[str] = None,
    process_group=None,
    cache_dir=None,
) -> Dict[str, Any]:
    """Every tensor of a checkpoint directory (``model.safetensors.index.json`` and its files,
    or every ``*.safetensors`` in it; keys file by file, each file's in offset order), files
    read in parallel (``max_workers`` at a time; one after another with ``process_group``,
    whose pieces go round the ranks across the files); the options are :func:`load_file`'s. A
    tensor the index maps to a file that lacks it, or a name in two files, is a
    :class:`SafetensorError`. ``path`` may be a URL prefix (``s3://bucket/model/``), read as
    :func:`load_file` reads a URL."""
    files, weight_map = _checkpoint(path)
    fw = _Framework(framework, device)
    shard = _check_shard(shard)
    if process_group is not None:
        out = _load_group(files, fw, copy, shard, progress, cache, process_group)
    else:
        files = [_local(f, cache_dir) for f in files]
        out = _load_files(files, fw, copy, shard, progress, cache, max_workers)
    for name, file in weight_map.items():
        if name not in out:
            raise SafetensorError(f"the index maps {name!r} to {file}, which does not hold it")
    return out


class safe_open(_Closing):  # noqa: N801 - the safetensors package's name
    """A safetensors file opened for reading single tensors, as ``safetensors.safe_open``:
    ``keys()``, ``metadata()``, ``get_tensor(name)``, ``get_slice(name)[rows]``; each reads
    only what is asked for."""

    def __init__(self, path, framework: str = "pt", device="cpu", *, cache: Optional[str] = None, cache_dir=None) -> None:
        self._file = None
        self._fw = _Framework(framework, device)
        self._header = Header(_local(path, cache_dir))
        self._file = _open(self._header.path, cache=cache)

    def close(self) -> None:
        """Closes the file (tensors already read stay); also at the end of a ``with`` block or
        when the object is collected."""
        if self._file is not None:
            self._file.close()

    def keys(self) -> List[str]:
        """The tensors' names, sorted."""
        return self._header.names()

    def offset_keys(self) -> List[str]:
        """The tensors' names in the order of their bytes in the file."""
        return list(self._header.tensors)

    def metadata(self) -> Optional[Dict[str, str]]:
        """``__metadata__``, or ``None``."""
        return self._header.metadata

    def _entry(self, name: str):
        try:
            return self._header.tensors[name]
        except KeyError:
            raise SafetensorError(f"{self._header.path}: no tensor {name!r}") from None

    def _read(self, name: str, dtype: str, shape, begin: int, end: int):
        pad = _pad(self._header.data_start + begin)
        flat = self._fw.empty(pad + end - begin)
        if end > begin:
            got = self._file.read(self._fw.target(flat), end - begin, self._header.data_start + begin, pad)
            if got != end - begin:
                raise SafetensorError(f"{self._header.path}: the file ended early in tensor {name!r}")
        return self._fw.view(flat, pad, pad + end - begin, dtype, shape, name)

    def get_tensor(self, name: str):
        """The tensor ``name`` (its own memory)."""
        dtype, shape, begin, end = self._entry(name)
        return self._read(name, dtype, shape, begin, end)

    def get_slice(self, name: str) -> "TensorSlice":
        """A handle that reads part of ``name`` when indexed: ``[a:b]`` (rows of the first
        dimension), ``[i]``, or ``[a:b, ...]`` with more indices applied after the rows arrive."""
        return TensorSlice(self, name, *self._entry(name))


class TensorSlice:
    """Part of one tensor, read when indexed (``safe_open.get_slice``)."""

    def __init__(self, owner: safe_open, name: str, dtype: str, shape, begin: int, end: int) -> None:
        self._owner, self._name, self._dtype, self._shape, self._begin, self._end = owner, name, dtype, shape, begin, end

    def get_shape(self) -> List[int]:
        """The whole tensor's shape."""
        return list(self._shape)

    def get_dtype(self) -> str:
        """The header's dtype name (``"BF16"``)."""
        return self._dtype

    def __getitem__(self, index):
        rest = ()
        if isinstance(index, tuple):
            index, rest = (index[0], index[1:]) if index else (slice(None), ())
        if index is Ellipsis:
            index, rest = slice(None), (Ellipsis,) + tuple(rest)
        row = self._owner._header.row_bytes(self._name)  # refuses a scalar, or rows not ending on a byte
        rows = self._shape[0]
        drop = False
        if isinstance(index, int):
            i = index + rows if index < 0 else index
            if not 0 <= i < rows:
                raise IndexError(f"row {index} of tensor {self._name!r} with {rows} rows")
            lo, hi, drop = i, i + 1, True
        elif isinstance(index, slice):
            lo, hi, step = index.indices(rows)
            if step != 1:
                raise SafetensorError(f"tensor {self._name!r}: only slices with step 1 are read in part")
            hi = max(hi, lo)
        else:
            raise TypeError(f"cannot index tensor {self._name!r} with {index!r}")
        shape = [hi - lo] + list(self._shape[1:])
        out = self._owner._read(self._name, self._dtype, shape, self._begin + lo * row, self._begin + hi * row)
        if drop:
            out = out[0]
        if rest and any(r != slice(None) for r in rest):
            out = out[(slice(None),) + tuple(rest)] if not drop else out[tuple(rest)]
            out = out.copy() if self._owner._fw.name in ("np", "cupy") else out.contiguous()
        return out
