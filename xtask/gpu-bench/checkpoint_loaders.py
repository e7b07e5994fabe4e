"""The safetensors loaders `load` and `cache` compare, each made once (imports, settings) as
load(path) -> (dict of tensors, cleanup or None), with the timing and checking of one load:

  safetensors          safetensors.torch.load_file(path, device="cuda:0")
  kvikio               kvikio.CuFile(path, "r").read(buf) of the whole file into one torch uint8
                       buffer, num_threads 16 (its default is reported), then the tensors as views
                       of it from the header (parsed here with json; parsing and views are timed)
  kvikio-default       the same with KvikIO's default num_threads
  fastsafetensors      SafeTensorsFileLoader(SingleGroup(), cuda:0, nogds=True),
                       copy_files_to_device, get_tensor for every name (or fastsafe_open where
                       that is what the package has)
  fastsafetensors-gds  the same with nogds=False (cuFile, compatibility mode there)
  hipfile              hipfile.safetensors.load_file(path, device="cuda:0"), as a lone call runs:
                       it opens hipfile's driver (staging memory, threads) and closes it again
  hipfile-driver-open  the same with one use of the driver held from before the timer starts
  hipfile-copy         load_file with copy=True (each tensor its own memory)
"""

import gc
import inspect
import os
import random
import time

from benchlib import DEVICE, err, parse_header, torch_dtype


def kvikio_threads(kvikio, n=None):
    """KvikIO's num_threads (set to n first, where n is given), across its API versions."""
    d = kvikio.defaults
    if n is not None:
        try:
            d.set("num_threads", n)
        except (AttributeError, TypeError):
            d.num_threads_reset(n)
    try:
        return d.get("num_threads")
    except (AttributeError, TypeError):
        return d.num_threads()


def kvikio_setting(kvikio, key):
    try:
        return kvikio.defaults.get(key)
    except Exception:
        try:
            return getattr(kvikio.defaults, key)()
        except Exception as exc:
            return err(exc)


def make_kvikio(threads, info):
    import kvikio
    import kvikio.defaults
    import torch

    settings = info.setdefault("kvikio settings", {})
    settings.setdefault("num_threads default", kvikio_threads(kvikio))
    settings["compat_mode"] = str(kvikio_setting(kvikio, "compat_mode"))
    default = settings["num_threads default"]
    if threads:
        settings["num_threads used by 'kvikio'"] = threads

    def load(path):
        start, entries, _ = parse_header(path)
        size = os.path.getsize(path)
        buf = torch.empty(size, dtype=torch.uint8, device=DEVICE)
        f = kvikio.CuFile(path, "r")
        try:
            n = f.read(buf)
        finally:
            f.close()
        if n != size:
            raise OSError(f"KvikIO read {n} of {size} bytes")
        out = {}
        for name, dtype, shape, b, e in entries:
            out[name] = buf[start + b : start + e].view(torch_dtype(dtype)).reshape(shape)
        return out, None

    # Outside the timer: a change of num_threads makes KvikIO a new thread pool.
    load.prepare = lambda: kvikio_threads(kvikio, threads or default)
    return load


def make_fastsafetensors(nogds, info, names):
    import torch

    api = {}
    try:
        from fastsafetensors import SafeTensorsFileLoader, SingleGroup

        sig = inspect.signature(SafeTensorsFileLoader)
        api["SafeTensorsFileLoader"] = str(sig)
        ann = sig.parameters["device"].annotation if "device" in sig.parameters else None
        device = DEVICE if ann in (str, "str") else torch.device(DEVICE)
        kwargs = {"nogds": nogds} if "nogds" in sig.parameters else {}
    except Exception as exc:
        SafeTensorsFileLoader = None
        api["SafeTensorsFileLoader"] = err(exc)
    info.setdefault("fastsafetensors api", api)

    def unwrap(t):
        if isinstance(t, torch.Tensor):
            return t
        for attr in ("get_raw", "real_tensor", "tensor"):
            v = getattr(t, attr, None)
            if v is not None:
                v = v() if callable(v) else v
                if isinstance(v, torch.Tensor):
                    return v
        raise TypeError(f"fastsafetensors gave a {type(t).__name__}, not a torch tensor")

    if SafeTensorsFileLoader is not None:
        try:
            group = SingleGroup()
        except TypeError:
            group = SingleGroup

        def load(path):
            loader = SafeTensorsFileLoader(group, device, **kwargs)
            loader.add_filenames({0: [path]})
            fb = loader.copy_files_to_device()
            out = {name: unwrap(fb.get_tensor(name)) for name in names}

            def cleanup():
                fb.close()
                loader.close()

            return out, cleanup

        return load

    from fastsafetensors import fastsafe_open

    def load_open(path):
        f = fastsafe_open(filenames=[path], framework="pt", device=DEVICE, nogds=nogds)
        out = {name: unwrap(f.get_tensor(name)) for name in names}
        return out, getattr(f, "close", None)

    api["fastsafe_open"] = str(inspect.signature(fastsafe_open))
    return load_open


