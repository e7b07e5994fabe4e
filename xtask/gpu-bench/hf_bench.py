"""transformers' from_pretrained beside hipfile.integrations.transformers.from_pretrained, in one
process, alternated (seconds and GB/s of the checkpoint's files; every timer stops after
torch.cuda.synchronize()):

    harness.py transformers DIR [--layers 10] [--rounds 3]

DIR is made if missing: a Llama model (hidden 4096, intermediate 14336, 32 heads, 8 KV heads,
vocabulary 32000, untied, LAYERS layers: 4.9 GB of bf16 at 10 layers) with random weights,
saved with save_pretrained. Each round loads it both ways with device_map="cuda" and
dtype bfloat16, warm (as the previous load left the page cache) and cold (dropped before, as
root); once, every parameter and buffer of the two models is compared bitwise.
"""

import os
import time
import warnings

from benchlib import counts, drop, emit, subcommand, turn


def register(sub):
    p = subcommand(sub, "transformers", hf, "transformers' from_pretrained beside hipfile's, warm and cold", __doc__)
    p.add_argument("dir")
    counts(p, layers=10, rounds=3)


def hf(a):
    warnings.simplefilter("ignore")
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    from hipfile.integrations.transformers import from_pretrained

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if not os.path.exists(os.path.join(a.dir, "config.json")):
        cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                          vocab_size=32000, num_hidden_layers=a.layers, tie_word_embeddings=False)
        with torch.device("cuda"):
            model = LlamaForCausalLM(cfg).to(torch.bfloat16)
        model.save_pretrained(a.dir)
        del model
        torch.cuda.empty_cache()
    size = sum(os.path.getsize(os.path.join(a.dir, f)) for f in os.listdir(a.dir) if f.endswith(".safetensors"))
    dtype_kw = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    kw = {"device_map": "cuda", dtype_kw: torch.bfloat16}
    ways = {
        "stock": lambda: AutoModelForCausalLM.from_pretrained(a.dir, **kw),
        "hipfile": lambda: from_pretrained(AutoModelForCausalLM, a.dir, **kw),
    }

    def timed(fn):
        torch.cuda.synchronize()
        start = time.perf_counter()
        model = fn()
        torch.cuda.synchronize()
        return model, time.perf_counter() - start

    emit({"transformers": transformers.__version__, "torch": torch.__version__, "bytes": size})
    checked = False
    for round_ in range(a.rounds):
        row = {"round": round_}
        order = turn(ways, round_)
        for temperature in ("cold", "warm"):
            for name in order:
                if temperature == "cold":
                    drop()
                model, seconds = timed(ways[name])
                row[f"{name}_{temperature}_s"] = round(seconds, 3)
                row[f"{name}_{temperature}_gbps"] = round(size / seconds / 1e9, 2)
                if not checked and name == "hipfile":
                    stock, _ = timed(ways["stock"])
                    x = dict(stock.named_parameters()) | dict(stock.named_buffers())
                    y = dict(model.named_parameters()) | dict(model.named_buffers())
                    row["bitwise_equal"] = set(x) == set(y) and all(torch.equal(x[k], y[k]) for k in x)
                    row["same_device"] = all(x[k].device == y[k].device for k in x)
                    checked = True
                    del stock
                del model
                torch.cuda.empty_cache()
            row[f"ratio_{temperature}"] = round(row[f"stock_{temperature}_s"] / row[f"hipfile_{temperature}_s"], 2)
        emit(row)

