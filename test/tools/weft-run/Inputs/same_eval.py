"""Compares held-out losses: weft-run's (every eval_loss of a metrics
JSONL, in order) and weftc eval's ("loss L over N tokens").

same_eval.py TOL FIRST OTHER...: prints each file's losses and whether
every OTHER has as many as FIRST, each within TOL (relative) of FIRST's.
"""
import json
import sys


def losses(path):
    text = open(path).read()
    if path.endswith(".jsonl"):
        return [m["eval_loss"] for m in map(json.loads, text.splitlines())
                if "eval_loss" in m]
    return [float(text.split()[1])]


tol = float(sys.argv[1])
first = losses(sys.argv[2])
close = bool(first)
for path in sys.argv[3:]:
    values = losses(path)
    close &= len(values) == len(first) and all(
        abs(v - f) <= tol * abs(f) for v, f in zip(values, first))
    print(" ".join(f"{v:.6f}" for v in values), "against",
          " ".join(f"{f:.6f}" for f in first))
print(f"held-out losses within {tol} of the first: {close}")
