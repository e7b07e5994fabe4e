"""Saving in safetensors format straight from device memory (``hipfile.safetensors.save_file``,
``save``, ``save_model_dir``).

The file is the one the ``safetensors`` package writes for the same tensors and metadata, byte
for byte (the layout is hipfile-safetensors', checked against that package by the tests): so
every safetensors reader loads it. Tensors move from their memory (GPU memory of PyTorch or
CuPy, host memory of NumPy or a CPU tensor) to the file through the library, with no host copy
of device data in the caller's path. The write is atomic: the file is written under a temporary
name in the same directory and renamed over ``filename`` once complete, so a crash or an error
leaves the old file or none, never a torn one.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from typing import Any, Dict, List, Optional, Tuple

from hipfile import _hipfile
from hipfile._api import File
from hipfile._safetensors_format import _NUMPY, _TORCH, SafetensorError

_FROM_TORCH = {attr: (code, pack) for code, (attr, pack) in _TORCH.items()}
_FROM_NUMPY = {name: code for code, name in _NUMPY.items()}


class _Planned:
    """One tensor as it will be written: its header entry and the memory its bytes come from
    (``None`` for no bytes)."""

    __slots__ = ("name", "code", "shape", "memory", "to_host")

    def __init__(self, name: str, code: str, shape: List[int], memory: Any, to_host) -> None:
        self.name, self.code, self.shape, self.memory, self.to_host = name, code, shape, memory, to_host


def _kind(value: Any) -> str:
    module = type(value).__module__.split(".")[0]
    if module == "torch" and hasattr(value, "untyped_storage"):
        return "torch"
    if module == "numpy" and hasattr(value, "dtype"):
        return "numpy"
    if module == "cupy" and hasattr(value, "dtype"):
        return "cupy"
    return ""


def _not_contiguous(name: str) -> ValueError:
    return ValueError(
        f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It either means you"
        " are trying to save tensors which are reference of each other in which case it's recommended to save"
        " only the full tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to"
        " pack it before saving."
    )


def _plan_torch(name: str, t) -> _Planned:
    import torch

    if t.layout != torch.strided:
        raise ValueError(f"You are trying to save a sparse tensors: `{[name]}` which this library does not support.")
    if not t.is_contiguous():
        raise _not_contiguous(name)
    attr = str(t.dtype).split(".")[-1]
    if attr not in _FROM_TORCH:
        raise ValueError(f"tensor {name!r}: dtype {t.dtype} has no safetensors dtype")
    code, pack = _FROM_TORCH[attr]
    shape = list(t.shape)
    if pack > 1:
        shape[-1] *= pack
    flat = t.detach().reshape(-1).view(torch.uint8)  # the same memory, as bytes
    if t.numel() == 0:
        memory = None
    elif t.device.type == "cpu":
        memory = flat.numpy()  # a CPU tensor's memory, through NumPy's buffer
    else:
        memory = flat
    return _Planned(name, code, shape, memory, lambda: flat.cpu().numpy().tobytes())


def _plan_array(name: str, a, kind: str) -> _Planned:
    if not a.flags.c_contiguous:
        raise _not_contiguous(name)
    code = _FROM_NUMPY.get(a.dtype.name)
    if code is None:
        raise ValueError(f"tensor {name!r}: dtype {a.dtype} has no safetensors dtype")
    if a.dtype.byteorder == ">":  # safetensors is little-endian, as the package converts
        a = a.astype(a.dtype.newbyteorder("<"))
    memory = a if a.size else None
    to_host = (lambda: a.get().tobytes()) if kind == "cupy" else a.tobytes
    return _Planned(name, code, list(a.shape), memory, to_host)


def _shared(planned: Dict[str, Any]) -> List[List[str]]:
    """Groups of PyTorch tensors whose bytes overlap in one storage (safetensors refuses them)."""
    storages: Dict[Tuple, List[Tuple[int, int, str]]] = {}
    for name, t in planned.items():
        if _kind(t) != "torch" or t.device.type == "meta" or t.numel() == 0:
            continue
        storage = t.untyped_storage()
        if storage.data_ptr() == 0 or storage.nbytes() == 0:
            continue
        start = t.data_ptr()
        storages.setdefault((str(t.device), storage.data_ptr()), []).append((start, start + t.nbytes, name))
    groups = []
    for areas in storages.values():
        areas.sort()
        group, stop = [areas[0][2]], areas[0][1]
        for begin, end, name in areas[1:]:
            if begin < stop:
                group.append(name)
            else:
                if len(group) > 1:
                    groups.append(group)
                group = [name]
            stop = max(stop, end)
        if len(group) > 1:
            groups.append(group)
    return groups


def _plan(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]]):
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, tensor] but received {type(tensors)}")
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise ValueError("metadata must be a dict of str to str")
    planned = []
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise ValueError(f"Key `{name!r}` is invalid: tensor names are str")
        kind = _kind(value)
        if kind == "torch":
            planned.append(_plan_torch(name, value))
        elif kind:
            planned.append(_plan_array(name, value, kind))
        else:
            raise ValueError(
                f"Key `{name}` is invalid, expected a PyTorch tensor or a NumPy or CuPy array but received {type(value)}"
            )
    failing = _shared(tensors)
    if failing:
        raise RuntimeError(
            "Some tensors share memory, this will lead to duplicate memory on disk and potential differences when"
            f" loading them again: {failing}. Save each storage once (clone the others), or use `save_model_dir`,"
            " which keeps the first of tensors that share memory, as safetensors' `save_model` does."
        )
    entries = [(p.name, p.code, p.shape) for p in planned]
    meta = None if metadata is None else list(metadata.items())
    try:
        header, ranges = _hipfile.safetensors_layout(entries, meta)
    except ValueError as exc:
        raise SafetensorError(str(exc)) from None
    return planned, bytes(header), ranges


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file of ``tensors`` and ``metadata`` (each tensor's bytes
    copied to host memory): what ``safetensors``' ``save`` returns for the same arguments."""
    planned, header, ranges = _plan(tensors, metadata)
    out = bytearray(len(header) + max((end for _, end in ranges), default=0))
    out[: len(header)] = header
    for p, (begin, end) in zip(planned, ranges):
        if end > begin:
            out[len(header) + begin : len(header) + end] = p.to_host()
    return bytes(out)


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_file(
    tensors: Dict[str, Any],
    filename,
    metadata: Optional[Dict[str, str]] = None,
    *,
    durable: bool = False,
    cache: Optional[str] = None,
) -> None:
    """Saves ``tensors`` (PyTorch tensors on the GPU or the CPU, CuPy or NumPy arrays) and
    ``metadata`` to ``filename`` in safetensors format, through the library from the tensors'
    memory. The file is ``safetensors``' for the same arguments, byte for byte; it replaces
    ``filename`` atomically (a temporary file in the same directory, renamed once whole).
    ``durable``: on stable storage (the file and its directory entry) when this returns.
    ``cache``: the page-cache policy of the write (``hipfile.open``'s; ``None``: the driver's).
    Refused as ``safetensors`` refuses them: non-contiguous tensors, tensors that share memory,
    sparse ones."""
    planned, header, ranges = _plan(tensors, metadata)
    from hipfile import _remote

    if _remote.is_url(filename):
        # An object appears only when its upload completes: the rename's guarantee, by the store.
        with _remote.RemoteWriteFile(filename) as f:
            f.write(header)
            start = len(header)
            f._move_all(True, [(p.memory, end - begin, start + begin, 0) for p, (begin, end) in zip(planned, ranges)])
        return
    path = os.fspath(filename)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        # Durable: each write call's data durable when it returns (the bounce path starts each
        # chunk's writeback as it goes, or writes O_DIRECT), so the disk works while the rest is
        # written; else no fdatasync at all.
        with File(tmp, "x", file_mode=0o666, cache=cache, durable=durable) as f:
            if f.write(header) != len(header):
                raise OSError(f"{tmp}: the header was written short")
            start = len(header)
            f._move_all(True, [(p.memory, end - begin, start + begin, 0) for p, (begin, end) in zip(planned, ranges)])
            if durable:
                os.fsync(f.fileno())  # the size and what the calls above did not sync
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        _fsync_directory(directory)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _shard_size(size) -> int:
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        return size
    m = _SIZE.match(str(size))
    if not m:
        raise ValueError(f"max_shard_size={size!r}: give bytes or a size such as '5GB' or '2GiB'")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").upper()])


