"""Compares held-out losses: weft-run's (the last eval_loss of a metrics
JSONL) and weftc eval's ("loss L over N tokens").

same_eval.py TOL FIRST OTHER...: prints each file's loss and whether every
OTHER is within TOL (relative) of FIRST's.
"""
import json
import sys


def loss(path):
    text = open(path).read()
    if path.endswith(".jsonl"):
        evals = [m["eval_loss"] for m in map(json.loads, text.splitlines())
                 if "eval_loss" in m]
        return evals[-1]
    return float(text.split()[1])


tol = float(sys.argv[1])
first = loss(sys.argv[2])
close = True
for path in sys.argv[3:]:
    value = loss(path)
    close &= abs(value - first) <= tol * abs(first)
    print(f"{value:.6f} against {first:.6f}")
print(f"held-out losses within {tol} of the first: {close}")
