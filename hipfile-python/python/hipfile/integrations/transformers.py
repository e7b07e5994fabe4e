"""Hugging Face ``transformers`` models with their safetensors weights read by hipfile-rs::

    from transformers import AutoModelForCausalLM
    from hipfile.integrations.transformers import from_pretrained

    model = from_pretrained(AutoModelForCausalLM, "Llama-3-8B/", device_map="cuda")

gives the model ``AutoModelForCausalLM.from_pretrained("Llama-3-8B/", device_map="cuda")``
gives (the same class, configuration, generation configuration and every parameter bitwise
equal), with the checkpoint's tensors read by :func:`hipfile.safetensors.load_model_dir`
straight into the device's memory and handed to ``from_pretrained`` as its ``state_dict``: the
model's parameters are those tensors (or casts of them, where ``dtype`` asks for another type).
Nothing is patched: other calls to ``from_pretrained`` keep the stock loader.

The weights go to one device: ``device_map`` ``None`` (host memory), a device (``"cuda"``,
``"cuda:1"``, an index, a ``torch.device``), ``{"": device}``, or ``"auto"`` on a machine with
one GPU. Maps that spread a model over several devices or offload it are refused (use the stock
loader for them). ``path`` is a local directory, or a Hub model id resolved to its local snapshot
with ``huggingface_hub.snapshot_download``.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from hipfile.integrations import local_checkpoint, weights_location

__all__ = ["from_pretrained"]


def _device(device_map) -> str:
    import torch

    if isinstance(device_map, dict):
        if len(set(map(str, device_map.values()))) != 1:
            raise ValueError("hipfile.integrations.transformers loads onto one device: a device_map over several "
                             "devices or with offloading needs the stock loader")
        device_map = next(iter(device_map.values()))
    if device_map is None:
        return "cpu"
    if device_map in ("auto", "balanced", "balanced_low_0", "sequential"):
        if torch.cuda.device_count() > 1:
            raise ValueError(f"device_map={device_map!r} spreads the model over this machine's "
                             f"{torch.cuda.device_count()} GPUs: give one device, or use the stock loader")
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if isinstance(device_map, int):
        return f"cuda:{device_map}"
    device = torch.device(device_map)
    if device.type == "cuda" and device.index is None:
        return f"cuda:{torch.cuda.current_device()}"
    return str(device)


def from_pretrained(model_class, path, *model_args, device_map=None, cache: Optional[str] = None, **kwargs) -> Any:
    """``model_class.from_pretrained(path, *model_args, device_map=device_map, **kwargs)`` with
    the safetensors weights read by hipfile-rs (see the module's text). ``model_class``: an
    ``AutoModel*`` class or a model class. ``cache``: the page-cache policy of the read
    (``hipfile.open``'s)."""
    from transformers import AutoConfig, GenerationConfig

    from hipfile.safetensors import load_model_dir

    directory = local_checkpoint(path, kwargs.get("revision"))
    config = kwargs.pop("config", None) or AutoConfig.from_pretrained(
        directory, trust_remote_code=kwargs.get("trust_remote_code", False)
    )
    mapping = getattr(model_class, "_model_mapping", None)
    concrete = mapping[type(config)] if mapping is not None else model_class
    state_dict = load_model_dir(weights_location(path, directory), device=_device(device_map), cache=cache)
    # transformers takes a state dict only without a name to load from: the directory's
    # configuration is passed instead, and what else the name gives is set afterwards.
    model = concrete.from_pretrained(None, *model_args, config=config, state_dict=state_dict,
                                     device_map=device_map, **kwargs)
    del state_dict
    model.config._name_or_path = str(path)
    if hasattr(model, "name_or_path"):
        model.name_or_path = str(path)
    if os.path.exists(os.path.join(directory, "generation_config.json")) and model.can_generate():
        model.generation_config = GenerationConfig.from_pretrained(directory)
    return model
