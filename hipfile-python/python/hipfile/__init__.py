"""hipfile-rs for Python: move data between files and GPU memory.

Two APIs over one library:

- upstream hipFile's Python module, unchanged: :class:`Driver`, :class:`FileHandle`,
  :class:`Buffer`, :class:`Stream`, :func:`supports_async`, :class:`FileHandleType`,
  :class:`OpError`, :class:`HipFileException`, :func:`driver_get_properties`,
  :func:`get_version` and ``hipfile.hipMalloc``;
- a Pythonic one: :func:`open` gives a :class:`File` whose ``read``/``write`` take whatever
  buffer you have (CuPy, PyTorch, anything with ``__cuda_array_interface__`` or DLPack,
  NumPy, ``bytearray``), ``pread``/``pwrite`` futures, batches and stream-ordered calls;
  :class:`DeviceBuffer` for device memory of the runtime in use (the mock GPU where there is
  none); :func:`stats`, :func:`capabilities`, :func:`driver_properties` and the parameters.

Example::

    import hipfile, cupy
    a = cupy.empty(1 << 20, dtype=cupy.uint8)
    with hipfile.open("data.bin") as f:
        f.read(a)                      # into GPU memory
        fut = f.pread(a, file_offset=0) # on the library's threads
        fut.get()
"""

from hipfile import _api, _hipfile
from hipfile._api import *  # noqa: F403 - the Pythonic API, every name of _api.__all__
from hipfile.buffer import Buffer
from hipfile.driver import Driver
from hipfile.enums import FileHandleType, OpError
from hipfile._errors import HipFileException
from hipfile._open import release_driver
from hipfile.file import FileHandle, Stream, supports_async
from hipfile.properties import driver_get_properties, get_version
from hipfile._remote import RemoteFile, RemoteWriteFile, is_url

__all__ = [
    "__version__",
    "Driver",
    "FileHandle",
    "Stream",
    "supports_async",
    "Buffer",
    "HipFileException",
    "FileHandleType",
    "OpError",
    "driver_get_properties",
    "get_version",
    *_api.__all__,
    "release_driver",
    "RemoteFile",
    "RemoteWriteFile",
    "is_url",
]

__version__ = ".".join(str(part) for part in _hipfile.version())
