#!/usr/bin/env bash
# FP8 recipes on the CPU: a 4-layer, d=256 byte-level GPT (bench/gpt-fp8.json)
# trained 300 steps on real text (the GPL-3 text every Debian machine has)
# in bf16 (f32 master weights), in f32, and in bf16 with each FP8 recipe's
# GEMMs (emulated exactly; tensorwise also with FP8 storage, the GPU's FP8
# GEMMs decoded), from several seeds; then each recipe's final loss against
# bf16's from the same seed (the same initialisation and batches), and
# the mean over seeds with its 95% interval: issue 15 asks for 0.25 %
# (DeepSeek-V3's bar), which the table calls met, missed or not resolved.
# The last training losses scatter as one batch's loss does, so each
# run's saved weights are also evaluated in f32 (an f32 bundle of the
# model, weft-run --steps 0 --init-from --eval-data) on held-out text:
# 16384 tokens of another licence (HELDOUT, GPL-2) and every licence text
# base-files ships but the training text and near copies (WIDE, ~150,000
# tokens). Runs of equal quality still end apart, the training's own
# sensitivity: bf16 against f32 scatters by ~0.6 % a seed at lr 3e-3 and
# ~0.26 % at the default 1e-3 on GPL-2 (BENCHMARKS.md), as much as the
# bar, so the bar is resolved by the mean over many seeds; part of that
# scatter is the one text's, which WIDE averages over. Step
# times are the emulation's (GEMMs plus quantization), not FP8 speed; JAX
# bf16 (jit) at the same sizes is the timing peer.
#
#   bench/cpu_fp8.sh [build-dir]    (after `make build`; JAX as cpu_train.sh)
#
# Env: STEPS (300), BATCH (4), SEQ (128), LR (1e-3), SEEDS ("1 2 3"),
# THREADS (2: OpenBLAS threads);
# ONLY="label ..." reruns just those runs (the table reads every run's
# metrics); EVAL_ONLY=1 evaluates the saved weights again without
# training; BIN (the build's bin/) the weftc and weft-run to use; TEXT
# (base-files' GPL-3) the training text; HELDOUT (base-files' GPL-2) and
# WIDE (a comma list) the held-out texts.
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench-fp8"
STEPS=${STEPS:-300}
BATCH=${BATCH:-4}
SEQ=${SEQ:-128}
LR=${LR:-1e-3}
SEEDS=${SEEDS:-1 2 3}
# OpenBLAS threads per run: the losses are the same at any count, and two
# invocations of 1 thread each (SEEDS split between them) train more
# seeds an hour on two cores than one of 2.
THREADS=${THREADS:-2}
BIN=${BIN:-$BUILD/bin}
source "$(dirname "$0")/common.sh"
# After common.sh, which sets the other benchmarks' model.
CONFIG=bench/gpt-fp8.json
bench_setup "$BUILD" "$OUT"
# Runs from different texts are not comparable (the seeds' tables are
# combined across invocations), so the text is fixed and its hash printed.
TEXT=${TEXT:-/usr/share/common-licenses/GPL-3}
[ -f "$TEXT" ] || { echo "cpu_fp8.sh: no $TEXT (base-files' GPL-3; set TEXT)" >&2; exit 1; }
echo "text: $TEXT sha256 $(sha256sum "$TEXT" | cut -c1-16)"
HELDOUT=${HELDOUT:-/usr/share/common-licenses/GPL-2}
[ -f "$HELDOUT" ] || { echo "cpu_fp8.sh: no $HELDOUT (set HELDOUT)" >&2; exit 1; }
echo "held-out: $HELDOUT sha256 $(sha256sum "$HELDOUT" | cut -c1-16)"
# Every licence but GPL-3 (trained on), GFDL-1.2 and LGPL-2 (near copies of
# GFDL-1.3 and LGPL-2.1).
L=/usr/share/common-licenses
WIDE=${WIDE:-$L/GPL-2,$L/GPL-1,$L/LGPL-2.1,$L/LGPL-3,$L/GFDL-1.3,$L/MPL-1.1,$L/MPL-2.0,$L/Apache-2.0,$L/Artistic,$L/CC0-1.0,$L/BSD}
echo "wide held-out: $(echo "$WIDE" | tr , '\n' | xargs cat | sha256sum | cut -c1-16)"
# The evaluations' f32 bundle: 16 rows of SEQ, so GPL-2's first 8 batches
# are the first 16384 tokens (and their labels) that weftc eval --batch 128
# read before.
"$BIN/weftc" compile --config "$CONFIG" --batch 16 --seq "$SEQ" \
  -o "$OUT/bundle-eval" 2>/dev/null

