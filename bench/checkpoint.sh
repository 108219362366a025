#!/usr/bin/env bash
# Checkpoint stall on the CPU: how long a training step waits for an
# asynchronous checkpoint of the whole training state, Weft (weft-run
# --checkpoint-every 1) against JAX with Orbax's asynchronous
# CheckpointManager (a save after every step), same GPT, batch and sequence,
# in one run.
#
#   bench/checkpoint.sh [build-dir]   (after `make build`)
#
# Prints median step time with and without checkpoints, the median stall
# per save (Weft: the metrics' checkpoint_s; Orbax: the time manager.save
# blocks) and the stall as a share of the step. JAX and Orbax go into a
# venv in the build directory on first use. Checkpoints are written under
# the build directory (the same disk for both).
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench"
source "$(dirname "$0")/common.sh"
STEPS=${STEPS:-8}
bench_setup "$BUILD" "$OUT"
"$VENV/bin/python" -c "import orbax.checkpoint" 2>/dev/null ||
  "$VENV/bin/pip" install -q orbax-checkpoint
"$BUILD/bin/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
  -o "$OUT/bundle-ckpt" 2>/dev/null
run_weft() { # LABEL [FLAGS]
  rm -f "$OUT/$1.jsonl"
  OPENBLAS_NUM_THREADS=2 "$BUILD/bin/weft-run" "$OUT/bundle-ckpt" \
    --data "$OUT/data.bin" --tokenizer bytes --steps $((STEPS + 2)) \
    --metrics "$OUT/$1.jsonl" ${2:-} 2>/dev/null
}
rm -rf "$OUT/weft-ckpt" "$OUT/orbax-ckpt"
run_weft plain
run_weft saving "--checkpoint-dir $OUT/weft-ckpt --checkpoint-every 1"
"$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" \
  --seq "$SEQ" --steps "$STEPS" > "$OUT/jax-plain.json"
"$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" \
  --seq "$SEQ" --steps "$STEPS" --checkpoint-dir "$OUT/orbax-ckpt" \
  > "$OUT/jax-saving.json"
python3 - "$OUT" "$(du -sb "$OUT/weft-ckpt"/step-* | tail -1 | cut -f1)" <<'PY'
import json, statistics, sys
out, size = sys.argv[1], int(sys.argv[2])
def weft(label):
    steps = [json.loads(l) for l in open(f"{out}/{label}.jsonl")][2:]
    step = statistics.median(m["step_s"] + m.get("checkpoint_s", 0) for m in steps)
    stall = [m["checkpoint_s"] for m in steps if "checkpoint_s" in m]
    return step, statistics.median(stall) if stall else None
jax = {k: json.load(open(f"{out}/jax-{k}.json")) for k in ("plain", "saving")}
print(f"checkpoint: {size / 1e6:.0f} MB per save (Weft)")
print("| run | median step (s) | median stall per save (s) | stall / step |")
print("|---|---|---|---|")
for label, (step, stall) in (("Weft, no checkpoints", weft("plain")),
                             ("Weft, a checkpoint every step", weft("saving"))):
    share = f"{100 * stall / step:.1f}%" if stall is not None else "—"
    print(f"| {label} | {step:.3f} | {stall if stall is None else f'{stall:.4f}'} | {share} |".replace("| None |", "| — |"))
j = jax["saving"]
print(f"| JAX {jax['plain']['jax']}, no checkpoints | {jax['plain']['median_step_s']:.3f} | — | — |")
print(f"| JAX + Orbax {j['orbax']}, a checkpoint every step | {j['median_step_s']:.3f} | {j['median_stall_s']:.4f} | {100 * j['median_stall_s'] / j['median_step_s']:.1f}% |")
PY
