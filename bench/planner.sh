#!/usr/bin/env bash
# How long the planner takes (weftc plan: slices compiled, plans
# evaluated, search) on this machine, for the issue's targets (Llama-3-70B
# on 1024 H100s under 10 s, Llama-3-8B on 8 under 2 s) and the largest
# Megatron-LM Table 1 model (1T on 3072 A100s), with the plan it picks.
#
#   bench/planner.sh [build-dir]   (after `make build`)
#
# The peer is Alpa's published search time (about 40 minutes for GPT-39B on
# 64 GPUs, Zheng et al. 2022, section 8.1): it cannot run here (JAX on a
# GPU cluster), so it is quoted, not measured.
set -euo pipefail
BUILD=${1:-build}
RUNS=${RUNS:-5}
OUT="$BUILD/bench"
mkdir -p "$OUT"
python3 -c "
import json
json.dump({'model_type': 'gpt2', 'vocab_size': 51200, 'n_positions': 2048,
           'n_embd': 25600, 'n_layer': 128, 'n_head': 160},
          open('$OUT/gpt-1t.json', 'w'))"
# Llama-3-70B again from a .mlir (weftc import, bf16 with f32 master
# weights, written at one sequence): the planner cuts and rebatches the
# graph itself (weft-slice-layers, weft-rebatch), so it should pick what
# the config gives, in about the same time.
"$BUILD/bin/weftc" import --config examples/configs/llama3-70b.json \
  --batch 1 --seq 8192 --dtype bf16 --master-weights -o "$OUT/llama3-70b.mlir"
CASES="examples/configs/llama3-70b.json:2048:8192:dgx-h100:128
$OUT/llama3-70b.mlir:2048:8192:dgx-h100:128
examples/configs/llama3-8b.json:64:8192:dgx-h100:1
$OUT/gpt-1t.json:3072:2048:dgx-a100:384"
echo "| model | topology | devices | plans evaluated | slices compiled | median s ($RUNS runs) | chosen plan | predicted MFU |"
echo "|---|---|---|---|---|---|---|---|"
while IFS=: read -r config batch seq preset count; do
  times=()
  for _ in $(seq "$RUNS"); do
    start=$(date +%s.%N)
    if [[ $config == *.mlir ]]; then model=("$config"); else
      model=(--config "$config" --seq "$seq" --dtype bf16); fi
    "$BUILD/bin/weftc" plan "${model[@]}" --batch "$batch" \
      --topology "$preset:$count" --top 1 --format json \
      > "$OUT/plan.json" 2> "$OUT/plan.err" || true
    end=$(date +%s.%N)
    times+=("$(python3 -c "print($end - $start)")")
  done
  python3 - "$config" "$preset:$count" "$OUT/plan.json" "$OUT/plan.err" "${times[@]}" <<'PY'
import json, re, statistics, sys
config, topology, plan, err, *times = sys.argv[1:]
devices = {"dgx-h100": 8, "dgx-a100": 8}[topology.split(":")[0]] * int(topology.split(":")[1])
median = statistics.median(float(t) for t in times)
text = open(plan).read().strip()
if not text:  # No plan fits: weftc says so on stderr.
    counts = re.search(r"\((\d+) evaluated\)", open(err).read())
    print(f"| {config.split('/')[-1]} | {topology} | {devices} | "
          f"{counts.group(1) if counts else '?'} | | {median:.2f} | none fits | |")
    sys.exit(0)
d = json.loads(text)
best = d["plans"][0]
print(f"| {config.split('/')[-1]} | {topology} | {devices} | {d['evaluated']} | {d['slices']} | "
      f"{median:.2f} | {best['plan'].split(',stages=')[0]} "
      f"(recompute {best['recompute'][:30]}) | {100 * best['mfu']:.1f}% |")
PY
done <<< "$CASES"
