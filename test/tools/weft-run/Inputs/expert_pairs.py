"""Compares the `expert_pairs` metric of two weft-run metrics files.

usage: expert_pairs.py A.jsonl B.jsonl
Prints, per step, the pairs each layer routed (summed over its experts)
and to each expert, and whether every step's per-expert counts agree between the two runs.
"""
import json
import sys

# The steps' lines (--eval-data's have no "loss").
runs = [[m for m in map(json.loads, open(path)) if "loss" in m]
        for path in sys.argv[1:3]]
same = len(runs[0]) == len(runs[1])
for a, b in zip(*runs):
    pairs = a.get("expert_pairs")
    same = same and pairs is not None and pairs == b.get("expert_pairs")
    print("step", a["step"], "pairs per layer",
          [sum(layer) for layer in pairs or []])
    print("step", a["step"], "per expert", pairs)
print("routing", "same" if same else "DIFFERS")
