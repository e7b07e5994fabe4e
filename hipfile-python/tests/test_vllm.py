"""``hipfile.integrations.vllm``: the ``hipfile`` load format against vLLM's model-loader
interface. vLLM itself is not installed here (it needs a GPU build); a stand-in package gives its
interface (``register_model_loader``, ``get_model_loader``, ``BaseModelLoader``, the
tensor-parallel queries) as vLLM's documentation states it, and a stand-in model whose
``load_weights`` fuses q/k/v the way vLLM's models do."""

import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hipfile.safetensors as hs  # noqa: E402

STAND_IN = {
    "vllm/__init__.py": "",
    "vllm/distributed/__init__.py": """
        class _Group:
            device_group = None
        def get_tensor_model_parallel_world_size():
            return 1
        def get_tp_group():
            return _Group()
    """,
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/model_loader/base_loader.py": """
        from abc import ABC, abstractmethod
        class BaseModelLoader(ABC):
            def __init__(self, load_config):
                self.load_config = load_config
            @abstractmethod
            def download_model(self, model_config): ...
            @abstractmethod
            def load_weights(self, model, model_config): ...
    """,
    "vllm/model_executor/model_loader/__init__.py": """
        from vllm.model_executor.model_loader.base_loader import BaseModelLoader
        _LOAD_FORMAT_TO_MODEL_LOADER = {}
        def register_model_loader(load_format):
            def wrapper(cls):
                if not issubclass(cls, BaseModelLoader):
                    raise ValueError("The model loader must be a subclass of `BaseModelLoader`.")
                _LOAD_FORMAT_TO_MODEL_LOADER[load_format] = cls
                return cls
            return wrapper
        def get_model_loader(load_config):
            return _LOAD_FORMAT_TO_MODEL_LOADER[load_config.load_format](load_config)
    """,
}


@pytest.fixture
def vllm(tmp_path, monkeypatch):
    for name, text in STAND_IN.items():
        path = tmp_path / "pkgs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    import hipfile.integrations.vllm as integration

    monkeypatch.setattr(integration, "_registered", None)
    return integration


class Model(torch.nn.Module):
    """Attention's q, k and v stored fused, as vLLM's QKVParallelLinear does."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Parameter(torch.zeros(12, 8))
        self.out = torch.nn.Parameter(torch.zeros(8, 4))

    def load_weights(self, weights):
        loaded = set()
        for name, tensor in weights:
            part = {"q": 0, "k": 1, "v": 2}.get(name)
            if part is not None:
                self.qkv.data[part * 4 : (part + 1) * 4] = tensor.to(self.qkv.device)
                loaded.add("qkv")
            else:
                getattr(self, name).data.copy_(tensor)
                loaded.add(name)
        return loaded


class Config:
    def __init__(self, model):
        self.model, self.revision, self.quantization = str(model), None, None


def test_the_load_format_loads_every_weight_through_the_models_own_loader(tmp_path, vllm):
    rng = np.random.default_rng(2)
    sd = {k: rng.standard_normal((4, 8), dtype=np.float32) for k in "qkv"}
    sd["out"] = rng.standard_normal((8, 4), dtype=np.float32)
    hs.save_model_dir(sd, tmp_path / "ckpt", max_shard_size=300)  # a file a tensor
    loader_class = vllm.register()
    assert vllm.register() is loader_class  # vLLM calls its plugins more than once
    from vllm.model_executor.model_loader import get_model_loader

    class LoadConfig:
        load_format = "hipfile"

    loader = get_model_loader(LoadConfig())
    assert type(loader) is loader_class
    model = Model()
    loader.download_model(Config(tmp_path / "ckpt"))
    loader.load_weights(model, Config(tmp_path / "ckpt"))
    assert np.array_equal(model.qkv.detach().numpy(), np.concatenate([sd["q"], sd["k"], sd["v"]]))
    assert np.array_equal(model.out.detach().numpy(), sd["out"])

    hs.save_model_dir({"q": sd["q"]}, tmp_path / "partial")
    with pytest.raises(ValueError, match="unloaded"):
        loader.load_weights(Model(), Config(tmp_path / "partial"))


def test_the_load_format_reads_weights_from_object_storage(tmp_path, vllm, s3_store):
    rng = np.random.default_rng(3)
    sd = {k: rng.standard_normal((4, 8), dtype=np.float32) for k in "qkv"}
    sd["out"] = rng.standard_normal((8, 4), dtype=np.float32)
    prefix = f"s3://hipfile/vllm-{id(sd)}/"
    hs.save_model_dir(sd, prefix, max_shard_size=300)
    loader_class = vllm.register()

    class LoadConfig:
        load_format = "hipfile"

    loader = loader_class(LoadConfig())
    config = Config(tmp_path)  # vLLM's object-storage models: configuration fetched here,
    config.model_weights = prefix  # the store's URL kept for the weights
    model = Model()
    loader.load_weights(model, config)
    assert np.array_equal(model.qkv.detach().numpy(), np.concatenate([sd["q"], sd["k"], sd["v"]]))
    assert np.array_equal(model.out.detach().numpy(), sd["out"])
