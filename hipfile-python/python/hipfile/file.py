"""Registered files and streams (upstream's ``hipfile.file``)."""

from __future__ import annotations

import os
import stat
from typing import Union

from hipfile import _hipfile
from hipfile._held import Registration, read_only
from hipfile.enums import FileHandleType, OpError


class FileHandle(Registration):
    """A file opened with ``os.open(path, flags, mode)`` and registered with
    ``hipFileHandleRegister`` by :meth:`open` or for the duration of a ``with`` block."""

    DEFAULT_MODE = stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        flags: int,
        mode: int = DEFAULT_MODE,
        handle_type: FileHandleType = FileHandleType.OPAQUE_FD,
    ) -> None:
        self._fd = None
        self._handle = None
        self._handle_type = None
        self._flags = flags
        self._mode = mode
        self._path = path
        self.handle_type = handle_type

    flags = read_only("_flags", "The ``os.open`` flags.")
    mode = read_only("_mode", "The ``os.open`` mode.")
    path = read_only("_path", "The file's path.")
    handle = read_only("_handle", "The registered handle (an int), or ``None`` while closed.")

    @property
    def handle_type(self) -> FileHandleType:
        """How the file is named to the library (only ``OPAQUE_FD`` is supported)."""
        return self._handle_type

    @handle_type.setter
    def handle_type(self, _handle_type: FileHandleType) -> None:
        if self._handle is not None:
            raise RuntimeError("Cannot modify handle_type while FileHandle is open")
        if _handle_type not in list(FileHandleType):
            raise ValueError(f"'{_handle_type}' is not a member of enum FileHandleType")
        if _handle_type == FileHandleType.OPAQUE_WIN32:
            raise NotImplementedError("FileHandle does not currently support Win32 Handles")
        self._handle_type = FileHandleType(_handle_type)

    def open(self) -> None:
        """Opens the file and registers it."""
        if self._handle is not None:
            raise RuntimeError("The FileHandle is already open.")
        self._fd = os.open(self._path, self._flags, self._mode)
        try:
            if self._handle_type != FileHandleType.OPAQUE_FD:
                raise _hipfile_invalid_value()
            self._handle = _hipfile.handle_register(self._fd)
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    def close(self) -> None:
        """Deregisters and closes the file (safe to call more than once)."""
        if self._handle is not None:
            _hipfile.handle_deregister(self._handle)
            self._handle = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    _begin, _end = open, close

    def _check_open(self) -> int:
        if self._handle is None:
            raise RuntimeError("The FileHandle is not open.")
        return self._handle

    def read(self, buffer, size: int, file_offset: int, buffer_offset: int) -> int:
        """``hipFileRead`` into ``buffer.ptr``: the bytes read (fewer at end of file)."""
        handle = self._check_open()
        return _hipfile.transfer(False, handle, (buffer, size, file_offset, buffer_offset), True)

    def write(self, buffer, size: int, file_offset: int, buffer_offset: int) -> int:
        """``hipFileWrite`` from ``buffer.ptr``: the bytes written."""
        handle = self._check_open()
        return _hipfile.transfer(True, handle, (buffer, size, file_offset, buffer_offset), True)

    def read_async(self, buffer, size: int, file_offset: int, buffer_offset: int, stream: int):
        """``hipFileReadAsync`` on ``stream``: the operation, whose ``bytes_done`` holds the
        result once the stream has run it."""
        handle = self._check_open()
        op = _hipfile.stream_submit(False, handle, (buffer, size, file_offset, buffer_offset), int(stream), True)
        return AsyncIOHandle(op, size, file_offset, buffer_offset)

    def write_async(self, buffer, size: int, file_offset: int, buffer_offset: int, stream: int):
        """``hipFileWriteAsync`` on ``stream``; see :meth:`read_async`."""
        handle = self._check_open()
        op = _hipfile.stream_submit(True, handle, (buffer, size, file_offset, buffer_offset), int(stream), True)
        return AsyncIOHandle(op, size, file_offset, buffer_offset)


def _hipfile_invalid_value():
    from hipfile._errors import HipFileException

    return HipFileException(OpError.INVALID_VALUE, 0)


class AsyncIOHandle:
    """A stream-ordered operation's values and result (``bytes_done``: 0 until the stream has run
    it, then the bytes moved or a negative error)."""

    def __init__(self, op, size: int, file_offset: int, buffer_offset: int) -> None:
        self._op = op
        self._size = size
        self._file_offset = file_offset
        self._buffer_offset = buffer_offset

    @property
    def bytes_done(self) -> int:
        """The result: 0 before the stream has run the operation."""
        result = self._op.result()
        return 0 if result is None else result

    @property
    def done(self) -> bool:
        """Whether the stream has run the operation."""
        return self._op.done()

    size = read_only("_size", "The operation's size.")
    file_offset = read_only("_file_offset", "Its file offset.")
    buffer_offset = read_only("_buffer_offset", "Its buffer offset.")


class Stream:
    """A GPU stream (its handle as an int) registered with ``hipFileStreamRegister`` by
    :meth:`register` or for the duration of a ``with`` block."""

    def __init__(self, stream: int, flags: int = 0) -> None:
        self._stream = int(stream)
        self._flags = int(flags)
        self._registered = False

    handle = read_only("_stream", "The stream's handle.")
    registered = read_only("_registered", "Whether it is registered.")

    def register(self) -> None:
        """``hipFileStreamRegister`` (once)."""
        if self._registered:
            return
        _hipfile.stream_register(self._stream, self._flags)
        self._registered = True

    def deregister(self) -> None:
        """``hipFileStreamDeregister``, if registered."""
        if not self._registered:
            return
        _hipfile.stream_deregister(self._stream)
        self._registered = False

    def __enter__(self) -> "Stream":
        self.register()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.deregister()


def supports_async() -> bool:
    """Whether stream-ordered I/O is available (it is, with any runtime)."""
    return True
