"""How the package opens the driver."""

from __future__ import annotations

import os

from hipfile import _hipfile


def open_driver() -> None:
    """Opens the driver. A first open from Python allows host memory as a buffer (NumPy arrays,
    ``bytearray``, ``mmap``), unless ``HIPFILE_ALLOW_SYSTEM_MEMORY`` says otherwise: Python's
    buffers are mostly host memory, and the library moves their bytes without a staging copy
    (docs/python.md)."""
    if _hipfile.use_count() == 0 and "HIPFILE_ALLOW_SYSTEM_MEMORY" not in os.environ:
        try:
            _hipfile.set_parameter("AllowSystemMemory", True)
        except Exception:  # another thread opened it meanwhile: its settings stand
            pass
    _hipfile.driver_open()