# evaluate LABEL SEED NAME TEXTS: run LABEL-sSEED's weights in f32 on
# TEXTS (the first 8 batches of 16 rows with NAME heldout, all of them
# with wide), into LABEL-sSEED.NAME.jsonl.
evaluate() {
  local metrics="$OUT/$1-s$2.$3.jsonl"
  rm -f "$metrics"
  OPENBLAS_NUM_THREADS=$THREADS "$BIN/weft-run" "$OUT/bundle-eval" --data "$TEXT" \
    --tokenizer bytes --steps 0 --init-from "$OUT/$1-s$2.safetensors" \
    --eval-data "$4" --eval-batches "$([ "$3" = heldout ] && echo 8 || echo 0)" \
    --metrics "$metrics" 2>/dev/null
}
# run LABEL SEED [weftc compile flags]
run() {
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $1 "* ]]; then return; fi
  if [ -z "${EVAL_ONLY:-}" ]; then
    local bundle="$OUT/bundle-$1"
    "$BIN/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
      ${3:-} -o "$bundle" 2>/dev/null
    rm -f "$OUT/$1-s$2.jsonl"
    OPENBLAS_NUM_THREADS=$THREADS "$BIN/weft-run" "$bundle" --data "$TEXT" \
      --tokenizer bytes --steps "$STEPS" --lr "$LR" --seed "$2" \
      --metrics "$OUT/$1-s$2.jsonl" --save "$OUT/$1-s$2.safetensors" 2>/dev/null
  fi
  evaluate "$1" "$2" heldout "$HELDOUT"
  evaluate "$1" "$2" wide "$WIDE"
}
for seed in $SEEDS; do
  run bf16 "$seed" "--dtype bf16"
  run f32 "$seed"
  for recipe in tensorwise tensorwise-delayed rowwise blockwise mxfp8; do
    run "fp8-$recipe" "$seed" "--dtype bf16 --fp8 $recipe"
  done
  # Per-tensor FP8 GEMMs proper: FP8 codes in the arena and FP8 GEMMs (the
  # CPU decodes the codes for OpenBLAS), as a GPU bundle runs them.
  run fp8-tensorwise-stored "$seed" "--dtype bf16 --fp8 tensorwise --fp8-storage on"
done
"$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" \
  --seq "$SEQ" --steps 5 --dtype bf16 > "$OUT/jax-bf16.json"

python3 - "$OUT" "$BATCH" "$SEQ" "$LR" $SEEDS <<'PY'
import json, math, os, statistics, sys
out, batch, seq, lr = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
seeds = sys.argv[5:]
LABELS = ["bf16", "f32", "fp8-tensorwise", "fp8-tensorwise-delayed",
          "fp8-rowwise", "fp8-blockwise", "fp8-mxfp8", "fp8-tensorwise-stored"]
def rows(label, seed):
    path = os.path.join(out, f"{label}-s{seed}.jsonl")
    return [json.loads(l) for l in open(path)]
def last20(label, seed):  # The last 20 steps' mean: one batch is noisy.
    return sum(r["loss"] for r in rows(label, seed)[-20:]) / 20
def evaluated(name):  # weft-run --eval-data's eval_loss (None: not yet)
    def loss(label, seed):
        path = os.path.join(out, f"{label}-s{seed}.{name}.jsonl")
        lines = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
        return lines[-1]["eval_loss"] if lines else None
    return loss
# Student's t for a two-sided 95% interval, by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36,
       8: 2.31, 9: 2.26, 10: 2.23, 11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14,
       15: 2.13, 16: 2.12, 17: 2.11, 18: 2.10, 19: 2.09, 20: 2.09, 21: 2.08,
       22: 2.07, 23: 2.07, 24: 2.06, 25: 2.06, 26: 2.06, 27: 2.05, 28: 2.05,
       29: 2.05}
steps = len(rows("bf16", seeds[0]))
print(f"GPT 4 x 256 (bench/gpt-fp8.json), batch {batch} x seq {seq}, "
      f"{steps} steps at lr {lr} on GPL-3 text, {len(seeds)} seeds ({' '.join(seeds)})")
print("vs bf16: against bf16 from the same seed (the same initialisation and "
      "batches), mean over seeds with its 95% interval (Student's t); bar "
      "(issue 15): within 0.25% of bf16")

def table(title, loss):
    if any(loss(label, s) is None for label in LABELS for s in seeds):
        print(f"\n{title}: not measured for every run (rerun them)")
        return
    print(f"\n{title}\n")
    print("| run | mean loss | mean vs bf16 | 95% interval | seeds' range "
          "| bar | median step (ms) |")
    print("|---|---|---|---|---|---|---|")
    base = {s: loss("bf16", s) for s in seeds}
    for label in LABELS:
        losses = {s: loss(label, s) for s in seeds}
        diffs = [100 * (losses[s] / base[s] - 1) for s in seeds]
        ms = 1000 * statistics.median(r["step_s"] for s in seeds
                                      for r in rows(label, s)[2:])
        mean = statistics.mean(diffs)
        if label == "bf16":
            print(f"| {label} | {statistics.mean(losses.values()):.4f} | - | - "
                  f"| - | - | {ms:.1f} |")
            continue
        half = (T95.get(len(diffs) - 1, 2.04) * statistics.stdev(diffs)
                / math.sqrt(len(diffs))) if len(diffs) > 1 else float("inf")
        lo, hi = mean - half, mean + half
        # Met: the whole interval inside +-0.25%; missed: none of it; else
        # these seeds cannot tell.
        bar = ("met" if -0.25 <= lo and hi <= 0.25 else
               "missed" if hi < -0.25 or lo > 0.25 else "not resolved")
        print(f"| {label} | {statistics.mean(losses.values()):.4f} "
              f"| {mean:+.3f}% | {lo:+.3f}% to {hi:+.3f}% "
              f"| {min(diffs):+.3f}% to {max(diffs):+.3f}% | {bar} | {ms:.1f} |")
    print("\nper seed:")
    for label in LABELS:
        print(f"  {label:<24}" + " ".join(f"{loss(label, s):.5f}" for s in seeds))

table("final training loss (the last 20 steps' mean)", last20)
table("held-out loss (the trained weights in f32 on 16384 tokens of HELDOUT)",
      evaluated("heldout"))
table("wide held-out loss (the trained weights in f32 on every whole batch "
      "of WIDE)", evaluated("wide"))
jax = json.load(open(os.path.join(out, "jax-bf16.json")))
print(f"\nJAX bf16 (jit) median step: {1000 * jax['median_step_s']:.1f} ms")
PY
