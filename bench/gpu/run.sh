#!/usr/bin/env bash
# The prepared run for a lent GPU (H200), in one call of under 8 minutes.
# The device image has CUDA, PyTorch and CuPy but not Weft's build
# dependencies, so everything is built here and carried (bench/gpu/data):
#
#   here:   bench/gpu/prepare.sh                      # after `make build`
#   device: bash bench/gpu/run.sh                     # carry: bench/gpu/data
#
# It checks and times, each against a peer on the same GPU:
#   1. parity: GPT-2-tiny, 3 AdamW steps with weft-run --device cuda against
#      --device cpu (the model compiled for each, same seed and data): losses within 1e-4 (f32) and
#      1e-2 (bf16), every parameter within 1e-4 (f32) and 1e-1 (bf16); f32
#      also without GEMM epilogues;
#   2. every generated kernel of GPT-2-tiny and Llama-tiny from the bundle's
#      cubin against the CPU kernel's outputs, and the attention kernels
#      against float64 references;
#   3. attention forward + backward TFLOP/s (bf16, causal, S 4096, D 128):
#      the fused kernels alone, and the runtime's attention through cuBLASLt
#      and through the fused kernels (weft-gpu-bench attention), against
#      PyTorch's scaled_dot_product_attention;
#   4. a GEMM-bound shape through Weft's GEMM path (cuBLASLt, the heuristic's
#      algorithm) against torch.matmul; the 1B MLP's GEMM with each epilogue
#      (checked against Weft's GELU) against PyTorch eager and PyTorch's
#      cuBLASLt GELU epilogue (torch._addmm_activation); FP8 GEMMs (E4M3,
#      scales behind cuBLASLt's scale pointers as FP8 weft.matmuls run them:
#      per tensor, per row as outer vectors, DeepSeek-V3's 1x128 tiles by
#      128x128 blocks) against torch._scaled_mm with the same scalings,
#      and MXFP8 (1x32 blocks, power-of-two scales) in Weft's own kernel
#      against PyTorch's dequantize-and-bf16-matmul (torch._scaled_mm has
#      no MXFP8 mode before Blackwell), each checked against its
#      operands' decoded product; an expert layer's FP8 grouped GEMMs
#      (Weft's kernel, every recipe, group sizes on the device) against
#      torch._scaled_grouped_mm where this PyTorch has it; and its FP8
#      weight gradient (Weft's group cast and kernel) against PyTorch's
#      bf16 grouped weight gradient;
#   5. a ~1B GPT training step (bf16, batch 8 x 1024): tokens/s and MFU of
#      Weft against PyTorch eager and torch.compile;
#   6. a measured profile for the cost model: bf16 GEMMs of 256^3 to 8192^3
#      and a device copy, fitted (fit_profile.py) into a topology file.
# Results go to stdout and, as markdown, to $OUT/results.md when OUT is set.
set -uo pipefail
cd "$(dirname "$0")/../.."
DATA=${1:-bench/gpu/data}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
if [ ! -f "$DATA/runtime.tar.xz" ]; then
  echo "gpu/run.sh: nothing prepared in $DATA; run bench/gpu/prepare.sh first" >&2
  exit 1
fi
RT=/tmp/weft-runtime
mkdir -p "$RT" && tar -C "$RT" -xJf "$DATA/runtime.tar.xz"
# cuBLASLt and NVRTC: the toolkit's, else the ones PyTorch's wheels carry.
CUDA_DIRS=/usr/local/cuda/lib64
for lib in libcublasLt.so.13 libcublas.so.13 libnvrtc.so.13; do
  found=$(find /usr/local/cuda/lib64 /usr/lib /opt -name "$lib*" 2>/dev/null | head -1)
  [ -n "$found" ] && CUDA_DIRS="$CUDA_DIRS:$(dirname "$found")"