def _nbytes(value: Any) -> int:
    return value.nbytes if _kind(value) != "torch" else value.numel() * value.element_size()


def _storage(value: Any):
    if _kind(value) != "torch" or value.device.type == "meta":
        return None
    storage = value.untyped_storage()
    return (str(value.device), storage.data_ptr(), storage.nbytes()) if storage.data_ptr() else None


def save_model_dir(
    state_dict: Dict[str, Any],
    directory,
    max_shard_size="5GB",
    *,
    metadata: Optional[Dict[str, str]] = None,
    durable: bool = False,
    cache: Optional[str] = None,
) -> List[str]:
    """Saves ``state_dict`` into ``directory`` as Hugging Face's ``save_pretrained`` lays it out:
    ``model.safetensors`` when it fits in one shard of ``max_shard_size`` (bytes, or ``'5GB'``,
    ``'2GiB'``), else ``model-0000k-of-0000n.safetensors`` and ``model.safetensors.index.json``
    (``{"metadata": {"total_size": ...}, "weight_map": {name: file}}``). Tensors are put in
    shards in order, a new shard when the next would overflow it, one larger than the limit in a
    shard of its own; of tensors that share memory, the first is saved and the others left out
    (as ``save_pretrained`` does with tied weights). Each shard's metadata is ``metadata``
    (default ``{"format": "pt"}``). The files written, in order."""
    limit = _shard_size(max_shard_size)
    from hipfile import _remote

    remote = _remote.is_url(directory)
    if not remote:
        os.makedirs(directory, exist_ok=True)
    meta = {"format": "pt"} if metadata is None else metadata
    shards: List[Dict[str, Any]] = []
    current: Dict[str, Any] = {}
    current_size = total = 0
    seen = set()
    for name, value in state_dict.items():
        storage = _storage(value)
        if storage is not None:
            if storage in seen:
                continue  # tied to a tensor already saved
            seen.add(storage)
        size = _nbytes(value)
        total += size
        if size > limit:
            shards.append({name: value})
            continue
        if current and current_size + size > limit:
            shards.append(current)
            current, current_size = {}, 0
        current[name] = value
        current_size += size
    if current or not shards:
        shards.append(current)
    if len(shards) == 1:
        names = ["model.safetensors"]
    else:
        names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    join = (lambda d, n: d.rstrip("/") + "/" + n) if remote else os.path.join
    for name, shard in zip(names, shards):
        save_file(shard, join(directory, name), meta, durable=durable, cache=cache)
    index = join(directory, "model.safetensors.index.json")
    if len(shards) > 1:
        weight_map = {tensor: name for name, shard in zip(names, shards) for tensor in shard}
        body = json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2, sort_keys=True)
    if remote:
        # The index last: a reader that finds it finds every shard it names.
        if len(shards) > 1:
            with _remote.RemoteWriteFile(index) as out:
                out.write((body + "\n").encode())
            names.append("model.safetensors.index.json")
        return [join(directory, n) for n in names]
    if len(shards) > 1:
        tmp = f"{index}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(body + "\n")
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, index)
        names.append("model.safetensors.index.json")
    elif os.path.exists(index):
        os.unlink(index)  # a stale index would name shards that are not there
    if durable:
        _fsync_directory(os.fspath(directory))
    return [os.path.join(directory, n) for n in names]

