"""Cross-checks Weft's GPT-2 checkpoints against an independent implementation.

Loads a checkpoint written by `weft-run --save` (Hugging Face GPT2LMHeadModel
names and layouts) with the official `safetensors` package into the JAX GPT-2
of jax_gpt.py, computes the mean loss on a token window, and prints it beside
the loss `weftc eval` reports for the same weights and window. Equal losses
mean the names and layouts are the ones Hugging Face models use.

usage: check_gpt2_layout.py CONFIG WEIGHTS TEXT SEQ WEFTC
"""
import re
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
from safetensors.numpy import load_file

import jax_gpt


def to_jax(tensors, n_layer):
    t = lambda name: jnp.asarray(tensors["transformer." + name])
    pair = lambda name: (t(name + ".weight"), t(name + ".bias"))
    params = {"wte": t("wte.weight"), "wpe": t("wpe.weight"),
              "ln_f": pair("ln_f"), "h": []}
    for i in range(n_layer):
        p = f"h.{i}."
        params["h"].append({
            "ln_1": pair(p + "ln_1"), "ln_2": pair(p + "ln_2"),
            "c_attn": pair(p + "attn.c_attn"), "c_proj": pair(p + "attn.c_proj"),
            "c_fc": pair(p + "mlp.c_fc"), "mlp_proj": pair(p + "mlp.c_proj"),
        })
    return params


def main():
    config_path, weights, text, seq, weftc = sys.argv[1:6]
    seq = int(seq)
    import json
    config = json.load(open(config_path))
    data = np.frombuffer(open(text, "rb").read()[: seq + 1], dtype=np.uint8).astype(np.int32)
    tokens, labels = data[None, :seq], data[None, 1:]
    params = to_jax(load_file(weights), config["n_layer"])
    jax_loss = float(jax_gpt.loss_fn(params, tokens, labels, config["n_head"]))
    out = subprocess.run([weftc, "eval", "--config", config_path, "--weights", weights,
                          "--tokens", text, "--tokenizer", "bytes", "--seq", str(seq)],
                         capture_output=True, text=True, check=True).stdout
    weft_loss = float(re.search(r"loss ([0-9.]+)", out).group(1))
    print(f"JAX GPT-2 loss {jax_loss:.6f}  weftc eval loss {weft_loss:.6f}  "
          f"difference {abs(jax_loss - weft_loss):.2e}")


if __name__ == "__main__":
    main()