def make_loader(name, info, names):
    """load(path) -> (tensors, cleanup or None) for one loader; `names` are the file's."""
    if name == "safetensors":
        from safetensors.torch import load_file

        return lambda path: (load_file(path, device=DEVICE), None)
    if name in ("hipfile", "hipfile-copy", "hipfile-driver-open"):
        from hipfile.safetensors import load_file

        copy = name == "hipfile-copy"

        def load(path):
            return load_file(path, device=DEVICE, copy=copy), None

        if name == "hipfile-driver-open":
            held = DriverHeld()
            load.prepare, load.finish = held.open, held.close
        return load
    if name == "kvikio":
        return make_kvikio(16, info)
    if name == "kvikio-default":
        return make_kvikio(None, info)
    if name == "fastsafetensors":
        return make_fastsafetensors(True, info, names)
    if name == "fastsafetensors-gds":
        return make_fastsafetensors(False, info, names)
    raise ValueError(f"unknown loader {name!r}")


class DriverHeld:
    """One use of hipfile's driver held from before a timer starts until after the run: a load
    then finds the driver open (its staging memory and threads made), as in a process that
    keeps hipfile open, where a lone load_file opens and closes the driver itself."""

    def __init__(self):
        self.driver = None

    def open(self):
        import hipfile

        if self.driver is None:
            self.driver = hipfile.Driver()
            self.driver.open()

    def close(self):
        if self.driver is not None:
            self.driver, d = None, self.driver
            d.close()


def release(result):
    tensors, cleanup = result
    tensors.clear()
    del tensors
    gc.collect()
    if cleanup is not None:
        cleanup()
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def timed_load(load, path):
    import torch

    prepare = getattr(load, "prepare", None)
    if prepare is not None:
        prepare()
    torch.cuda.synchronize()
    t = time.perf_counter()
    result = load(path)
    torch.cuda.synchronize()
    return time.perf_counter() - t, result


def verify(tensors, path, entries):
    """Every name, dtype and shape; the bytes of the first, the last and 5 random tensors against
    safetensors' own (read into host memory). Returns True or what differs."""
    import torch
    from safetensors import safe_open

    names = [e[0] for e in entries]
    if sorted(tensors) != sorted(names):
        return f"names differ: {len(tensors)} tensors against {len(names)}"
    pick = [names[0], names[-1]] + random.Random(7).sample(names, min(5, len(names)))
    with safe_open(path, framework="pt", device="cpu") as f:
        for name in names:
            t = tensors[name]
            want = f.get_slice(name)
            if list(t.shape) != list(want.get_shape()) or t.device != torch.device(DEVICE):
                return f"{name}: shape {list(t.shape)} on {t.device}, want {want.get_shape()} on {DEVICE}"
            if t.dtype != torch_dtype(want.get_dtype()):
                return f"{name}: dtype {t.dtype}, want {want.get_dtype()}"
        for name in pick:
            t, want = tensors[name], f.get_tensor(name)
            if t.dtype != want.dtype:
                return f"{name}: dtype {t.dtype}, want {want.dtype}"
            a = t.detach().contiguous().reshape(-1).view(torch.uint8).cpu()
            b = want.contiguous().reshape(-1).view(torch.uint8)
            if not torch.equal(a, b):
                return f"{name}: bytes differ"
    return True
