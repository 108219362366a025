#!/usr/bin/env bash
# Pipeline parallelism on the CPU: Weft with one rank (OpenBLAS 1 thread and
# 2 threads) against --plan pp=2 (two ranks, weft-run --nproc 2, one stage
# each, sends and receives over Gloo, one OpenBLAS thread per rank) with
# 2, 4 and 8 micro-batches under GPipe, 1F1B and ZB-H1 (the backward split
# into input and weight gradients), on the same GPT, global batch, sequence
# and dtype, in one run.
#
#   bench/cpu_pp.sh [build-dir]      (after `make build`; no JAX: see BENCHMARKS.md)
#
# Prints a table of median step time, tokens/s, speed-up over one rank with
# one thread, and the pipeline bubble: (p-1)/m by the formula ((p-1)/(3m)
# for ZB-H1), and
# p * T_pp / T_1 - 1 from the measurement (T_1: one rank, one thread), which
# also counts the sends, receives and stash copies, not only idle time,
# and each run's peak resident memory (the larger rank's for pp=2).
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench-pp"
source "$(dirname "$0")/common.sh"
mkdir -p "$OUT"
python3 -c "import os; open('$OUT/data.bin','wb').write(os.urandom(1 << 20))"
MICROBATCHES=${MICROBATCHES:-"2 4 8"}
SCHEDULES=${SCHEDULES:-"gpipe 1f1b zb-h1"}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

compile() { # plan name
  "$BUILD/bin/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
    ${1:+--plan $1} -o "$OUT/bundle-$2" 2>/dev/null
}
run() { # bundle nproc threads label
  rm -f "$OUT/$4.jsonl"
  OPENBLAS_NUM_THREADS=$3 "$BUILD/bin/weft-run" --nproc "$2" "$OUT/bundle-$1" \
    --data "$OUT/data.bin" --tokenizer bytes --steps $((STEPS + 2)) \
    --metrics "$OUT/$4.jsonl" 2>/dev/null
}
compile "" one
run one 1 1 one-t1
run one 1 2 one-t2
for m in $MICROBATCHES; do
  for s in $SCHEDULES; do
    compile "pp=2,mb=$m,schedule=$s" "pp2-$s-$m"
    run "pp2-$s-$m" 2 1 "pp2-$s-$m"
  done
done

python3 - "$OUT" "$BATCH" "$SEQ" "$MICROBATCHES" "$SCHEDULES" "$LOAD_BEFORE" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" \
  "$(lscpu | sed -n 's/^Model name: *//p')" "$(nproc)" <<'PY'
import json, statistics, sys
out, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mbs = [int(m) for m in sys.argv[4].split()]
schedules = sys.argv[5].split()
sys.argv[5:6] = []  # The host facts follow at 5, 6, 7, 8 as before.
p = 2
tokens = batch * seq
def load(name):
    rows = [json.loads(l) for l in open(f"{out}/{name}.jsonl")][2:]   # skip 2 warm-up steps
    peak = max(max(r["peak_memory_bytes"]) if isinstance(r["peak_memory_bytes"], list)
               else r["peak_memory_bytes"] for r in rows)
    return statistics.median(r["step_s"] for r in rows), len(rows), peak
t1, steps, _ = load("one-t1")
print(f"{sys.argv[7]}, {sys.argv[8]} CPUs; load average {sys.argv[5]} before, "
      f"{sys.argv[6]} after")
print(f"GPT 6 layers, d=384, seq {seq}, global batch {batch}, fp32, AdamW; "
      f"median of {steps} steps after 2 warm-up")
print("| plan | schedule | M | ranks x BLAS threads | median step (ms) | tokens/s "
      "| vs 1 rank, 1 thread | bubble by the formula | measured bubble | peak RSS MiB, largest rank |")
print("|---|---|---|---|---|---|---|---|---|---|")
def row(plan, sched, m, layout, name, pipelined):
    t, _, peak = load(name)
    # ZB-H1's published bubble: a third of 1F1B's (F = B = W).
    formula = (p - 1) / (3 * m if sched == "zb-h1" else m)
    pred = f"{formula:.3f}" if pipelined else "-"
    meas = f"{p * t / t1 - 1:.3f}" if pipelined else "-"
    print(f"| {plan} | {sched} | {m} | {layout} | {t * 1e3:.0f} | {tokens / t:.0f} "
          f"| {t1 / t:.2f}x | {pred} | {meas} | {peak / 2**20:.0f} |")
row("one rank", "-", 1, "1 x 1", "one-t1", False)
row("one rank", "-", 1, "1 x 2", "one-t2", False)
for m in mbs:
    for s in schedules:
        row("pp=2", s, m, "2 x 1", f"pp2-{s}-{m}", True)
PY
