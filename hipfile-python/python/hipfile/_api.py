"""The Pythonic API: ``hipfile.open``, futures, batches, stream-ordered calls, device buffers."""

from __future__ import annotations

import errno as _errno
import os
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Tuple, TypeVar, Union

from hipfile import _hipfile
from hipfile._open import open_driver

if TYPE_CHECKING:  # the classes as the package's stub declares them (hipfile/__init__.pyi)
    from hipfile import RemoteFile, RemoteWriteFile

#: The package's names from this module (``hipfile.__all__`` takes them all): a public call is
#: its definition here, annotated, and its name in this list.
__all__ = [
    "open",
    "register",
    "Registration",
    "File",
    "Future",
    "StreamOp",
    "DeviceBuffer",
    "stats",
    "capabilities",
    "driver_properties",
    "runtime",
    "parameter_names",
    "get_parameter",
    "set_parameter",
    "MAX_RW_COUNT",
    "MAX_BATCH_ENTRIES",
]

_Path = Union[str, "os.PathLike[str]"]
#: A stream: an int handle, ``None`` (the null stream), a PyTorch or CuPy stream.
_Stream = Union[int, None, Any]
#: A batch entry: ``(buf, size, file_offset, buf_offset)``, the last ones optional.
_Entry = Union[Tuple[Any], Tuple[Any, Optional[int]], Tuple[Any, Optional[int], int], Tuple[Any, Optional[int], int, int]]
_Self = TypeVar("_Self", bound="_Closing")

#: The most one call moves (Linux's ``MAX_RW_COUNT``): larger requests are split.
MAX_RW_COUNT: int = _hipfile.MAX_RW_COUNT
#: The most entries one batch holds: larger lists are split.
MAX_BATCH_ENTRIES: int = _hipfile.MAX_BATCH_ENTRIES

class _Closing:
    """``with`` blocks and collection end the object's :meth:`close`."""

    def close(self) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class _Opened(_Closing):
    """What :func:`open` gives (:class:`File`, :class:`hipfile.RemoteFile`,
    :class:`hipfile.RemoteWriteFile`): ``_name``, the path or URL it was opened with;
    ``_native``, what the native module holds for it (a handle, an object, an upload), ``None``
    once closed; ``_kind``, the class's name in its ``repr`` and errors."""

    _kind: str
    _name: str
    _native: Any = None

    def __repr__(self) -> str:
        return f"<hipfile.{self._kind} {self._shown()!r}{' closed' if self.closed else ''}>"

    def _shown(self) -> str:
        """What its ``repr`` names."""
        return self._name

    @property
    def closed(self) -> bool:
        """Whether it is closed (an upload: completed or aborted)."""
        return self._native is None

    @property
    def name(self) -> str:
        """The path or URL it was opened with."""
        return self._name

    def _check(self) -> Any:
        """What the native module holds for it; ``ValueError`` once it is closed."""
        if self._native is None:
            raise ValueError(f"I/O operation on a closed hipfile.{self._kind}")
        return self._native

    def _check_moved(self, write: bool, spans: List[Tuple], moved: List[int]) -> None:
        """Raises ``OSError`` for the first ``(buf, size, file_offset, buf_offset)`` of ``spans``
        that ``moved`` says came short (a file that ends early, a full disk)."""
        for (_, n, offset, _), done in zip(spans, moved):
            if done != n:
                verb = "written" if write else "read"
                raise OSError(f"{self._name}: {done} of {n} bytes {verb} at {offset}")


