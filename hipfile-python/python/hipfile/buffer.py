"""Registered buffers (upstream's ``hipfile.buffer``)."""

from __future__ import annotations

from ctypes import c_void_p

from hipfile import _hipfile
from hipfile._held import Registration, read_only


class Buffer(Registration):
    """Device memory at ``buffer_ptr`` (an int) of ``length`` bytes, registered with
    ``hipFileBufRegister`` by :meth:`register` or for the duration of a ``with`` block."""

    @classmethod
    def from_ctypes_void_p(cls, ctypes_void_p: c_void_p, length: int, flags: int) -> "Buffer":
        """The buffer at a ``ctypes.c_void_p`` (what ``hipfile.hipMalloc.hipMalloc`` returns)."""
        if ctypes_void_p.value is None:
            raise ValueError("Cannot pass in a null pointer.")
        return cls(ctypes_void_p.value, length, flags)

    def __init__(self, buffer_ptr: int, length: int, flags: int) -> None:
        self._buffer_ptr = buffer_ptr
        self._flags = flags
        self._length = length
        self._registered = False

    ptr = read_only("_buffer_ptr", "The buffer's address.")

    def register(self) -> None:
        """``hipFileBufRegister`` (opens the driver if it is closed)."""
        _hipfile.buf_register(self._buffer_ptr, self._length, self._flags)
        self._registered = True

    def deregister(self) -> None:
        """``hipFileBufDeregister``, if registered."""
        if self._registered:
            _hipfile.buf_deregister(self._buffer_ptr)
            self._registered = False

    _begin, _end = register, deregister
