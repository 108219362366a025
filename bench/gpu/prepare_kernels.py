"""Prepares the generated-kernel check for a lent GPU, on a machine without
one: for each model, compiles its training bundle with --target cuda, runs
every fused kernel's CPU launcher (kernels.so, through ctypes) on seeded
random inputs, and writes inputs, CPU outputs and an index under OUT/<model>/
beside the bundle's cubin. bench/gpu/check_kernels.py replays them on the GPU.

usage: prepare_kernels.py WEFTC OUT [model ...]   (needs numpy)
"""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def attention_reference(q, k, v, do, scale, causal):
    """weft.attention and weft.attention_grad in float64 (WeftOps.td)."""
    B, S, Hq, D = q.shape
    T, Hkv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    kk = np.repeat(k, g, axis=2)  # Query head h reads kv head h // g.
    vv = np.repeat(v, g, axis=2)
    scores = np.einsum("bshd,bthd->bhst", q, kk) * scale
    if causal:
        visible = np.arange(T)[None, :] <= np.arange(S)[:, None] + (T - S)
        scores = np.where(visible, scores, -np.inf)
    m = scores.max(-1, keepdims=True)
    e = np.exp(scores - m)
    lse = (m + np.log(e.sum(-1, keepdims=True)))[..., 0]
    p = np.exp(scores - lse[..., None])
    o = np.einsum("bhst,bthd->bshd", p, vv)
    dv = np.einsum("bhst,bshd->bthd", p, do)
    dp = np.einsum("bshd,bthd->bhst", do, vv)
    delta = np.einsum("bshd,bshd->bhs", do, o)
    ds = p * (dp - delta[..., None])
    dq = scale * np.einsum("bhst,bthd->bshd", ds, kk)
    dk = scale * np.einsum("bhst,bshd->bthd", ds, q)
    fold = lambda x: x.reshape(B, T, Hkv, g, -1).sum(3)  # Group heads sum.
    return o, lse, dq, fold(dk), fold(dv)


def prepare_attention(out):
    """Cases for runtime/gpu/kernels/attention.cu: the cubin (nvcc, here)
    and, per case, inputs and float64 reference outputs."""
    bundle = os.path.join(out, "attention")
    os.makedirs(bundle, exist_ok=True)
    nvcc = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
    subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-O3", "-o",
                    os.path.join(bundle, "attention.sm_90.cubin"),
                    os.path.join(ROOT, "runtime", "gpu", "kernels", "attention.cu")],
                   check=True)
    rng = np.random.default_rng(11)
    cases = []

    def bf16(x):
        """Bits of x rounded to bfloat16 (nearest even), as uint16."""
        bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return bits.astype(np.uint16)

    def widen(bits):
        return (bits.astype(np.uint32) << 16).view(np.float32)

    # Tiles are 64 query rows and 32 keys: 80 and 100 positions cross them.
    for name, B, S, T, Hq, Hkv, D, causal, dtype in [
            ("gqa-causal-d64", 2, 80, 80, 8, 4, 64, True, "f32"),
            ("mha-d128", 1, 100, 100, 4, 4, 128, False, "f32"),
            ("gqa-causal-d128-decode", 1, 40, 100, 8, 2, 128, True, "f32"),
            ("gqa-causal-d128-bf16", 2, 96, 96, 8, 2, 128, True, "bf16"),
            ("mha-d64-bf16", 1, 70, 70, 4, 4, 64, False, "bf16")]:
        inputs = [rng.standard_normal(shape).astype(np.float32) for shape in
                  [(B, S, Hq, D), (B, T, Hkv, D), (B, T, Hkv, D), (B, S, Hq, D)]]
        if dtype == "bf16":  # The kernels read bf16; the reference the same values.
            stored = [bf16(x) for x in inputs]
            inputs = [widen(x) for x in stored]
        else:
            stored = inputs
        scale = 1.0 / np.sqrt(D)
        results = attention_reference(*(x.astype(np.float64) for x in inputs),
                                      scale, causal)
        for label, a in zip(["q", "k", "v", "do"], stored):
            np.save(os.path.join(bundle, "%s.%s.npy" % (name, label)), a)
        for label, a in zip(["o", "lse", "dq", "dk", "dv"], results):
            np.save(os.path.join(bundle, "%s.%s.npy" % (name, label)),
                    np.asarray(a, np.float32))
        cases.append({"case": name, "B": B, "S": S, "T": T, "Hq": Hq,
                      "Hkv": Hkv, "D": D, "scale": float(scale),
                      "causal": causal, "dtype": dtype})
    json.dump(cases, open(os.path.join(bundle, "cases.json"), "w"), indent=1)
    print("attention: %d cases prepared in %s" % (len(cases), bundle))


def main():
    weftc, out = sys.argv[1], sys.argv[2]
    models = sys.argv[3:] or ["gpt2-tiny", "llama-tiny"]
    prepare_attention(out)
    for model in models:
        bundle = os.path.join(out, model)
        subprocess.run([weftc, "compile", "--config",
                        os.path.join(ROOT, "examples", "configs", model + ".json"),
                        "--batch", "2", "--seq", "16", "--target", "cuda",
                        "-o", bundle], check=True)
        manifest = json.load(open(os.path.join(bundle, "manifest.json")))
        library = ctypes.CDLL(os.path.join(bundle, "kernels.so"))
        step = next(p for p in manifest["programs"] if p["name"] == "step")
        buffers = step["buffers"]
        rng = np.random.default_rng(7)
        index = []
        for s in step["instructions"]:
            # Launches of one kernel are one kernel to check.
            if s["op"] != "launch" or s["kernel"] in {k["kernel"] for k in index}:
                continue
            name = s["kernel"]
            ids = s["operands"]
            ins = [rng.uniform(0.5, 1.5, size=buffers[v]["shape"]).astype(np.float32)
                   for v in ids[:s["inputs"]]]
            outs = [np.zeros(buffers[v]["shape"], np.float32) for v in ids[s["inputs"]:]]
            n = outs[0].size
            in_ptrs = (ctypes.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
            out_ptrs = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
            getattr(library, name)(in_ptrs, out_ptrs, ctypes.c_int64(n))
            for i, a in enumerate(ins):
                np.save(os.path.join(bundle, "%s.in%d.npy" % (name, i)), a)
            for i, a in enumerate(outs):
                np.save(os.path.join(bundle, "%s.out%d.npy" % (name, i)), a)
            # The launch shape the compiler gave it, which the GPU runtime uses.
            index.append({"kernel": name, "inputs": len(ins), "outputs": len(outs),
                          "n": n, "grid": s["grid"], "block": s["block"]})
        json.dump(index, open(os.path.join(bundle, "kernels.json"), "w"), indent=1)
        print("%s: %d kernels prepared in %s" % (model, len(index), bundle))


if __name__ == "__main__":
    main()
