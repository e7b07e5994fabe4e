"""One cuFile per process, hipfile-rs's: NVIDIA's ``libcufile.so.0`` in this environment
pointed at the one this package ships, and back (docs/cufile.md, "In a PyTorch process").

PyTorch's CUDA builds load NVIDIA's ``libcufile.so.0`` from the ``nvidia-cufile`` wheel by its
path when ``torch`` is imported, so a preloaded ``libcufile.so.0`` does not replace it: the
process holds two, and clients that look the library up by path (InstantTensor reads
``/proc/self/maps``) reach NVIDIA's. ``use`` puts a symbolic link to this package's library in
the place of each NVIDIA ``libcufile.so.0``/``libcufile.so`` found on ``sys.path``, keeping
NVIDIA's file beside it under ``NAME.nvidia``; ``restore`` puts NVIDIA's back. Nothing else is
changed::

    python -m hipfile.cufile status     # what this environment's processes reach
    python -m hipfile.cufile use        # NVIDIA's cuFile -> hipfile-rs's
    python -m hipfile.cufile restore    # NVIDIA's cuFile back
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Iterable, List, Optional

__all__ = ["ours", "nvidia_libraries", "loaded", "status", "use", "restore", "main"]

# What NVIDIA's wheels name the library, under site-packages: ``nvidia/cu13/lib`` (CUDA 13's
# ``nvidia-cufile``) and ``nvidia/cufile/lib`` (CUDA 12's ``nvidia-cufile-cu12``).
_PATTERNS = ("nvidia/*/lib/libcufile.so.0", "nvidia/*/lib/libcufile.so")
_KEPT = ".nvidia"
_NAMES = ("libcufile.so", "libhipfile_cufile.so")
# A string only hipfile-rs's libcufile holds: a hook it looks up in libhipfile.so.0.
_MARK = b"hipfile_rs_cufile_stats_level"


def ours() -> Path:
    """This package's ``libcufile.so.0`` (which forwards to its ``lib/libhipfile.so.0``)."""
    path = Path(__file__).resolve().parent / "lib" / "cufile" / "libcufile.so.0"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: this build of hipfile has no libcufile.so.0 (build the wheel with `cargo xtask wheel`)")
    return path


def _is_ours(path: Path) -> bool:
    try:
        return _MARK in path.read_bytes()
    except OSError:
        return False


def nvidia_libraries(roots: Optional[Iterable[str]] = None) -> List[Path]:
    """Each place NVIDIA's wheels put ``libcufile.so.0`` or ``libcufile.so`` under ``roots``
    (default ``sys.path``), whether it holds NVIDIA's file or, after :func:`use`, a link to
    this package's."""
    found: List[Path] = []
    for root in sys.path if roots is None else roots:
        base = Path(root or ".")
        if not base.is_dir():
            continue
        for pattern in _PATTERNS:
            for path in sorted(base.glob(pattern)):
                if path not in found and (path.is_symlink() or path.is_file()):
                    found.append(path)
    return found


def loaded(pid: str = "self") -> List[str]:
    """The cuFile libraries mapped into process ``pid`` (this one by default), each file once."""
    files: List[str] = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            # NVIDIA's names, and hipfile-rs's as cargo builds it (where a link points there).
            if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith(_NAMES):
                name = fields[5].strip()
                if name not in files:
                    files.append(name)
    return files


def status(roots: Optional[Iterable[str]] = None) -> List[dict]:
    """For each NVIDIA library place: ``{"path", "serves": "hipfile-rs" | "nvidia", "kept"}``
    (``kept``: where NVIDIA's file waits for :func:`restore`, or ``None``)."""
    report = []
    for path in nvidia_libraries(roots):
        kept = path.with_name(path.name + _KEPT)
        report.append(
            {
                "path": str(path),
                "serves": "hipfile-rs" if _is_ours(path) else "nvidia",
                "kept": str(kept) if kept.exists() else None,
            }
        )
    return report


def use(roots: Optional[Iterable[str]] = None) -> List[Path]:
    """Points each NVIDIA ``libcufile.so.0``/``libcufile.so`` under ``roots`` at this package's
    library, keeping NVIDIA's file as ``NAME.nvidia``; the paths changed. Already pointed ones
    are left; a failure leaves that place as it was and raises."""
    target = ours()
    changed = []
    for path in nvidia_libraries(roots):
        if _is_ours(path):
            continue
        kept = path.with_name(path.name + _KEPT)
        if kept.exists():
            raise FileExistsError(f"{kept} exists: run `python -m hipfile.cufile restore` first")
        os.rename(path, kept)
        try:
            tmp = path.with_name(path.name + ".hipfile-tmp")
            if tmp.is_symlink() or tmp.exists():
                tmp.unlink()
            tmp.symlink_to(target)
            os.replace(tmp, path)
        except BaseException:
            os.rename(kept, path)
            raise
        changed.append(path)
    return changed


def restore(roots: Optional[Iterable[str]] = None) -> List[Path]:
    """Puts NVIDIA's files kept by :func:`use` back in their places; the paths restored."""
    restored = []
    for path in nvidia_libraries(roots):
        kept = path.with_name(path.name + _KEPT)
        if kept.is_file() and path.is_symlink():
            os.replace(kept, path)
            restored.append(path)
    return restored


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hipfile.cufile",
        description="Point this environment's NVIDIA cuFile (nvidia-cufile wheels) at hipfile-rs's, or back.",
    )
    parser.add_argument("action", choices=["status", "use", "restore"])
    parser.add_argument(
        "--root", action="append", help="where to look for nvidia/*/lib (default: sys.path; may be repeated)"
    )
    args = parser.parse_args(argv)
    try:
        if args.action == "use":
            for path in use(args.root):
                print(f"{path} -> {ours()} (NVIDIA's kept as {path.name}{_KEPT})")
        elif args.action == "restore":
            for path in restore(args.root):
                print(f"{path}: NVIDIA's again")
    except BrokenPipeError:
        raise
    except OSError as e:
        print(f"python -m hipfile.cufile {args.action}: {e}", file=sys.stderr)
        return 1
    places = status(args.root)
    for place in places:
        print(f"{place['path']}: {place['serves']}")
    if not places:
        print("no NVIDIA cuFile in this environment: cuFile programs load what the dynamic loader finds")
    return 0


if __name__ == "__main__":
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # A reader that left (`... | head -1`): quiet, status 0, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
