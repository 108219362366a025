"""The MoE benchmark's peer: Weft's Mixtral training step in JAX (jit, CPU).

Same architecture as Weft's mixtral family (RMSNorm, rotate-half RoPE, GQA
causal attention, softmax -> top-k -> renormalised routing, SwiGLU experts),
dropless like Weft's default: the pairs are sorted by expert and the experts
run as jax.lax.ragged_dot, JAX's grouped matmul, over exactly their rows.
Same AdamW with global-norm clipping, fp32. Prints the median step time over
--steps steps after --warmup steps as JSON.

usage: jax_moe.py --config mixtral-tiny.json --batch 8 --seq 128 --steps 5
"""
import argparse
import json
import math

import jax
import jax.numpy as jnp

from jax_gpt import make_adamw, time_steps


def init(c, key):
    d, v, f, e = (c["hidden_size"], c["vocab_size"], c["intermediate_size"],
                  c["num_local_experts"])
    hq, hkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = d // hq
    keys = iter(jax.random.split(key, 16 * c["num_hidden_layers"] + 4))
    normal = lambda shape: 0.02 * jax.random.normal(next(keys), shape, jnp.float32)
    params = {"embed": normal((v, d)), "norm": jnp.ones(d), "head": normal((v, d)),
              "layers": []}
    for _ in range(c["num_hidden_layers"]):
        params["layers"].append({
            "in_norm": jnp.ones(d), "post_norm": jnp.ones(d),
            "q": normal((hq * hd, d)), "k": normal((hkv * hd, d)),
            "v": normal((hkv * hd, d)), "o": normal((d, hq * hd)),
            "gate": normal((e, d)), "w1": normal((e, f, d)),
            "w3": normal((e, f, d)), "w2": normal((e, d, f)),
        })
    return params


def rms_norm(x, w, eps):
    return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, theta):
    s, hd = x.shape[1], x.shape[-1]
    freq = theta ** (-jnp.arange(0, hd, 2) / hd)
    angle = jnp.arange(s)[:, None] * freq[None, :]
    cos = jnp.concatenate([jnp.cos(angle)] * 2, -1)[None, :, None, :]
    sin = jnp.concatenate([jnp.sin(angle)] * 2, -1)[None, :, None, :]
    half = hd // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


def moe(x, layer, k):
    t, d = x.shape
    e = layer["gate"].shape[0]
    p = jax.nn.softmax(x @ layer["gate"].T, axis=-1)
    w, experts = jax.lax.top_k(p, k)
    w = w / w.sum(-1, keepdims=True)
    flat = experts.reshape(-1)
    order = jnp.argsort(flat, stable=True)
    token = order // k
    sizes = jnp.bincount(flat, length=e).astype(jnp.int32)
    rows = x[token]
    w1t, w3t = layer["w1"].transpose(0, 2, 1), layer["w3"].transpose(0, 2, 1)
    h = jax.nn.silu(jax.lax.ragged_dot(rows, w1t, sizes)) * \
        jax.lax.ragged_dot(rows, w3t, sizes)
    out = jax.lax.ragged_dot(h, layer["w2"].transpose(0, 2, 1), sizes)
    return jnp.zeros((t, d)).at[token].add(out * w.reshape(-1)[order][:, None])


def loss_fn(params, tokens, labels, c):
    b, s = tokens.shape
    hq, hkv = c["num_attention_heads"], c["num_key_value_heads"]
    eps, theta = c.get("rms_norm_eps", 1e-6), c.get("rope_theta", 1e4)
    x = params["embed"][tokens]
    mask = jnp.tril(jnp.ones((s, s), bool))
    for layer in params["layers"]:
        a = rms_norm(x, layer["in_norm"], eps)
        q = rope((a @ layer["q"].T).reshape(b, s, hq, -1), theta)
        kk = rope((a @ layer["k"].T).reshape(b, s, hkv, -1), theta)
        vv = (a @ layer["v"].T).reshape(b, s, hkv, -1)
        kk, vv = (jnp.repeat(t, hq // hkv, axis=2) for t in (kk, vv))
        scores = jnp.einsum("bshd,bthd->bhst", q, kk) / math.sqrt(q.shape[-1])
        scores = jnp.where(mask, scores, -jnp.inf)
        o = jnp.einsum("bhst,bthd->bshd", jax.nn.softmax(scores, -1), vv)
        x = x + o.reshape(b, s, -1) @ layer["o"].T
        m = rms_norm(x, layer["post_norm"], eps)
        x = x + moe(m.reshape(b * s, -1), layer, c["num_experts_per_tok"]).reshape(x.shape)
    logits = rms_norm(x, params["norm"], eps) @ params["head"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, labels[..., None], axis=-1).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    config = json.load(open(args.config))
    key = jax.random.PRNGKey(0)
    params = init(config, key)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    m, v = zeros, zeros
    step = make_adamw(lambda p, x, y: loss_fn(p, x, y, config))
    data = jax.random.randint(key, (args.batch, args.seq + 1), 0, config["vocab_size"])
    tokens, labels = data[:, :-1], data[:, 1:]
    median, loss = time_steps(step, params, m, v, tokens, labels,
                              args.warmup, args.steps)
    print(json.dumps({"median_step_s": median,
                      "tokens_per_s": args.batch * args.seq / median,
                      "loss": loss, "jax": jax.__version__}))


if __name__ == "__main__":
    main()
