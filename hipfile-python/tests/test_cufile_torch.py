"""In a PyTorch process, one cuFile: `python -m hipfile.cufile use` makes the NVIDIA cuFile
that `import torch` loads by its path hipfile-rs's, and `restore` puts NVIDIA's back (run in
the PyTorch environment of `cargo xtask ci`, which it leaves as it found it)."""

import os
import subprocess
import sys
import sysconfig

import pytest

from hipfile import cufile

pytest.importorskip("torch")

ROOTS = [sysconfig.get_paths()["purelib"]]


def loaded_after_import_torch():
    script = "import torch; from hipfile import cufile; print(cufile.loaded())"
    return eval(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)


def test_import_torch_loads_hipfile_rs_cufile_after_use():
    if not cufile.nvidia_libraries(ROOTS):
        pytest.skip("this PyTorch brings no nvidia-cufile")
    try:
        cufile.ours()
    except FileNotFoundError:
        if os.environ.get("CI"):
            raise
        pytest.skip("this build of the package has no libcufile.so.0 (docs/python.md)")
    before = loaded_after_import_torch()
    assert len(before) == 1 and "nvidia" in before[0]  # NVIDIA's, by its path
    try:
        assert cufile.use(ROOTS)
        assert loaded_after_import_torch() == [str(cufile.ours())]
    finally:
        cufile.restore(ROOTS)
    assert loaded_after_import_torch() == before
    assert all(p["serves"] == "nvidia" and p["kept"] is None for p in cufile.status(ROOTS))
