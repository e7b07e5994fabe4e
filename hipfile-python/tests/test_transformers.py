"""``hipfile.integrations.transformers.from_pretrained``: the model ``from_pretrained`` gives, with
the weights read by hipfile-rs (small Llama models saved with ``save_pretrained``, host memory)."""

import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hipfile.integrations.transformers import _device, from_pretrained  # noqa: E402


def llama(tmp_path, tie: bool, shard: str):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=1000, tie_word_embeddings=tie)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(tmp_path, max_shard_size=shard)
    return tmp_path


@pytest.mark.parametrize("tie,shard", [(True, "5GB"), (False, "100KB")])
def test_the_model_is_the_stock_loaders_bit_for_bit(tmp_path, tie, shard):
    from transformers import AutoModelForCausalLM

    path = llama(tmp_path, tie, shard)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = AutoModelForCausalLM.from_pretrained(path)
        ours = from_pretrained(AutoModelForCausalLM, path)
    assert type(ours) is type(stock) and ours.dtype == stock.dtype
    assert ours.config.to_dict() == stock.config.to_dict()
    assert ours.generation_config.to_dict() == stock.generation_config.to_dict()
    a, b = dict(stock.named_parameters()), dict(ours.named_parameters())
    a.update(stock.named_buffers())
    b.update(ours.named_buffers())
    assert set(a) == set(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and torch.equal(a[name], b[name]), name
    assert (ours.lm_head.weight is ours.model.embed_tokens.weight) == tie
    tokens = torch.tensor([[1, 5, 9, 42]])
    assert torch.equal(stock(tokens).logits, ours(tokens).logits)


def test_one_device_or_a_clear_refusal():
    assert _device(None) == "cpu"
    assert _device({"": "cpu"}) == "cpu"
    assert _device(3) == "cuda:3"
    with pytest.raises(ValueError, match="one device"):
        _device({"model.layers.0": 0, "lm_head": "cpu"})


def test_a_model_in_object_storage_loads_as_the_stock_loader_loads_it_locally(tmp_path, s3_store):
    from transformers import AutoModelForCausalLM

    path = llama(tmp_path / "local", False, "100KB")
    prefix = f"s3://hipfile/llama-{__import__('os').getpid()}/"
    for f in sorted(path.iterdir()):
        s3_store.put("hipfile", prefix[len("s3://hipfile/"):] + f.name, f.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = AutoModelForCausalLM.from_pretrained(path)
        ours = from_pretrained(AutoModelForCausalLM, prefix)
    mine, theirs = ours.config.to_dict(), stock.config.to_dict()
    mine.pop("_name_or_path"), theirs.pop("_name_or_path")
    assert mine == theirs  # the configuration fetched from the store
    assert ours.generation_config.to_dict() == stock.generation_config.to_dict()
    for name, p in stock.named_parameters():
        assert torch.equal(p, dict(ours.named_parameters())[name]), name
