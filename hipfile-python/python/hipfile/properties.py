"""The driver's properties and the version (upstream's ``hipfile.properties``)."""

from __future__ import annotations

from hipfile import _hipfile


def driver_get_properties() -> dict:
    """``hipFileDriverGetProperties``, with upstream's keys."""
    p = _hipfile.properties()
    return {
        "nvfs_major_version": p["version"][0],
        "nvfs_minor_version": p["version"][1],
        "nvfs_poll_thresh_size": p["poll_threshold_kb"],
        "nvfs_max_direct_io_size": p["max_direct_io_kb"],
        "nvfs_driver_status_flags": p["status_flags"],
        "nvfs_driver_control_flags": p["control_flags"],
        "feature_flags": p["feature_flags"],
        "max_device_cache_size": p["max_device_cache_kb"],
        "per_buffer_cache_size": p["per_buffer_cache_kb"],
        "max_device_pinned_mem_size": p["max_pinned_kb"],
        "max_batch_io_count": p["max_batch_io_count"],
        "max_batch_io_timeout_msecs": p["max_batch_io_timeout_ms"],
    }


def get_version() -> tuple:
    """``hipFileGetVersion``: ``(major, minor, patch)``."""
    return tuple(_hipfile.version())