class DeviceBuffer:
    """``size`` bytes of device memory on ``device``, allocated by the runtime the package uses
    (HIP, CUDA's runtime, or the mock GPU) and freed when the object is collected.

    Where the runtime is real it exports ``__cuda_array_interface__`` (``cupy.asarray``,
    ``torch.as_tensor`` take it) and DLPack (``torch.from_dlpack``, ``cupy.from_dlpack``,
    ``jax.dlpack.from_dlpack``), as one-dimensional ``uint8`` memory that keeps the buffer alive.
    On the mock GPU, :meth:`copy_from` and :meth:`to_bytes` move its bytes.
    """

    def __init__(self, size: int, device: int = 0) -> None:
        if size < 0:
            raise ValueError("size must not be negative")
        self._ptr = 0
        self._ptr = _hipfile.device_alloc(size, device)
        self._size = size
        self._device = device

    def __del__(self) -> None:
        if getattr(self, "_ptr", 0):
            try:
                _hipfile.device_free(self._ptr)
            except Exception:
                pass
            self._ptr = 0

    @property
    def ptr(self) -> int:
        """The device address."""
        return self._ptr

    @property
    def nbytes(self) -> int:
        """Its size in bytes."""
        return self._size

    @property
    def device(self) -> int:
        """The device that holds it."""
        return self._device

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"hipfile.DeviceBuffer(size={self._size}, device={self._device}, ptr={self._ptr:#x})"

    @property
    def __cuda_array_interface__(self) -> dict:
        if runtime()["mock"]:
            raise AttributeError("the mock GPU's memory is host memory: no CUDA array interface")
        return {"shape": (self._size,), "typestr": "|u1", "data": (self._ptr, False), "version": 3, "strides": None}

    def __dlpack__(
        self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Optional[bool] = None
    ) -> Any:
        """A DLPack capsule of the buffer (device memory of the runtime in use)."""
        if copy:
            raise BufferError("hipfile.DeviceBuffer exports its memory, not a copy")
        return _hipfile.dlpack(self._ptr, self._size, self._device, self)

    def __dlpack_device__(self) -> Tuple[int, int]:
        """``(device type, device)``: CUDA (2) or ROCm (10)."""
        info = runtime()
        if info["mock"]:
            raise BufferError("the mock GPU's memory is host memory: no DLPack export")
        return (2 if info["vendor"] == "cuda" else 10, self._device)

    def copy_from(self, data: Any, offset: int = 0) -> None:
        """Copies the bytes of ``data`` (any buffer) to the device, at ``offset``."""
        _hipfile.copy_to_device(self._ptr, self._size, offset, bytes(memoryview(data).cast("B")))

    def to_bytes(self, size: Optional[int] = None, offset: int = 0) -> bytes:
        """The device's bytes (all, or ``size`` from ``offset``)."""
        size = self._size - offset if size is None else size
        return bytes(_hipfile.copy_from_device(self._ptr, self._size, offset, size))


Future = _hipfile.Future


class StreamOp:
    """A stream-ordered read or write: :attr:`result` once its stream has run it."""

    def __init__(self, op: _hipfile.StreamOp) -> None:
        self._op = op

    def done(self) -> bool:
        """Whether the stream has run it."""
        return self._op.done()

    def __repr__(self) -> str:
        return f"StreamOp(result={self.result})" if self.done() else "StreamOp(queued)"

    @property
    def result(self) -> Optional[int]:
        """The bytes moved, or a negative error (``-errno``, ``-hipFileOpError``), once run."""
        return self._op.result()


def _stream_handle(stream) -> int:
    """A stream handle from an int, ``None`` (the null stream), a PyTorch stream
    (``.cuda_stream``) or a CuPy stream (``.ptr``)."""
    if stream is None:
        return 0
    for attribute in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value
    return int(stream)


_MODES = {
    "r": os.O_RDONLY,
    "r+": os.O_RDWR,
    "w": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
    "w+": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
    "a": os.O_RDWR | os.O_CREAT,
    "x": os.O_RDWR | os.O_CREAT | os.O_EXCL,
}


#: The page-cache policies a file may be given (``None``: the driver's).
_CACHE = (None, "auto", "keep", "bypass")


