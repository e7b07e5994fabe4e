"""Objects in object storage and on HTTP servers, by URL (docs/remote.md): ``s3://bucket/key``,
``gs://``, ``az://``, ``http(s)://host/path`` wherever the package takes a path.

A URL is read one of two ways:

- through the node cache, where one is configured (``HIPFILE_REMOTE_CACHE=DIR``, or
  ``cache_dir=`` on the call): the object is fetched once into the node's disk (by ranges, in
  parallel; several processes asking at once fetch it once), and read from there like any local
  file, at the speed of the page cache when it fits in memory; a changed object is fetched
  again, never served stale;
- straight from the store otherwise: each read asks for its ranges in parallel, into host or
  device memory (through pinned staging buffers), with no full host copy and no temporary file.

Credentials and endpoints come from where every client of the store finds them (for S3:
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``,
``AWS_ENDPOINT_URL``, ``AWS_PROFILE``; anonymous where there are none). Errors are ``OSError``
naming the URL (``ENOENT``: no such object or bucket; ``EACCES``: denied; ``ESTALE``: the
object changed while it was read; ``EIO``: the store failed), never a credential.
"""

from __future__ import annotations

import atexit
import io
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, List, Optional, Tuple

from hipfile import _hipfile
from hipfile._api import _Opened

_log = logging.getLogger("hipfile.remote")

# A fill returns once its copy is whole (in the page cache); a thread then syncs it and writes
# its record. At exit, those threads finish first, or the copies would not count next time.
atexit.register(_hipfile.remote_cache_flush)

__all__ = ["is_url", "RemoteFile", "RemoteWriteFile", "localize", "cache_entries", "listdir"]


def is_url(path: Any) -> bool:
    """Whether ``path`` names a remote object (``s3://``, ``gs://``, ``az://``, ``http(s)://``)."""
    return isinstance(path, str) and _hipfile.is_url(path)


def localize(url: str, cache_dir=None, limit: Optional[int] = None) -> Optional[str]:
    """The node cache's local copy of ``url`` (fetched now where the cache lacks its current
    version), or ``None`` where no cache is configured (``cache_dir`` or
    ``HIPFILE_REMOTE_CACHE``). A cache that cannot hold it (a full or read-only disk, an object
    over the limit) is logged and ``None`` returned: the caller reads the store instead."""
    directory = os.fspath(cache_dir) if cache_dir is not None else None
    found = _hipfile.remote_cached(url, directory, limit)
    if found is None:
        return None
    path, how = found
    if path is None:
        _log.warning("%s: the node cache was not used, the store serves it (%s)", url, how)
        return None
    _log.debug("%s: served from the node cache (%s, %s)", url, path, how)
    return os.fspath(path)


class RemoteFuture:
    """A read on the package's threads: ``get()`` the bytes read (or the error)."""

    def __init__(self, future) -> None:
        self._future = future

    def get(self, timeout: Optional[float] = None) -> int:
        """The bytes read; raises the read's error."""
        return self._future.result(timeout)

    result = get

    def done(self) -> bool:
        """Whether the read has finished."""
        return self._future.done()


_pool: Optional[ThreadPoolExecutor] = None


def _threads() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(8, thread_name_prefix="hipfile-remote")
    return _pool


