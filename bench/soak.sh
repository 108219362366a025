#!/usr/bin/env bash
# Kill soak (issue 16): TRIALS times, a two-rank data-parallel GPT-2-tiny
# job (ZeRO-3, checkpointing every step, asynchronously) has one rank killed
# with SIGKILL at a random step (WEFT_INJECT=kill:...:attempt=0); the
# launcher restarts it from the newest complete checkpoint, and the
# restarted job's final parameters must equal an uninterrupted run's, byte
# for byte. Prints one line per trial and the count that were identical.
#
#   bench/soak.sh [build-dir]    (after `make build`)
#
# Env: TRIALS (100), STEPS (6), SEED (the random kills' seed; printed, so a
# failing trial can be rerun), BIN (the build's bin/).
set -euo pipefail
BUILD=${1:-build}
BIN=${BIN:-$BUILD/bin}
TRIALS=${TRIALS:-100}
STEPS=${STEPS:-6}
SEED=${SEED:-$RANDOM}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/weft-soak.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
TEXT=$(dirname "$0")/../test/tools/weftc/Inputs/text.txt
CONFIG=$(dirname "$0")/../examples/configs/gpt2-tiny.json

"$BIN/weftc" compile --config "$CONFIG" --batch 4 --seq 16 \
  --plan dp=2,zero=3 -o "$OUT/bundle" 2>/dev/null
run() { # run SAVE [weft-run flags]
  local save=$1
  shift
  OPENBLAS_NUM_THREADS=1 "$BIN/weft-run" "$OUT/bundle" --nproc 2 \
    --data "$TEXT" --tokenizer bytes --steps "$STEPS" --seed 1 \
    --save "$save" "$@"
}
run "$OUT/straight.safetensors" 2>/dev/null

echo "kill soak: $TRIALS trials, $STEPS steps each, seed $SEED"
RANDOM=$SEED
same=0
for trial in $(seq 1 "$TRIALS"); do
  rank=$((RANDOM % 2))
  step=$((RANDOM % STEPS + 1))
  rm -rf "$OUT/ckpt" "$OUT/restarted.safetensors"
  if WEFT_INJECT=kill:rank=$rank:step=$step:attempt=0 run \
    "$OUT/restarted.safetensors" --checkpoint-dir "$OUT/ckpt" \
    --checkpoint-every 1 --max-restarts 1 >"$OUT/log" 2>&1 &&
    cmp -s "$OUT/straight.safetensors" "$OUT/restarted.safetensors"; then
    verdict="bit-identical"
    same=$((same + 1))
  else
    verdict="DIFFERS"
    # Every rank's error (the one that exited first says why), not only
    # the launcher's last lines.
    grep -i 'error' "$OUT/log" | head -12 || tail -3 "$OUT/log"
  fi
  resumed=$(grep -o 'resumed from [^ ]*' "$OUT/log" | sed 's|.*/||' || true)
  echo "trial $trial: rank $rank killed before step $step; restarted from ${resumed:-the start}: $verdict"
done
echo "$same of $TRIALS restarted runs bit-identical to the uninterrupted run"
[ "$same" -eq "$TRIALS" ]