class File(_Opened):
    """A file registered with the library (see :func:`open`); a context manager."""

    _kind = "File"

    def __init__(
        self,
        path: _Path,
        mode: str = "r",
        *,
        direct: bool = True,
        file_mode: int = 0o644,
        cache: Optional[str] = None,
        durable: Optional[bool] = None,
    ) -> None:
        flags = _MODES.get(mode.replace("b", ""))
        if flags is None:
            raise ValueError(f"mode {mode!r}: use 'r', 'r+', 'w', 'w+', 'a' or 'x'")
        if cache not in _CACHE:
            raise ValueError(f"cache={cache!r}: use 'auto', 'keep', 'bypass' or None")
        self._name = os.fspath(path)
        self._fd = None
        fd = None
        if direct:
            try:
                fd = os.open(self._name, flags | os.O_CLOEXEC | os.O_DIRECT, file_mode)
            except OSError as exc:
                if exc.errno not in (_errno.EINVAL, _errno.EOPNOTSUPP):
                    raise
        if fd is None:
            fd = os.open(self._name, flags | os.O_CLOEXEC, file_mode)
        self._fd = fd
        try:
            open_driver(hold=True)
        except BaseException:
            os.close(fd)
            self._fd = None
            raise
        try:
            self._native = _hipfile.handle_register(fd)
        except BaseException:
            _hipfile.driver_close()
            os.close(fd)
            self._fd = None
            raise
        if cache is not None:
            self.set_cache(cache)
        if durable is not None:
            self.set_durable(durable)

    def fileno(self) -> int:
        """The descriptor it was opened with."""
        self._check()
        return self._fd

    def size(self) -> int:
        """The file's size in bytes."""
        return os.fstat(self.fileno()).st_size

    def close(self) -> None:
        """Deregisters and closes the file, and lets go of its use of the driver."""
        if self._native is not None:
            handle, self._native = self._native, None
            try:
                _hipfile.handle_deregister(handle)
            finally:
                _hipfile.driver_close()
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _transfer(self, write: bool, buf, size, file_offset: int, buf_offset: int) -> int:
        # The native module finds the buffer's memory, fits the size to it, and splits what
        # one call cannot move.
        return _hipfile.transfer(write, self._check(), (buf, size, file_offset, buf_offset))

    def read(self, buf: Any, size: Optional[int] = None, file_offset: int = 0, buf_offset: int = 0) -> int:
        """Reads ``size`` bytes (default: as many as ``buf`` holds past ``buf_offset``) at
        ``file_offset`` into ``buf``; the bytes read (fewer at end of file)."""
        return self._transfer(False, buf, size, file_offset, buf_offset)

    def write(self, buf: Any, size: Optional[int] = None, file_offset: int = 0, buf_offset: int = 0) -> int:
        """Writes ``size`` bytes of ``buf`` (default: all past ``buf_offset``) at
        ``file_offset``; the bytes written (durable when it returns, by default)."""
        return self._transfer(True, buf, size, file_offset, buf_offset)

    def _submit(self, write: bool, buf, size, file_offset: int, buf_offset: int) -> Future:
        return _hipfile.submit(write, self._check(), (buf, size, file_offset, buf_offset))

    def pread(self, buf: Any, size: Optional[int] = None, file_offset: int = 0, buf_offset: int = 0) -> Future:
        """As :meth:`read`, on the library's threads: a :class:`Future` at once."""
        return self._submit(False, buf, size, file_offset, buf_offset)

    def pwrite(self, buf: Any, size: Optional[int] = None, file_offset: int = 0, buf_offset: int = 0) -> Future:
        """As :meth:`write`, on the library's threads: a :class:`Future` at once."""
        return self._submit(True, buf, size, file_offset, buf_offset)

    def _batch(self, write: bool, entries: Iterable[Tuple], timeout: Optional[float]) -> List[int]:
        handle = self._check()
        native = []
        for entry in entries:
            buf, size, file_offset, buf_offset = (tuple(entry) + (None, 0, 0))[:4]
            native.append((write, handle, (buf, size, file_offset, buf_offset)))
        results: List[Any] = []
        for start in range(0, len(native), MAX_BATCH_ENTRIES):
            results.extend(_hipfile.batch(native[start : start + MAX_BATCH_ENTRIES], timeout))
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return results

    def read_batch(self, entries: Iterable[_Entry], timeout: Optional[float] = None) -> List[int]:
        """Reads ``(buf, size, file_offset, buf_offset)`` entries as one batch (run at once, by
        the library's threads); the bytes each read. Raises the first entry's error, if any."""
        return self._batch(False, entries, timeout)

    def write_batch(self, entries: Iterable[_Entry], timeout: Optional[float] = None) -> List[int]:
        """Writes ``(buf, size, file_offset, buf_offset)`` entries as one batch; see
        :meth:`read_batch`."""
        return self._batch(True, entries, timeout)

    def _move_all(self, write: bool, spans: Iterable[Tuple]) -> None:
        """Moves each ``(buf, size, file_offset, buf_offset)`` whole: cut into entries of at most
        ``MAX_RW_COUNT`` bytes (what one call moves), run as batches. Raises ``OSError`` where a
        read or write comes short (a file that ends early, a full disk)."""
        todo = []
        for buf, size, file_offset, buf_offset in spans:
            for at in range(0, size, MAX_RW_COUNT):
                todo.append((buf, min(MAX_RW_COUNT, size - at), file_offset + at, buf_offset + at))
        self._check_moved(write, todo, self.write_batch(todo) if write else self.read_batch(todo))

    def _stream(self, write: bool, buf, size, file_offset: int, buf_offset: int, stream) -> StreamOp:
        op = _hipfile.stream_submit(write, self._check(), (buf, size, file_offset, buf_offset), _stream_handle(stream))
        return StreamOp(op)

    def read_async(
        self, buf: Any, size: Optional[int] = None, file_offset: int = 0, buf_offset: int = 0, stream: _Stream = None
    ) -> StreamOp:
        """Queues a read on ``stream`` (an int handle, a PyTorch or CuPy stream, ``None`` for the
        null stream): it runs when the stream gets there."""
        return self._stream(False, buf, size, file_offset, buf_offset, stream)

    def write_async(
        self, buf: Any, size: Optional[int] = None, file_offset: int = 0, buf_offset: int = 0, stream: _Stream = None
    ) -> StreamOp:
        """Queues a write on ``stream``; see :meth:`read_async`."""
        return self._stream(True, buf, size, file_offset, buf_offset, stream)

    def set_cache(self, cache: Optional[str]) -> None:
        """This file's page-cache policy from now on: ``'keep'`` (reads fill the page cache and
        writes stay in it), ``'bypass'`` (``O_DIRECT`` where the file system allows it),
        ``'auto'`` (keep while the file fits comfortably in memory), or ``None`` for the
        driver's (``HIPFILE_PAGE_CACHE``, the ``PageCache`` parameter)."""
        if cache not in _CACHE:
            raise ValueError(f"cache={cache!r}: use 'auto', 'keep', 'bypass' or None")
        _hipfile.handle_set_page_cache(self._check(), cache)

    def set_durable(self, durable: Optional[bool]) -> None:
        """Whether this file's writes are durable when they return (one ``fdatasync`` per call)
        from now on; ``None`` for the driver's (``HIPFILE_DURABLE_WRITES``, default true). A
        writer of many pieces that syncs once at the end (``os.fsync``) sets it false."""
        _hipfile.handle_set_durable(self._check(), durable)

    def cache_rule(self) -> str:
        """The page-cache rule a read of the whole file follows now, in words (for example
        ``keep (auto: the file, 8.0 MiB, fits within 11000.0 MiB)``)."""
        return _hipfile.page_cache_rule(self._check())

    def p2p_verdict(self) -> dict:
        """Whether each open p2p backend would serve this file: ``{name: None or why not}``."""
        return dict(_hipfile.p2p_verdict(self._check()))


