"""Compares the health probes of two weft-run metrics files step by step:
the same metrics, each value (every element of a vector) within TOL of
the reference relative to its magnitude (at least 1).

usage: same_probes.py REF.jsonl RUN.jsonl TOL
Prints the metric names of the first step and 'same probes', or the first
difference.
"""
import json
import sys

ref_path, run_path, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
ref = [json.loads(line)["probes"] for line in open(ref_path)]
run = [json.loads(line)["probes"] for line in open(run_path)]
print("metrics:", sorted(ref[0]))
if len(ref) != len(run):
    sys.exit("steps differ: %d against %d" % (len(ref), len(run)))
for step, (a, b) in enumerate(zip(ref, run), 1):
    if sorted(a) != sorted(b):
        sys.exit("step %d: metrics %s against %s" % (step, sorted(a), sorted(b)))
    for name in a:
        x = a[name] if isinstance(a[name], list) else [a[name]]
        y = b[name] if isinstance(b[name], list) else [b[name]]
        for i, (u, v) in enumerate(zip(x, y)):
            if len(x) != len(y) or abs(u - v) > tol * max(1.0, abs(u)):
                sys.exit("step %d: %s[%d] is %r against %r" % (step, name, i, v, u))
print("same probes")
