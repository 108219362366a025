"""The benchmark's peer: the same GPT-2 training step in JAX (jit, CPU).

Same architecture as Weft's gpt2 family (pre-LN blocks, causal attention,
tanh GELU, tied embeddings), same AdamW with global-norm clipping, fp32.
Prints the median step time over --steps steps after --warmup steps as JSON.

usage: jax_gpt.py --config gpt-bench.json --batch 8 --seq 256 --steps 5
"""
import argparse
import json
import math
import os
import statistics
import time

import jax
import jax.numpy as jnp


def init(config, key):
    d, v, p = config["n_embd"], config["vocab_size"], config["n_positions"]
    f = config.get("n_inner") or 4 * d
    keys = iter(jax.random.split(key, 8 * config["n_layer"] + 4))
    normal = lambda shape, std=0.02: std * jax.random.normal(next(keys), shape, jnp.float32)
    params = {"wte": normal((v, d)), "wpe": normal((p, d)),
              "ln_f": (jnp.ones(d), jnp.zeros(d)), "h": []}
    for _ in range(config["n_layer"]):
        params["h"].append({
            "ln_1": (jnp.ones(d), jnp.zeros(d)), "ln_2": (jnp.ones(d), jnp.zeros(d)),
            "c_attn": (normal((d, 3 * d)), jnp.zeros(3 * d)),
            "c_proj": (normal((d, d)), jnp.zeros(d)),
            "c_fc": (normal((d, f)), jnp.zeros(f)),
            "mlp_proj": (normal((f, d)), jnp.zeros(d)),
        })
    return params


def layer_norm(x, wb, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * wb[0] + wb[1]


def gelu(x):
    return 0.5 * x * (1 + jnp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def loss_fn(params, tokens, labels, n_head):
    b, s = tokens.shape
    x = params["wte"][tokens] + params["wpe"][:s]
    mask = jnp.tril(jnp.ones((s, s), bool))
    for blk in params["h"]:
        a = layer_norm(x, blk["ln_1"])
        qkv = a @ blk["c_attn"][0] + blk["c_attn"][1]
        q, k, v = jnp.split(qkv, 3, axis=-1)
        heads = lambda t: t.reshape(b, s, n_head, -1).transpose(0, 2, 1, 3)
        q, k, v = heads(q), heads(k), heads(v)
        scores = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(q.shape[-1])
        scores = jnp.where(mask, scores, -jnp.inf)
        o = jax.nn.softmax(scores, axis=-1) @ v
        o = o.transpose(0, 2, 1, 3).reshape(b, s, -1)
        x = x + o @ blk["c_proj"][0] + blk["c_proj"][1]
        m = layer_norm(x, blk["ln_2"])
        m = gelu(m @ blk["c_fc"][0] + blk["c_fc"][1])
        x = x + m @ blk["mlp_proj"][0] + blk["mlp_proj"][1]
    x = layer_norm(x, params["ln_f"])
    logits = x @ params["wte"].T
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.take_along_axis(logp, labels[..., None], axis=-1).mean()


def make_adamw(loss, lr=1e-3, b1=0.9, b2=0.95, eps=1e-8, wd=0.1, clip=1.0):
    """A jitted AdamW step (global-norm clipping, decay on matrices) of
    `loss(params, tokens, labels)`; jax_moe.py shares it."""
    @jax.jit
    def step(params, m, v, t, tokens, labels):
        value, grads = jax.value_and_grad(loss)(params, tokens, labels)
        leaves = jax.tree_util.tree_leaves(grads)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in leaves))
        scale = jnp.minimum(1.0, clip / (norm + 1e-6))
        grads = jax.tree_util.tree_map(lambda g: g * scale, grads)
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        def update(p, m, v):
            decay = wd if p.ndim >= 2 else 0.0
            return p * (1 - lr * decay) - lr * (m / bc1) / (jnp.sqrt(v / bc2) + eps)
        params = jax.tree_util.tree_map(update, params, m, v)
        return params, m, v, value, norm
    return step


def time_steps(step, params, m, v, tokens, labels, warmup, steps, save=None):
    """Runs `step` warmup + steps times; the median time of the last
    `steps` and the final loss. With `save(t, state)` (an asynchronous
    checkpoint after every step), also the median time save blocked the
    loop, which the step time includes."""
    times, stalls = [], []
    for t in range(1, warmup + steps + 1):
        start = time.perf_counter()
        params, m, v, loss, norm = step(params, m, v, t, tokens, labels)
        loss.block_until_ready()
        if save:
            saving = time.perf_counter()
            save(t, {"params": params, "m": m, "v": v})
            stalls.append(time.perf_counter() - saving)
        if t > warmup:
            times.append(time.perf_counter() - start)
    stall = statistics.median(stalls[warmup:]) if save else None
    return statistics.median(times), float(loss), stall


def make_step(n_head, compute=jnp.float32):
    """AdamW on f32 parameters; the forward and backward compute in
    `compute` (bf16: the parameters cast on the way in, as mixed precision
    with f32 masters does; the loss in f32)."""
    cast = lambda p: jax.tree_util.tree_map(lambda t: t.astype(compute), p)
    return make_adamw(lambda p, x, y: loss_fn(cast(p), x, y, n_head))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32",
                    help="compute type (bf16: f32 master weights)")
    ap.add_argument("--checkpoint-dir",
                    help="save params and AdamW state after every step with "
                         "Orbax's asynchronous CheckpointManager (keeping 2)")
    ap.add_argument("--dp", type=int, default=1,
                    help="data-parallel devices (CPU: set XLA_FLAGS="
                         "--xla_force_host_platform_device_count=N)")
    args = ap.parse_args()
    config = json.load(open(args.config))
    key = jax.random.PRNGKey(0)
    params = init(config, key)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    m, v = zeros, zeros
    step = make_step(config["n_head"],
                     jnp.bfloat16 if args.dtype == "bf16" else jnp.float32)
    data = jax.random.randint(key, (args.batch, args.seq + 1), 0, config["vocab_size"])
    tokens, labels = data[:, :-1], data[:, 1:]
    if args.dp > 1:
        # Batch split over dp devices, everything else replicated: jit (GSPMD)
        # inserts the gradient all-reduce, as Weft's dp plan does.
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        mesh = Mesh(jax.devices()[:args.dp], ("dp",))
        split = NamedSharding(mesh, PartitionSpec("dp"))
        whole = NamedSharding(mesh, PartitionSpec())
        tokens, labels = jax.device_put(tokens, split), jax.device_put(labels, split)
        params, m, v = (jax.device_put(x, whole) for x in (params, m, v))
    save, manager, extra = None, None, {}
    if args.checkpoint_dir:
        import orbax.checkpoint as ocp
        manager = ocp.CheckpointManager(
            os.path.abspath(args.checkpoint_dir),
            options=ocp.CheckpointManagerOptions(
                max_to_keep=2, enable_async_checkpointing=True))
        save = lambda t, state: manager.save(
            t, args=ocp.args.StandardSave(state))
        extra["orbax"] = ocp.__version__
    median, loss, stall = time_steps(step, params, m, v, tokens, labels,
                                     args.warmup, args.steps, save)
    if manager:
        manager.wait_until_finished()
        extra["median_stall_s"] = stall
    print(json.dumps({"median_step_s": median,
                      "tokens_per_s": args.batch * args.seq / median,
                      "loss": loss, "jax": jax.__version__,
                      "devices": str(jax.devices()), **extra}))


if __name__ == "__main__":
    main()
