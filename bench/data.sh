#!/usr/bin/env bash
# Data loader throughput: how many tokens/s weft-run's loader reads from a
# sharded dataset (runtime/data/Dataset.h: shuffled windows, one read
# each), against nanoGPT's get_batch (numpy memmap, random windows) on the
# same shards, and against the CPU benchmark model's training rate, in one
# run.
#
#   bench/data.sh [build-dir]   (after `make build`)
#
# Writes a dataset of SHARDS shards of TOKENS_PER_SHARD random uint16 ids
# under the build directory, reads STEPS steps of the benchmark's batch (8 x
# 256) with weft-data-bench (one rank, then rank 0 of 4), and times the
# model's training step (bench/gpt-bench.json). numpy comes from the JAX
# venv of the CPU benchmarks. The page cache is warm (each loader reads the
# shards once before it is timed).
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench"
source "$(dirname "$0")/common.sh"
SHARDS=${SHARDS:-4}
TOKENS_PER_SHARD=${TOKENS_PER_SHARD:-8388608}
DATA_STEPS=${DATA_STEPS:-2000}
bench_setup "$BUILD" "$OUT"
"$VENV/bin/python" - "$OUT/dataset" "$SHARDS" "$TOKENS_PER_SHARD" <<'PY'
import json, os, sys
import numpy as np
out, shards, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
entries = []
for s in range(shards):
    name = f"shard-{s:05d}.bin"
    path = os.path.join(out, name)
    if not os.path.exists(path) or os.path.getsize(path) != 2 * tokens:
        np.random.default_rng(s).integers(0, 256, tokens, dtype=np.uint16).tofile(path)
    entries.append({"file": name, "tokens": tokens})
json.dump({"format": "weft-dataset", "version": 1, "dtype": "uint16",
           "vocab": 256, "shards": entries}, open(os.path.join(out, "dataset.json"), "w"))
PY
run_loader() { # RANKS
  "$BUILD/bin/weft-data-bench" "$OUT/dataset" --seq "$SEQ" --batch "$BATCH" \
    --steps 200 --ranks "$1" > /dev/null
  "$BUILD/bin/weft-data-bench" "$OUT/dataset" --seq "$SEQ" --batch "$BATCH" \
    --steps "$DATA_STEPS" --ranks "$1"
}
run_loader 1 > "$OUT/loader-1.json"
run_loader 4 > "$OUT/loader-4.json"
"$VENV/bin/python" - "$OUT/dataset" "$BATCH" "$SEQ" "$DATA_STEPS" > "$OUT/nanogpt.json" <<'PY'
# nanoGPT's get_batch (train.py), without torch: a memmap per call, random
# offsets, the windows stacked as int64.
import json, os, sys, time
import numpy as np
out, batch, seq, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
shards = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
rng = np.random.default_rng(0)
def get_batch(step):
    data = np.memmap(os.path.join(out, shards[step % len(shards)]), dtype=np.uint16, mode="r")
    ix = rng.integers(len(data) - seq, size=batch)
    x = np.stack([data[i:i + seq].astype(np.int64) for i in ix])
    y = np.stack([data[i + 1:i + 1 + seq].astype(np.int64) for i in ix])
    return x, y
for step in range(200):
    get_batch(step)
start = time.perf_counter()
for step in range(steps):
    get_batch(step)
seconds = time.perf_counter() - start
print(json.dumps({"tokens_per_s": steps * batch * seq / seconds, "numpy": np.__version__}))
PY
STEPS=3 weft_bench "" 1 2 model
python3 - "$OUT" "$BATCH" "$SEQ" <<'PY'
import json, statistics, sys
out, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
one = json.load(open(f"{out}/loader-1.json"))
four = json.load(open(f"{out}/loader-4.json"))
peer = json.load(open(f"{out}/nanogpt.json"))
steps = [json.loads(l) for l in open(f"{out}/model.jsonl")][2:]
model = batch * seq / statistics.median(m["step_s"] for m in steps)
print(f"dataset: {one['windows']} windows of {seq + 1} tokens; the model trains at {model:.0f} tokens/s")
print("| loader | tokens/s read | x the model's rate |")
print("|---|---|---|")
print(f"| Weft, one rank (all {batch} rows) | {one['tokens_per_s']:.0f} | {one['tokens_per_s'] / model:.0f}x |")
print(f"| Weft, rank 0 of 4 ({batch // 4} rows) | {four['tokens_per_s']:.0f} | {four['tokens_per_s'] / model:.0f}x |")
print(f"| nanoGPT get_batch (numpy {peer['numpy']} memmap) | {peer['tokens_per_s']:.0f} | {peer['tokens_per_s'] / model:.0f}x |")
PY