class Registration(_Closing):
    """A buffer registered with the library (``hipFileBufRegister``) until :meth:`close` or the
    end of a ``with`` block: requests into it skip the runtime's pointer query (see
    :func:`register`)."""

    def __init__(self, buf: Any) -> None:
        self._keep = buf
        open_driver(hold=True)
        try:
            self._addr = _hipfile.register_buffer(buf)
        except BaseException:
            _hipfile.driver_close()
            raise
        self._open = True

    def close(self) -> None:
        """Deregisters the buffer and lets go of the driver."""
        if getattr(self, "_open", False):
            self._open = False
            try:
                _hipfile.buf_deregister(self._addr)
            finally:
                _hipfile.driver_close()


def register(buf: Any) -> Registration:
    """Registers ``buf`` (device memory, or host memory where allowed) for as long as the
    returned object lives or its ``with`` block runs. Optional: unregistered buffers work too,
    each request asking the runtime what its memory is; registered ones save that query, which
    counts where many small requests go to one buffer."""
    return Registration(buf)


def open(  # noqa: A001
    path: _Path,
    mode: str = "r",
    *,
    direct: bool = True,
    cache: Optional[str] = None,
    durable: Optional[bool] = None,
    cache_dir: Optional[_Path] = None,
) -> Union[File, RemoteFile, RemoteWriteFile]:
    """Opens ``path`` (``mode``: ``'r'``, ``'r+'``, ``'w'``, ``'w+'``, ``'a'``, ``'x'``) with
    ``O_DIRECT`` where the file system allows it, and registers it; a context manager.
    ``cache``: this file's page-cache policy (:meth:`File.set_cache`; ``None``: the driver's);
    ``durable``: whether its writes are durable when they return (:meth:`File.set_durable`).
    The library reads and writes through descriptors of its own either way: ``direct`` only
    decides how the descriptor :meth:`File.fileno` gives is opened.

    ``path`` may be a URL (``s3://bucket/key``, ``gs://``, ``az://``, ``http(s)://``;
    docs/remote.md): mode ``'r'`` reads the object (from the node cache, ``cache_dir`` or
    ``HIPFILE_REMOTE_CACHE``, where one is configured: a :class:`File` of its local copy;
    else straight from the store: a :class:`hipfile.RemoteFile`); mode ``'w'`` writes one in
    order (:class:`hipfile.RemoteWriteFile`, which appears when closed)."""
    if isinstance(path, str) and _hipfile.is_url(path):
        from hipfile import _remote

        plain = mode.replace("b", "")
        if plain == "r":
            local = _remote.localize(path, cache_dir)
            return _remote.RemoteFile(path) if local is None else File(local, "r", direct=direct, cache=cache)
        if plain in ("w", "x"):
            return _remote.RemoteWriteFile(path)
        raise ValueError(f"mode {mode!r}: a URL is opened with 'r' (read) or 'w' (write in order)")
    return File(path, mode, direct=direct, cache=cache, durable=durable)


