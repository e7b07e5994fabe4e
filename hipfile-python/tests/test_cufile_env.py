"""`python -m hipfile.cufile`: NVIDIA's cuFile in an environment pointed at the package's own
libcufile.so.0 and back, and the cuFile libraries a process has loaded."""

import ctypes
import os
import shutil
import subprocess
import sys

import pytest

from hipfile import cufile

# The C libraries are put in the package by `cargo xtask` (wheel, ci); a package built by pip
# from the source tree alone has none (docs/python.md). In CI they must be there.
try:
    cufile.ours()
except FileNotFoundError as e:
    if os.environ.get("CI"):
        raise
    pytest.skip(f"this build of the package has no libcufile.so.0 ({e})", allow_module_level=True)


class CUfileError(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


def fake_environment(root):
    """A site-packages holding an NVIDIA cuFile wheel's two files (not ELF: nothing loads them)."""
    lib = root / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    for name in ("libcufile.so.0", "libcufile_rdma.so.1"):
        (lib / name).write_bytes(b"NVIDIA's " + name.encode())
    return lib


def test_use_points_nvidias_cufile_at_ours_and_restore_puts_it_back(tmp_path):
    lib = fake_environment(tmp_path)
    roots = [str(tmp_path)]
    assert [p["serves"] for p in cufile.status(roots)] == ["nvidia"]

    assert cufile.use(roots) == [lib / "libcufile.so.0"]
    assert (lib / "libcufile.so.0").resolve() == cufile.ours()
    assert (lib / "libcufile.so.0.nvidia").read_bytes() == b"NVIDIA's libcufile.so.0"
    assert (lib / "libcufile_rdma.so.1").read_bytes() == b"NVIDIA's libcufile_rdma.so.1"
    assert cufile.status(roots) == [
        {"path": str(lib / "libcufile.so.0"), "serves": "hipfile-rs", "kept": str(lib / "libcufile.so.0.nvidia")}
    ]
    assert cufile.use(roots) == []  # already ours

    # Loaded by that path (as PyTorch loads NVIDIA's), it is ours, and it finds its
    # libhipfile.so.0 through the link: a parameter hipFile keeps is served.
    so = ctypes.CDLL(str(lib / "libcufile.so.0"))
    version = ctypes.c_int(0)
    so.cuFileGetVersion.restype = CUfileError
    assert so.cuFileGetVersion(ctypes.byref(version)).err == 0 and version.value == 1200
    so.cuFileGetParameterSizeT.restype = CUfileError
    value = ctypes.c_size_t(0)
    assert so.cuFileGetParameterSizeT(9, ctypes.byref(value)).err == 0  # PROPERTIES_IO_BATCHSIZE
    assert value.value > 0

    assert cufile.restore(roots) == [lib / "libcufile.so.0"]
    assert not (lib / "libcufile.so.0").is_symlink()
    assert (lib / "libcufile.so.0").read_bytes() == b"NVIDIA's libcufile.so.0"
    assert not (lib / "libcufile.so.0.nvidia").exists()
    assert cufile.restore(roots) == []


def test_use_refuses_where_a_kept_file_would_be_overwritten(tmp_path):
    lib = fake_environment(tmp_path)
    (lib / "libcufile.so.0.nvidia").write_bytes(b"an older copy")
    with pytest.raises(FileExistsError, match="restore"):
        cufile.use([str(tmp_path)])
    assert (lib / "libcufile.so.0").read_bytes() == b"NVIDIA's libcufile.so.0"
    assert (lib / "libcufile.so.0.nvidia").read_bytes() == b"an older copy"


def test_the_command_line(tmp_path):
    fake_environment(tmp_path)
    run = lambda action: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "hipfile.cufile", action, "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert run("status").endswith(": nvidia\n")
    assert "(NVIDIA's kept as libcufile.so.0.nvidia)" in run("use")
    assert run("status").endswith(": hipfile-rs\n")
    assert "NVIDIA's again" in run("restore")
    # Into a pipe its reader closed at once (`... | head -0`): quiet, status 0.
    closed = subprocess.Popen([sys.executable, "-m", "hipfile.cufile", "status", "--root", str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    closed.stdout.close()
    assert (closed.wait(timeout=60), closed.stderr.read()) == (0, b"")


def test_loaded_lists_each_cufile_a_process_maps(tmp_path):
    copy = tmp_path / "libcufile.so.0"
    shutil.copy(cufile.ours(), copy)
    script = (
        "import ctypes, sys; from hipfile import cufile; "
        f"ctypes.CDLL({str(cufile.ours())!r}); ctypes.CDLL({str(copy)!r}); print(cufile.loaded())"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert sorted(eval(out)) == sorted([str(cufile.ours()), str(copy)])
    assert os.path.basename(cufile.ours()) == "libcufile.so.0"


def test_cufile_calls_share_the_packages_driver():
    """After `import hipfile`, the package's libcufile.so.0 forwards to the extension (which
    carries libhipfile.so.0's SONAME), not to a second copy: a parameter staged through cuFile
    reads back through hipFile's C API."""
    script = f"""
import ctypes, hipfile
class E(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]
cu = ctypes.CDLL({str(cufile.ours())!r})
cu.cuFileSetParameterSizeT.restype = E
assert cu.cuFileSetParameterSizeT(9, ctypes.c_size_t(77)).err == 0
hip = ctypes.CDLL("libhipfile.so.0")
hip.hipFileGetParameterSizeT.restype = E
value = ctypes.c_size_t(0)
assert hip.hipFileGetParameterSizeT(9, ctypes.byref(value)).err == 0
print(value.value)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "77"


def test_the_unversioned_name_loads_ours():
    """cufile-python (LMCache's GDS tier) loads `libcufile.so` by name: the package ships it."""
    script = (
        "import ctypes\n"
        "class E(ctypes.Structure):\n    _fields_ = [('err', ctypes.c_int), ('cu_err', ctypes.c_int)]\n"
        "so = ctypes.CDLL('libcufile.so'); so.cuFileGetVersion.restype = E\n"
        "v = ctypes.c_int(0); assert so.cuFileGetVersion(ctypes.byref(v)).err == 0; print(v.value)\n"
    )
    env = dict(os.environ, LD_LIBRARY_PATH=str(cufile.ours().parent))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1200"
