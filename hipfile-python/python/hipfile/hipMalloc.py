"""Device memory for upstream's examples and tests (upstream's ``hipfile.hipMalloc``), from the
runtime the package uses: HIP, CUDA's runtime (the way HIP runs on NVIDIA), or the mock GPU."""

from __future__ import annotations

import ctypes

from hipfile import _hipfile


def hipMalloc(size_bytes: int) -> ctypes.c_void_p:
    """``size_bytes`` of device memory, as a ``ctypes.c_void_p``; free it with :func:`hipFree`."""
    try:
        return ctypes.c_void_p(_hipfile.device_alloc(size_bytes))
    except Exception as exc:
        raise RuntimeError(f"hipMalloc failed ({exc})") from exc


def hipFree(ptr: ctypes.c_void_p) -> None:
    """Frees memory of :func:`hipMalloc`."""
    try:
        _hipfile.device_free(ptr.value if isinstance(ptr, ctypes.c_void_p) else int(ptr))
    except Exception as exc:
        raise RuntimeError(f"hipFree failed ({exc})") from exc