done
export LD_LIBRARY_PATH="$RT/lib:$CUDA_DIRS:${LD_LIBRARY_PATH:-}"
WEFT_RUN="$RT/weft-run"
status=0
{
echo "# Weft on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(date -u +%F)"

echo; echo "## 1. Parity: GPT-2-tiny (and Mixtral-tiny, moe-f32; FP8 GEMMs, fp8-f32), 3 AdamW steps, GPU vs CPU"
# bf16 parameters: attention through cuBLASLt rounds probabilities to bf16
# (as FlashAttention does; the CPU keeps them f32), which moves a small
# bias's three Adam steps by up to ~8% of its scale (test/runtime/
# emulated_gpu_test.cpp measures the same on an emulated device).
# f32-plain: the f32 bundle without cuBLASLt epilogues (weftc
# --gemm-epilogues=false), to tell an epilogue mismatch from anything else.
# fp8-f32: per-tensor FP8 weight GEMMs, FP8 codes through cuBLASLt's scale
# pointers on the GPU against the CPU's dequantized values; an element
# that lands across an FP8 rounding point moves what follows (the emulated
# GPU's test allows 5e-2 for the same reason).
# fp8-rows-f32: the same row-wise, per-row scales as cuBLASLt's outer
# vectors (OUTER_VEC_32F).
for dtype in f32 f32-plain bf16 moe-f32 fp8-f32 fp8-rows-f32; do
  case "$dtype" in
    bf16) tol="1e-2 1e-1" ;;
    fp8-f32 | fp8-rows-f32) tol="5e-2 5e-2" ;;
    *) tol="1e-4 1e-4" ;;
  esac
  for dev in cpu cuda; do
    rm -f "$OUT/parity-$dtype-$dev.jsonl"
    "$WEFT_RUN" "$DATA/parity-$dtype-$dev" --data "$DATA/data.bin" --tokenizer bytes \
      --steps 3 --seed 1 --lr 1e-3 --device "$dev" \
      --metrics "$OUT/parity-$dtype-$dev.jsonl" \
      --save "$OUT/parity-$dtype-$dev.safetensors" 2>"$OUT/parity-$dtype-$dev.log" ||
      { echo "weft-run --device $dev failed:"; tail -5 "$OUT/parity-$dtype-$dev.log"; }
  done
  echo; echo "$dtype (tolerance $tol):"
  python3 bench/gpu/compare_runs.py $tol \
    "$OUT/parity-$dtype-cpu.jsonl" "$OUT/parity-$dtype-cpu.safetensors" \
    "$OUT/parity-$dtype-cuda.jsonl" "$OUT/parity-$dtype-cuda.safetensors" || status=1
done

echo; echo "## 2. Generated kernels (cubin) vs CPU, attention vs float64"
python3 bench/gpu/check_kernels.py "$DATA" || status=1

echo; echo "## 3. Attention: Weft vs PyTorch SDPA"
python3 bench/gpu/bench_attention.py "$DATA" || status=1
echo "The runtime's attention (weft.attention + weft.attention_grad, graph-replayed):"
for mode in gemm fused; do
  "$RT/weft-gpu-bench" attention 1 16 4096 128 "$mode" 10 || status=1
done

echo; echo "## 4. GEMM 8192x8192x8192 bf16: Weft's path (cuBLASLt) vs torch.matmul"
weft=$("$RT/weft-gpu-bench" gemm 8192 8192 8192 20) || status=1
torch=$(PYTHONPATH=bench/gpu python3 - <<'PY'
import json, torch
from torch_timing import median_ms
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
ms = median_ms(lambda: a @ b)
print(json.dumps({"median_ms": ms, "tflops": 2 * 8192**3 / (ms * 1e-3) / 1e12}))
PY
)
python3 - "$weft" "$torch" <<'PY'
import json, sys
w, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("| system | median ms | TFLOP/s | vs torch |")
print("|---|---|---|---|")
print("| Weft (CublasLt, weft-gpu-bench gemm) | %.3f | %.0f | %.2fx |" % (w["median_ms"], w["tflops"], t["median_ms"] / w["median_ms"]))
print("| torch.matmul | %.3f | %.0f | 1.00x |" % (t["median_ms"], t["tflops"]))
PY

