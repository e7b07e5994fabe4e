"""vLLM's model weights read by hipfile-rs: the load format ``hipfile``.

``register()`` adds the load format to vLLM's model-loader registry
(``vllm.model_executor.model_loader.register_model_loader``); the package declares it as a vLLM
plugin (entry point ``vllm.general_plugins``), so that every vLLM process, workers included,
has it once the package is installed, and ``vllm serve MODEL --load-format hipfile`` (or
``LLM(model, load_format="hipfile")``) uses it. Nothing else changes: other load formats keep
vLLM's loaders.

The loader reads the checkpoint's safetensors files one at a time with
:func:`hipfile.safetensors.load_file` into the memory of the model's parameters (the rank's GPU)
and hands each file's tensors to the
model's own ``load_weights`` (which fuses and slices them for tensor parallelism, as it does
for vLLM's loader), then frees them: the memory beyond the model is one file's tensors. With
tensor parallelism, the tensor-parallel group reads each file once across its ranks
(``process_group=``, read-once loading) and broadcasts it, instead of every rank reading every
file. A store's prefix (``s3://bucket/model/``, as ``model`` or as vLLM's ``model_weights``) is
read from the store (docs/remote.md).
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Tuple

from hipfile._remote import is_url
from hipfile.integrations import local_checkpoint

__all__ = ["register", "LOAD_FORMAT"]

LOAD_FORMAT = "hipfile"


def _files(directory: str) -> List[str]:
    from hipfile.safetensors import _checkpoint

    files, _ = _checkpoint(directory)  # a local directory, or a store's prefix
    if not files:
        raise ValueError(f"{directory}: no safetensors files (the hipfile load format reads safetensors only)")
    return files


def _tp_group():
    """The tensor-parallel group's NCCL/RCCL group when there is more than one rank, else None."""
    try:
        from vllm.distributed import get_tensor_model_parallel_world_size, get_tp_group
    except ImportError:  # pragma: no cover - a vLLM without them
        return None
    return get_tp_group().device_group if get_tensor_model_parallel_world_size() > 1 else None


def weights(directory: str, device, group=None, cache: Optional[str] = None) -> Iterable[Tuple[str, Any]]:
    """``(name, tensor)`` of every tensor of the checkpoint ``directory``, one file in memory at
    a time (read once across ``group`` where one is given)."""
    from hipfile.safetensors import load_file

    for path in _files(directory):
        tensors = load_file(path, device=device, cache=cache, process_group=group)
        yield from tensors.items()
        del tensors


def _local(model_config) -> str:
    """Where the weights are: vLLM keeps a store's URL in ``model_weights`` once it has fetched
    the configuration of ``model`` from there (its object-storage models), else ``model``."""
    url = getattr(model_config, "model_weights", None) or model_config.model
    if isinstance(url, str) and is_url(url):
        return url
    return local_checkpoint(model_config.model, getattr(model_config, "revision", None))


def _loader_class(base: type) -> type:
    """The loader as a subclass of vLLM's ``BaseModelLoader`` (``base``)."""

    class HipfileModelLoader(base):
        """vLLM's ``load_format="hipfile"``: safetensors weights through hipfile-rs."""

        def download_model(self, model_config) -> None:
            _local(model_config)

        def load_weights(self, model, model_config) -> None:
            device = next(model.parameters()).device  # where vLLM built the model: the rank's GPU
            names = {name for name, _ in model.named_parameters()}
            loaded = model.load_weights(weights(_local(model_config), device, _tp_group()))
            missing = names - set(loaded or ())
            if loaded is not None and missing and getattr(model_config, "quantization", None) is None:
                raise ValueError(f"the checkpoint left weights unloaded: {sorted(missing)[:8]}")

    return HipfileModelLoader


_registered: Optional[type] = None


def register() -> type:
    """Adds the ``hipfile`` load format to vLLM (the plugin's entry point; vLLM calls it in each
    of its processes, once or more: it registers once); the loader class."""
    global _registered
    if _registered is None:
        from vllm.model_executor.model_loader import register_model_loader
        from vllm.model_executor.model_loader.base_loader import BaseModelLoader

        _registered = register_model_loader(LOAD_FORMAT)(_loader_class(BaseModelLoader))
    return _registered
