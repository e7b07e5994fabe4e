"""How the package opens the driver."""

from __future__ import annotations

import atexit
import os
import threading

from hipfile import _hipfile

_held = False
_lock = threading.Lock()


def open_driver(hold: bool = False) -> None:
    """Opens the driver. A first open from Python allows host memory as a buffer (NumPy arrays,
    ``bytearray``, ``mmap``), unless ``HIPFILE_ALLOW_SYSTEM_MEMORY`` says otherwise: Python's
    buffers are mostly host memory, and the library moves their bytes without a staging copy
    (docs/python.md). ``hold``: the package keeps a use of its own as well (see
    :func:`release_driver`)."""
    if _hipfile.use_count() == 0 and "HIPFILE_ALLOW_SYSTEM_MEMORY" not in os.environ:
        try:
            _hipfile.set_parameter("AllowSystemMemory", True)
        except Exception:  # another thread opened it meanwhile: its settings stand
            pass
    _hipfile.driver_open()
    if hold:
        global _held
        with _lock:
            if not _held:
                _hipfile.driver_open()
                _held = True


def release_driver() -> None:
    """Lets go of the package's own use of the driver; it closes once nothing else uses it.

    The first :func:`hipfile.open`, :func:`hipfile.register` or ``hipfile.safetensors`` call
    takes that use and keeps it, so that later calls find the driver open: opening it allocates
    pinned staging memory and starts its threads (about 0.25 s on an H200 machine), which a
    loop of short calls would otherwise pay each time. It is let go at exit; call this to let
    go sooner (to change a parameter, say). Upstream's API (``Driver``, ``FileHandle``) takes
    no such use."""
    global _held
    with _lock:
        if _held:
            _held = False
            _hipfile.driver_close()


atexit.register(release_driver)
