"""hipfile-rs under other libraries' loaders, each opted into explicitly (nothing is patched on
import): :mod:`hipfile.integrations.transformers`, :mod:`hipfile.integrations.vllm`."""

import os

from hipfile import _remote
from typing import Optional


def local_checkpoint(model, revision: Optional[str] = None) -> str:
    """A checkpoint's local directory: ``model`` itself, or the local snapshot of the Hub model
    id ``model`` (its JSON and safetensors files, through ``huggingface_hub.snapshot_download``),
    or for a store's prefix (``s3://bucket/model/``) a local directory of its small files (its
    configuration and tokenizer; the weights are read from the store: :func:`weights_location`)."""
    if isinstance(model, str) and _remote.is_url(model):
        return _remote_configs(model)
    if os.path.isdir(model):
        return os.fspath(model)
    from huggingface_hub import snapshot_download

    return snapshot_download(repo_id=str(model), revision=revision, allow_patterns=["*.json", "*.safetensors"])


def weights_location(model, directory: str) -> str:
    """Where a checkpoint's weights are read from: the store's prefix ``model`` is a URL, else
    its local ``directory``."""
    return model if isinstance(model, str) and _remote.is_url(model) else directory


#: Objects of a prefix copied to the local directory: all but the weights, up to this size each.
_SMALL = 64 << 20


def _remote_configs(url: str) -> str:
    """The small objects directly under the prefix ``url`` (configuration, tokenizer) in a local
    directory, fetched once per process."""
    import tempfile

    prefix = url.rstrip("/") + "/"
    if prefix in _fetched:
        return _fetched[prefix]
    directory = tempfile.mkdtemp(prefix="hipfile-configs-")
    for object_url, size in _remote.listdir(prefix):
        name = object_url[len(prefix):]
        if "/" in name or name.endswith(".safetensors") or size > _SMALL:
            continue
        with _remote.RemoteFile(object_url) as src:
            body = bytearray(size)
            src.read(body)
        with open(os.path.join(directory, name), "wb") as out:
            out.write(body)
    _fetched[prefix] = directory
    return directory


_fetched = {}