def runtime() -> dict:
    """What the package runs on: ``description``, ``mock`` (an emulated GPU), ``vendor``
    (``"hip"``, ``"cuda"``, or ``None`` for the in-process mock GPU), ``shared_with_c`` (the
    driver is the C API's), ``devices``."""
    return _hipfile.runtime_info()


def stats() -> dict:
    """The driver's statistics (semantics §14) as a dict: ``level``, ``read``/``write`` totals
    (and per path ``p2p``, ``bounce``, ``host``; ``size_classes`` at level 2), ``gpus`` (level
    3) and ``counters``."""
    return _hipfile.stats()


def capabilities() -> List[dict]:
    """Every backend the platform knows: ``backend``, ``p2p``, ``available``, ``why_not``, and
    ``notes`` (how it works on this machine, as ``hipfile check`` prints them)."""
    return _hipfile.capabilities()


def driver_properties() -> dict:
    """``hipFileDriverGetProperties``, with this library's key names (upstream's are
    :func:`driver_get_properties`'s)."""
    return _hipfile.properties()


def parameter_names() -> List[Tuple[str, str]]:
    """Every parameter's name and kind (``size``, ``bool``, ``string``)."""
    return _hipfile.parameter_names()


def get_parameter(name: str) -> Union[int, bool, str]:
    """A parameter's value (the one in use while the driver is open)."""
    return _hipfile.get_parameter(name)


def set_parameter(name: str, value: Union[int, bool, str]) -> None:
    """Stages a parameter for the driver's next open (the driver must be closed)."""
    _hipfile.set_parameter(name, value)
