#!/usr/bin/env bash
# Data loader throughput: how many tokens/s weft-run's loader reads from a
# sharded dataset (runtime/data/Dataset.h: shuffled windows read a 1 MiB
# chunk at a time), against the same loader reading each window on its own
# and nanoGPT's get_batch (numpy memmap, random windows) on the same
# shards, and against the CPU benchmark model's training rate, in one run.
#
#   bench/data.sh [build-dir]   (after `make build`)
#
# Writes a dataset of SHARDS shards of TOKENS_PER_SHARD random uint16 ids
# under the build directory, reads DATA_STEPS steps of the benchmark's
# batch (8 x 256) with weft-data-bench (one rank, then rank 0 of 4), and
# times the model's training step (bench/gpt-bench.json). numpy comes from
# the JAX venv of the CPU benchmarks. Warm rows read the shards for 200
# steps before they are timed; as root, cold rows drop the page cache
# first.
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
# Warm: each loader reads for 200 steps before it is timed. Cold: the page
# cache is dropped first (root only: /proc/sys/vm/drop_caches).
cold() {
  sync && echo 3 > /proc/sys/vm/drop_caches
}
COLD=0
[ -w /proc/sys/vm/drop_caches ] && COLD=1
run_loader() { # LABEL RANKS CHUNK_WINDOWS WARMUP
  if [ "$4" = warm ]; then
    "$BUILD/bin/weft-data-bench" "$OUT/dataset" --seq "$SEQ" --batch "$BATCH" \
      --steps 200 --ranks "$2" --chunk-windows "$3" > /dev/null
  else
    cold
  fi
  "$BUILD/bin/weft-data-bench" "$OUT/dataset" --seq "$SEQ" --batch "$BATCH" \
    --steps "$DATA_STEPS" --ranks "$2" --chunk-windows "$3" > "$OUT/loader-$1.json"
}
run_nanogpt() { # LABEL WARMUP_STEPS
  [ "$2" = 0 ] && cold
  "$VENV/bin/python" - "$OUT/dataset" "$BATCH" "$SEQ" "$DATA_STEPS" "$2" > "$OUT/nanogpt-$1.json" <<'PY'
# nanoGPT's get_batch (train.py), without torch: a memmap per call, random
# offsets, the windows stacked as int64.
import json, os, sys, time
import numpy as np
out, batch, seq, steps, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
shards = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
rng = np.random.default_rng(0)
def get_batch(step):
    data = np.memmap(os.path.join(out, shards[step % len(shards)]), dtype=np.uint16, mode="r")
    ix = rng.integers(len(data) - seq, size=batch)
    x = np.stack([data[i:i + seq].astype(np.int64) for i in ix])
    y = np.stack([data[i + 1:i + 1 + seq].astype(np.int64) for i in ix])
    return x, y
for step in range(warmup):
    get_batch(step)
start = time.perf_counter()
for step in range(steps):
    get_batch(step)
seconds = time.perf_counter() - start
print(json.dumps({"tokens_per_s": steps * batch * seq / seconds, "numpy": np.__version__}))
PY
}
# Warm means the whole dataset is in the page cache, as after writing it.
cat "$OUT"/dataset/*.bin > /dev/null
run_loader warm-1 1 0 warm
run_loader warm-4 4 0 warm
run_loader warm-window 1 1 warm
run_nanogpt warm 200
if [ "$COLD" = 1 ]; then
  run_loader cold-1 1 0 cold
  run_loader cold-window 1 1 cold
  run_nanogpt cold 0
fi
STEPS=3 weft_bench "" 1 2 model
python3 - "$OUT" "$BATCH" "$SEQ" "$COLD" <<'PY'
import json, statistics, sys
out, batch, seq, cold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
steps = [json.loads(l) for l in open(f"{out}/model.jsonl")][2:]
model = batch * seq / statistics.median(m["step_s"] for m in steps)
load = lambda name: json.load(open(f"{out}/{name}.json"))
print(f"dataset: {load('loader-warm-1')['windows']} windows of {seq + 1} tokens; the model trains at {model:.0f} tokens/s")
print("| loader | page cache | tokens/s read | reads | x the model's rate |")
print("|---|---|---|---|---|")
rows = [("Weft, one rank (all %d rows), 1 MiB chunks" % batch, "warm", "loader-warm-1"),
        ("Weft, rank 0 of 4 (%d rows), 1 MiB chunks" % (batch // 4), "warm", "loader-warm-4"),
        ("Weft, one rank, a read per window", "warm", "loader-warm-window"),
        ("nanoGPT get_batch (numpy memmap)", "warm", "nanogpt-warm")]
if cold:
    rows += [("Weft, one rank, 1 MiB chunks", "cold", "loader-cold-1"),
             ("Weft, one rank, a read per window", "cold", "loader-cold-window"),
             ("nanoGPT get_batch (numpy memmap)", "cold", "nanogpt-cold")]
for label, cache, name in rows:
    r = load(name)
    reads = r.get("file_reads", "—")
    print(f"| {label} | {cache} | {r['tokens_per_s']:.0f} | {reads} | {r['tokens_per_s'] / model:.0f}x |")
if not cold:
    print("(cold rows need root to drop the page cache)")
PY
