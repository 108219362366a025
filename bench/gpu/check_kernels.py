"""Replays the prepared kernel checks (bench/gpu/prepare_kernels.py) on the
GPU: loads each model's cubin with CuPy, launches every kernel as the GPU
runtime does (with the grid and block its sched.launch instruction gives)
and compares with the CPU outputs.

usage: check_kernels.py DIR [model ...]   (needs cupy and numpy)
Prints a line per model and exits non-zero on any mismatch.
"""
import json
import os
import sys

import cupy as cp
import numpy as np


def main():
    root = sys.argv[1]
    models = sys.argv[2:] or ["gpt2-tiny", "llama-tiny"]
    arch = "sm_" + cp.cuda.Device().compute_capability
    failed = False
    for model in models:
        bundle = os.path.join(root, model)
        module = cp.RawModule(path=os.path.join(bundle, "kernels.%s.cubin" % arch))
        worst, count = 0.0, 0
        for k in json.load(open(os.path.join(bundle, "kernels.json"))):
            name = k["kernel"]
            ins = [cp.asarray(np.load(os.path.join(bundle, "%s.in%d.npy" % (name, i))))
                   for i in range(k["inputs"])]
            want = [np.load(os.path.join(bundle, "%s.out%d.npy" % (name, i)))
                    for i in range(k["outputs"])]
            outs = [cp.zeros(w.shape, cp.float32) for w in want]
            n = k["n"]
            module.get_function(name + "_cuda")(tuple(k["grid"]), (k["block"],),
                                                (*ins, *outs, np.int64(n)))
            cp.cuda.Device().synchronize()
            for got, w in zip(outs, want):
                err = float(np.max(np.abs(cp.asnumpy(got) - w) / (1 + np.abs(w))))
                worst = max(worst, err)
            count += 1
        ok = worst <= 1e-6
        failed |= not ok
        print("%s: %d kernels on %s, worst relative error %.2e: %s"
              % (model, count, arch, worst, "ok" if ok else "MISMATCH"))
    failed |= not check_attention(os.path.join(root, "attention"), arch)
    sys.exit(1 if failed else 0)


def check_attention(bundle, arch):
    """runtime/gpu/kernels/attention.cu against float64 references: forward
    output and log-sum-exp, then dq, dk, dv; within 1e-4 of each tensor's
    scale in f32, 1e-2 in bf16 (the issue's bounds)."""
    module = cp.RawModule(path=os.path.join(bundle, "attention.%s.cubin" % arch))
    ok = True
    for c in json.load(open(os.path.join(bundle, "cases.json"))):
        load = lambda label: np.load(os.path.join(bundle, "%s.%s.npy" % (c["case"], label)))
        q, k, v, do = (cp.asarray(load(x)) for x in ("q", "k", "v", "do"))
        B, S, T, Hq, Hkv, D = (c[x] for x in ("B", "S", "T", "Hq", "Hkv", "D"))
        bf16 = c["dtype"] == "bf16"
        suffix, tolerance = ("_bf16", 1e-2) if bf16 else ("", 1e-4)
        storage = cp.uint16 if bf16 else cp.float32
        # Sizes, then no positions (null qpos, kpos); no dropout last.
        null = np.uint64(0)
        dims = (np.int32(B), np.int32(S), np.int32(T), np.int32(Hq), np.int32(Hkv),
                np.int32(D), np.int32(D), np.float32(c["scale"]), np.int32(c["causal"]),
                null, null)
        no_dropout = (np.float64(0), np.int64(0), null, null, np.int64(1),
                      np.int64(0), np.int64(0), np.int64(0), np.int64(Hq), np.int64(0))
        o = cp.zeros((B, S, Hq, D), storage)
        lse = cp.zeros((B, Hq, S), cp.float32)
        module.get_function("weft_attention_forward" + suffix)(
            ((S + 63) // 64, Hq, B), (64,), (q, k, v, o, lse, null, *dims, *no_dropout))  # null entropy
        dq = cp.zeros_like(q)
        dk = cp.zeros_like(k)
        dv = cp.zeros_like(v)
        delta = cp.zeros((B, Hq, S), cp.float32)
        module.get_function("weft_attention_backward_dq" + suffix)(
            ((S + 63) // 64, Hq, B), (64,),
            (q, k, v, o, lse, do, dq, delta, *dims, null, *no_dropout))  # null lse_grad
        module.get_function("weft_attention_backward_dkv" + suffix)(
            ((T + 31) // 32, Hkv, B), (32,),
            (q, k, v, lse, delta, do, dk, dv, *dims, *no_dropout))
        cp.cuda.Device().synchronize()
        worst = {}
        for label, got in [("o", o), ("lse", lse), ("dq", dq), ("dk", dk), ("dv", dv)]:
            want, got = load(label), cp.asnumpy(got)
            if got.dtype == np.uint16:  # bf16 bits
                got = (got.astype(np.uint32) << 16).view(np.float32)
            worst[label] = float(np.max(np.abs(got - want)) /
                                 max(np.max(np.abs(want)), 1e-30))
        good = all(e <= tolerance for e in worst.values())
        ok &= good
        print("attention %s: %s: %s" % (c["case"], ", ".join(
            "%s %.1e" % kv for kv in worst.items()), "ok" if good else "MISMATCH"))
    return ok


if __name__ == "__main__":
    main()