echo; echo "## 4b. GEMM epilogues at the 1B MLP's shape (8192x8192x2048, bf16)"
# Each Weft row also checks its first rows against Weft's own GELU on the
# host (max_error relative to the output's scale; over 2e-2 fails).
for epi in none bias bias_gelu dgelu; do
  "$RT/weft-gpu-bench" gemm 8192 8192 2048 20 "$epi" || status=1
done
PYTHONPATH=bench/gpu python3 - <<'PY'
import json, torch
import torch.nn.functional as F
from torch_timing import median_ms
x = torch.randn(8192, 2048, device="cuda", dtype=torch.bfloat16)
w = torch.randn(2048, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
def timed(name, fn):
    print(json.dumps({"system": name, "median_ms": median_ms(fn)}))
timed("torch x @ w", lambda: x @ w)
timed("torch gelu(addmm, tanh) eager", lambda: F.gelu(torch.addmm(b, x, w), approximate="tanh"))
# PyTorch's own cuBLASLt GELU epilogue.
timed("torch._addmm_activation(use_gelu)", lambda: torch._addmm_activation(b, x, w, use_gelu=True))
ref = F.gelu(torch.addmm(b, x, w).float(), approximate="tanh")
fused = torch._addmm_activation(b, x, w, use_gelu=True).float()
print(json.dumps({"torch epilogue vs tanh gelu, max error / scale":
                  ((fused - ref).abs().max() / ref.abs().max()).item()}))
PY

echo; echo "## 4c. FP8 GEMM 8192x8192x8192 (E4M3 x E4M3, bf16 out): per-tensor, row-wise, 1x128 x 128x128 block scales and MXFP8 (1x32, Weft's own kernel)"
for scaling in tensor rows blockwise mxfp8; do
  "$RT/weft-gpu-bench" gemm-fp8 8192 8192 8192 20 "$scaling" || status=1
done
# Correctness where a mistake would hide at 8192^3: m != n (a per-row
# vector swapped between A and B has the wrong length), and k = 640 (five
# 128-blocks, so each row of 128 x 128 scales is padded to 8). MXFP8 also
# at m and n that are no multiple of its kernel's 64-wide tile: the mma
# fragments and scales of a partial tile.
for scaling in rows blockwise mxfp8; do
  "$RT/weft-gpu-bench" gemm-fp8 1024 2048 640 3 "$scaling" || status=1
done
"$RT/weft-gpu-bench" gemm-fp8 1040 2064 640 3 mxfp8 || status=1
# An expert layer's FP8 GEMMs (Weft's kernel, the group sizes on the
# device): 8 experts of 4096 x 1792 (Mixtral-8x7B's w1 at a quarter) over
# 8192 routed rows, each recipe; checked where small (every row), timed
# where large. The peer is torch._scaled_grouped_mm (row-wise, where this
# PyTorch has it), below.
for scaling in rows blockwise mxfp8; do
  "$RT/weft-gpu-bench" gemm-fp8 1024 384 640 3 "$scaling" 4 || status=1
  "$RT/weft-gpu-bench" gemm-fp8 8192 1792 4096 10 "$scaling" 8 || status=1
done
PYTHONPATH=bench/gpu python3 - <<'PY' || true
import json, torch
from torch_timing import median_ms
e, rows, n, k = 8, 8192, 1792, 4096
if not hasattr(torch, "_scaled_grouped_mm"):
    print(json.dumps({"torch._scaled_grouped_mm": "absent in torch " + torch.__version__}))
else:
    a = torch.randn(rows, k, device="cuda")
    b = torch.randn(e, n, k, device="cuda")
    sa = a.abs().amax(dim=1) / 448.0
    sb = b.abs().amax(dim=2) / 448.0
    qa = (a / sa[:, None]).to(torch.float8_e4m3fn)
    qb = (b / sb[:, :, None]).to(torch.float8_e4m3fn)
    offs = torch.arange(rows // e, rows + 1, rows // e, device="cuda", dtype=torch.int32)
    run = lambda: torch._scaled_grouped_mm(qa, qb.transpose(-2, -1), sa.float(), sb.float(),
                                           offs=offs, out_dtype=torch.bfloat16)
    ms = median_ms(run, 10)
    print(json.dumps({"peer": "torch._scaled_grouped_mm rowwise", "experts": e,
                      "m": rows, "n": n, "k": k, "median_ms": ms,
                      "tflops": 2 * rows * n * k / (ms * 1e-3) / 1e12}))
PY
PYTHONPATH=bench/gpu python3 - <<'PY' || status=1
import json, torch
from torch_timing import median_ms
m = n = k = 8192
a = torch.randn(m, k, device="cuda")
b = torch.randn(n, k, device="cuda")
def quantize(x, rows, cols):
    # Scales per block of rows x cols (the whole tensor, a row, a tile).
    r, c = x.shape
    blocks = x.reshape(r // rows, rows, c // cols, cols).abs().amax(dim=(1, 3))
    scale = 448.0 / blocks.clamp(min=1e-12)
    full = scale.repeat_interleave(rows, 0).repeat_interleave(cols, 1)
    return (x * full).clamp(-448, 448).to(torch.float8_e4m3fn), (1.0 / scale).float()
def run(name, qa, sa, qb, sb, ref):
    def scaled():
        out = torch._scaled_mm(qa, qb.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        return out[0] if isinstance(out, tuple) else out
    try:
        err = ((scaled()[:4].float() - ref).abs().max() / ref.abs().max()).item()
        ms = median_ms(scaled)
        print(json.dumps({"system": "torch._scaled_mm", "scaling": name, "median_ms": ms,
                          "tflops": 2 * m * n * k / (ms * 1e-3) / 1e12, "max_error": err}))
    except Exception as e:  # This PyTorch or cuBLAS may not take the mode.
        print(json.dumps({"system": "torch._scaled_mm", "scaling": name,
                          "unsupported": str(e).splitlines()[0][:200]}))
# Per tensor.
qa, sa = quantize(a, m, k); qb, sb = quantize(b, n, k)
ref = (qa[:4].float() * sa) @ (qb.float() * sb).t()
run("tensor", qa, sa.reshape(()), qb, sb.reshape(()), ref)
# Row-wise: scale_a [m, 1], scale_b [1, n].
qa, sa = quantize(a, 1, k); qb, sb = quantize(b, 1, k)
ref = (qa[:4].float() * sa[:4]) @ (qb.float() * sb).t()
run("rows", qa, sa, qb, sb.t(), ref)
# DeepSeek-V3: 1x128 tiles of a (scale [m, k/128], outer-dim-major) by
# 128x128 blocks of b (scale [n/128, k/128]).
qa, sa = quantize(a, 1, 128); qb, sb = quantize(b, 128, 128)
da = qa.float() * sa.repeat_interleave(128, 1)
db = qb.float() * sb.repeat_interleave(128, 0).repeat_interleave(128, 1)
ref = da[:4] @ db.t()
run("blockwise", qa, sa.t().contiguous().t(), qb, sb.t(), ref)
# MXFP8 has no torch._scaled_mm mode before Blackwell (its E8M0 scales):
# the peer is what Weft ran before its own kernel, the dequantized values
# (bf16) through a bf16 GEMM, timed with the dequantization.
def pow2_quantize(x):
    r, c = x.shape
    blocks = x.reshape(r, c // 32, 32).abs().amax(dim=2).clamp(min=1e-12)
    scale = torch.exp2(8 - torch.floor(torch.log2(blocks)))
    full = scale.repeat_interleave(32, 1)
    return (x * full).clamp(-448, 448).to(torch.float8_e4m3fn), 1.0 / full
qa, ia = pow2_quantize(a); qb, ib = pow2_quantize(b)
def dequantized():
    return (qa.to(torch.bfloat16) * ia.to(torch.bfloat16)) @ (qb.to(torch.bfloat16) * ib.to(torch.bfloat16)).t()
ms = median_ms(dequantized)
print(json.dumps({"system": "torch dequantize + bf16 matmul", "scaling": "mxfp8",
                  "median_ms": ms, "tflops": 2 * m * n * k / (ms * 1e-3) / 1e12}))
PY

echo; echo "## 4d. An expert layer's FP8 weight gradient (Weft's group cast and kernel) vs PyTorch's bf16 grouped weight gradient"
# weft_fp8_group_wgrad: dW [E, P, Q] of dy [N, P] and x [N, Q] cast on the
# device by weft_fp8_group_cast (tiles of each expert's rows: all of them for rows, 128 blockwise, 32
# mxfp8), 8 experts of unequal sizes none a multiple of 32 (each expert's
# last 32-row block partial). The casts are checked against the CPU
# runtime's byte for byte and dW against the decoded codes; timed at
# Mixtral-8x7B's w1 at a quarter (P 1792, Q 4096 over 8192 rows). The peer
# is PyTorch's bf16 grouped weight gradient (torch._grouped_mm with the
# groups along k, else one torch.mm per expert), below: PyTorch has no FP8
# grouped weight gradient this script can call on Hopper.
for scaling in rows blockwise mxfp8; do
  "$RT/weft-gpu-bench" wgrad-fp8 1000 384 320 3 "$scaling" 4 || status=1
  "$RT/weft-gpu-bench" wgrad-fp8 8192 1792 4096 10 "$scaling" 8 || status=1
done
PYTHONPATH=bench/gpu python3 - <<'PY' || true
import json, torch
from torch_timing import median_ms
e, rows, p, q = 8, 8192, 1792, 4096
sizes = [rows // e + (40 if i % 2 == 0 else -40) for i in range(e - 1)]
sizes.append(rows - sum(sizes))
dy = torch.randn(rows, p, device="cuda", dtype=torch.bfloat16)
x = torch.randn(rows, q, device="cuda", dtype=torch.bfloat16)
offs = torch.tensor(sizes, device="cuda", dtype=torch.int32).cumsum(0).to(torch.int32)
dyt = dy.t().contiguous()
def loop():
    return torch.stack([a.t() @ b for a, b in zip(dy.split(sizes), x.split(sizes))])
name, run = "torch.mm per expert (bf16)", loop
if hasattr(torch, "_grouped_mm"):
    try:
        got = torch._grouped_mm(dyt, x, offs=offs)
        err = ((got.float() - loop().float()).abs().max() / loop().float().abs().max()).item()
        if err < 1e-2:
            name, run = "torch._grouped_mm (bf16, groups along k)", lambda: torch._grouped_mm(dyt, x, offs=offs)
    except Exception as ex:  # This PyTorch may not take 2-D by 2-D groups.
        print(json.dumps({"torch._grouped_mm": str(ex).splitlines()[0][:200]}))
ms = median_ms(run, 10)
print(json.dumps({"peer": name, "experts": e, "n": rows, "p": p, "q": q,
                  "median_ms": ms, "tflops": 2 * rows * p * q / (ms * 1e-3) / 1e12}))
PY

echo; echo "## 5. ~1B GPT training step (bf16, batch 8 x 1024, AdamW)"
rm -f "$OUT/gpt-1b.jsonl"
"$WEFT_RUN" "$DATA/gpt-1b" --data "$DATA/data.bin" --tokenizer bytes --steps 6 \
  --lr 1e-4 --device cuda --metrics "$OUT/gpt-1b.jsonl" 2>"$OUT/gpt-1b.log" ||
  { echo "weft-run (1B) failed:"; tail -5 "$OUT/gpt-1b.log"; status=1; }
python3 bench/gpu/torch_gpt.py examples/configs/gpt-1b.json 8 1024 eager compile \
  > "$OUT/torch-1b.jsonl" 2>"$OUT/torch-1b.log" || { tail -5 "$OUT/torch-1b.log"; status=1; }
python3 - "$OUT/gpt-1b.jsonl" "$OUT/torch-1b.jsonl" examples/configs/gpt-1b.json <<'PY'
import json, os, statistics, sys
c = json.load(open(sys.argv[3]))
L, d, S, V, P = c["n_layer"], c["n_embd"], 1024, c["vocab_size"], c["n_positions"]
params = V * d + P * d + L * (12 * d * d + 13 * d) + 2 * d
flops_per_token = 6 * params + 12 * L * d * S   # PaLM's count, attention included
peak = 989e12                                     # H100/H200 SXM dense bf16
rows = []
if os.path.exists(sys.argv[1]) and os.path.getsize(sys.argv[1]):
    steps = [json.loads(l) for l in open(sys.argv[1])][2:]
    if steps:
        rows.append(("Weft (weft-run --device cuda)", statistics.median(s["tokens_per_s"] for s in steps)))
for l in open(sys.argv[2]):
    r = json.loads(l)
    rows.append((r["system"], r["tokens_per_s"]))
print("%.2fB parameters, %.1f GFLOP per token; MFU against %.0f TFLOP/s" % (params / 1e9, flops_per_token / 1e9, peak / 1e12))
print("| system | tokens/s | MFU | vs PyTorch eager |")
print("|---|---|---|---|")
eager = next((t for n, t in rows if "eager" in n), None)
for name, t in rows:
    print("| %s | %.0f | %.1f%% | %s |" % (name, t, 100 * t * flops_per_token / peak,
                                         "%.2fx" % (t / eager) if eager else "-"))
PY

echo; echo "## 6. A measured profile for the cost model (GEMM curve, HBM bandwidth)"
# Square bf16 GEMMs through Weft's path and a device copy: fit_profile.py
# fits the cost model's GEMM curve and writes $OUT/h200-measured.json, for
# `weftc compile|plan --topology` here (BENCHMARKS.md: the 1B step
# predicted with it against section 5's measured one).
for n in 256 512 1024 2048 4096 8192; do
  "$RT/weft-gpu-bench" gemm $n $n $n 20 > "$OUT/gemm-$n.json" || status=1
done
PYTHONPATH=bench/gpu python3 - "$OUT" <<'PY' || status=1
import json, sys, torch
from torch_timing import median_ms
out = sys.argv[1]
gemm = []
for n in (256, 512, 1024, 2048, 4096, 8192):
    try:
        r = json.loads(open("%s/gemm-%d.json" % (out, n)).read().strip().splitlines()[-1])
        gemm.append({"m": n, "n": n, "k": n, "tflops": r["tflops"]})
    except (OSError, ValueError, KeyError, IndexError):
        pass
x = torch.empty(1 << 30, device="cuda", dtype=torch.uint8)
y = torch.empty_like(x)
ms = median_ms(lambda: y.copy_(x))
props = torch.cuda.get_device_properties(0)
json.dump({"name": "h200-measured", "device": props.name,
           "peak_tflops": {"bf16": 989, "fp8": 1979, "f32": 67},
           "memory_gb": round(props.total_memory / 1e9, 1),
           "memory_bandwidth_gbps": 2 * (1 << 30) / (ms * 1e-3) / 1e9,
           "gemm": gemm}, open(out + "/measured.json", "w"))
PY
python3 bench/gpu/fit_profile.py "$OUT/measured.json" "$OUT/h200-measured.json" || status=1
} 2>&1 | tee "$OUT/results.md"
exit $status
