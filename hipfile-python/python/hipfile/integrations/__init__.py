"""hipfile-rs under other libraries' loaders, each opted into explicitly (nothing is patched on
import): :mod:`hipfile.integrations.transformers`, :mod:`hipfile.integrations.vllm`."""

import os
from typing import Optional


def local_checkpoint(model, revision: Optional[str] = None) -> str:
    """A checkpoint's local directory: ``model`` itself, or the local snapshot of the Hub model
    id ``model`` (its JSON and safetensors files, through ``huggingface_hub.snapshot_download``)."""
    if os.path.isdir(model):
        return os.fspath(model)
    from huggingface_hub import snapshot_download

    return snapshot_download(repo_id=str(model), revision=revision, allow_patterns=["*.json", "*.safetensors"])