class RemoteFile(_Opened):
    """An object opened for reading by :func:`hipfile.open` (straight from the store): the
    reads of :class:`hipfile.File` (``read``, ``pread``, ``read_batch``) into PyTorch, CuPy and
    NumPy buffers, each request's ranges fetched in parallel. Writing is refused."""

    _kind = "RemoteFile"

    def __init__(self, url: str) -> None:
        self._native = _hipfile.remote_open(url)
        self._name = url

    def _shown(self) -> str:
        return self._native.url() if self._native else self._name

    def size(self) -> int:
        """The object's size in bytes (its version at the open)."""
        return self._check().size()

    def version(self) -> dict:
        """The store's version of the object: ``size``, ``etag``, ``last_modified``, ``version``."""
        return dict(self._check().version())

    def close(self) -> None:
        """Lets go of the object."""
        self._native = None

    def read(self, buf, size: Optional[int] = None, file_offset: int = 0, buf_offset: int = 0) -> int:
        """Reads ``size`` bytes (default: as many as ``buf`` holds past ``buf_offset``) at
        ``file_offset`` into ``buf``; the bytes read (fewer at the object's end)."""
        return self._check().read_many([(buf, size, file_offset, buf_offset)])[0]

    def read_batch(self, entries: Iterable[Tuple], timeout: Optional[float] = None) -> List[int]:
        """Reads ``(buf, size, file_offset, buf_offset)`` entries at once; the bytes each read."""
        reqs = [(tuple(e) + (None, 0, 0))[:4] for e in entries]
        return self._check().read_many(reqs)

    def pread(self, buf, size: Optional[int] = None, file_offset: int = 0, buf_offset: int = 0) -> RemoteFuture:
        """As :meth:`read`, on the package's threads: a future (``get()``) at once."""
        obj = self._check()
        return RemoteFuture(_threads().submit(lambda: obj.read_many([(buf, size, file_offset, buf_offset)])[0]))

    def _move_all(self, write: bool, spans: Iterable[Tuple]) -> None:
        if write:
            raise io.UnsupportedOperation("a RemoteFile is read-only")
        spans = list(spans)
        self._check_moved(False, spans, self.read_batch(spans))

    def write(self, *args, **kwargs) -> int:
        raise io.UnsupportedOperation("a RemoteFile is read-only: open the URL with mode 'w' to write an object")

    def safetensors_header(self):
        return self._check().safetensors_header()


class RemoteWriteFile(_Opened):
    """An object being written by :func:`hipfile.open` with mode ``'w'``: a multipart upload fed
    in order from host or device memory, which appears in the store only when :meth:`close`
    completes it (after an exception in its ``with`` block, or :meth:`abort`, nothing appears)."""

    _kind = "RemoteWriteFile"

    def __init__(self, url: str) -> None:
        self._native = _hipfile.remote_create(url)
        self._name = url

    def write(self, buf, size: Optional[int] = None, file_offset: Optional[int] = None, buf_offset: int = 0) -> int:
        """Appends ``size`` bytes of ``buf`` (default: all past ``buf_offset``); ``file_offset``
        (default: the end so far) must be where the object ends so far: objects are written in
        order."""
        upload = self._check()
        at = upload.position() if file_offset is None else file_offset
        return upload.write((buf, size, at, buf_offset))

    def _move_all(self, write: bool, spans: Iterable[Tuple]) -> None:
        if not write:
            raise io.UnsupportedOperation("a RemoteWriteFile is write-only")
        for buf, size, file_offset, buf_offset in sorted(spans, key=lambda s: s[2]):
            gap = file_offset - self._native.position()
            if gap > 0:  # what a file would hold there: zeros (alignment between records)
                self.write(bytes(gap))
            self.write(buf, size, file_offset, buf_offset)

    def close(self) -> None:
        """Completes the upload: the object appears, whole."""
        if self._native is not None:
            upload, self._native = self._native, None
            upload.finish()

    def abort(self) -> None:
        """Abandons the upload: nothing appears."""
        if self._native is not None:
            upload, self._native = self._native, None
            upload.abort()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self) -> None:
        try:
            self.abort()  # never completed by collection: only close() makes it appear
        except Exception:
            pass


def cache_entries(cache_dir=None) -> List[Tuple[str, int, str]]:
    """The node cache's entries (``cache_dir``, or ``HIPFILE_REMOTE_CACHE``'s): ``(url, size,
    path)``, least recently used first (this process's fills counted once on the disk)."""
    _hipfile.remote_cache_flush()
    return [(u, s, os.fspath(p)) for u, s, p in _hipfile.remote_cache_entries(None if cache_dir is None else os.fspath(cache_dir))]


def listdir(url: str) -> List[Tuple[str, int]]:
    """The objects under the prefix ``url``: ``(url, size)``, sorted."""
    return list(_hipfile.remote_list(url))
