"""Times Weft's fused attention (runtime/gpu/kernels/attention.cu, from the
prepared cubin) against PyTorch's scaled_dot_product_attention on the same
GPU and inputs: forward + backward, causal, bf16, sequence 4096, head dim
128. Prints a table (median of 10 runs after 3 warm-ups) with TFLOP/s
counted as FlashAttention does (causal halves the 4*B*H*S*S*D forward and
the 2.5x backward).

usage: bench_attention.py DIR   (needs cupy and torch; DIR from prepare)
"""
import os
import sys

import cupy as cp
import numpy as np
import torch

B, H, HKV, S, D = 1, 16, 16, 4096, 128


def median_ms(run, repeats=10, warmup=3):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return float(np.median(times))


def main():
    arch = "sm_" + cp.cuda.Device().compute_capability
    module = cp.RawModule(path=os.path.join(sys.argv[1], "attention",
                                            "attention.%s.cubin" % arch))
    fwd = module.get_function("weft_attention_forward_bf16")
    dq_k = module.get_function("weft_attention_backward_dq_bf16")
    dkv_k = module.get_function("weft_attention_backward_dkv_bf16")
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(B, S, n, D, device="cuda", dtype=torch.bfloat16)
                   for n in (H, HKV, HKV, H))
    as_cp = lambda t: cp.asarray(t.view(torch.int16)).view(cp.uint16)
    cq, ck, cv, cdo = (as_cp(t) for t in (q, k, v, do))
    o = cp.zeros((B, S, H, D), cp.uint16)
    lse = cp.zeros((B, H, S), cp.float32)
    delta = cp.zeros((B, H, S), cp.float32)
    dq, dk, dv = cp.zeros_like(cq), cp.zeros_like(ck), cp.zeros_like(cv)
    # Sizes, then no positions (null qpos, kpos); no dropout last.
    null = np.uint64(0)
    dims = (np.int32(B), np.int32(S), np.int32(S), np.int32(H), np.int32(HKV),
            np.int32(D), np.int32(D), np.float32(D ** -0.5), np.int32(1), null, null)
    no_dropout = (np.float64(0), np.int64(0), null, null, np.int64(1),
                  np.int64(0), np.int64(0), np.int64(0), np.int64(H), np.int64(0))

    def weft_forward():
        fwd(((S + 63) // 64, H, B), (64,), (cq, ck, cv, o, lse, null, *dims, *no_dropout))  # null entropy

    def weft_both():
        weft_forward()
        dq_k(((S + 63) // 64, H, B), (64,),
             (cq, ck, cv, o, lse, cdo, dq, delta, *dims, null, *no_dropout))
        dkv_k(((S + 31) // 32, HKV, B), (32,),
              (cq, ck, cv, lse, delta, cdo, dk, dv, *dims, *no_dropout))

    # PyTorch takes [B, H, S, D].
    tq, tk, tv = (t.transpose(1, 2).contiguous().requires_grad_() for t in (q, k, v))
    tdo = do.transpose(1, 2).contiguous()
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def torch_forward():
        with torch.no_grad():
            sdpa(tq, tk, tv, is_causal=True)

    def torch_both():
        out = sdpa(tq, tk, tv, is_causal=True)
        out.backward(tdo)

    flops = 4 * B * H * S * S * D / 2  # causal forward
    rows = [("weft forward", median_ms(weft_forward), flops),
            ("torch SDPA forward", median_ms(torch_forward), flops),
            ("weft forward+backward", median_ms(weft_both), 3.5 * flops),
            ("torch SDPA forward+backward", median_ms(torch_both), 3.5 * flops)]
    print("attention bf16, causal, B=%d H=%d S=%d D=%d on %s" %
          (B, H, S, D, torch.cuda.get_device_name()))
    print("%-30s %10s %10s" % ("", "ms", "TFLOP/s"))
    for name, ms, work in rows:
        print("%-30s %10.3f %10.1f" % (name, ms, work / ms / 1e9))


if __name__ == "__main__":
    main()
