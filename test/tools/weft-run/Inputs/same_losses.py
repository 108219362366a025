"""Compares resumed runs' metrics with the first run's.

same_losses.py FIRST RESUMED...: FIRST is a whole run's metrics JSONL, each
RESUMED one a run resumed part way; for each, prints the steps it ran and
whether its loss and grad_norm are within 1e-5 (relative) of FIRST's at
the same steps.
"""
import json
import sys


def read(path):
    return {m["step"]: m for m in map(json.loads, open(path))}


first = read(sys.argv[1])
for path in sys.argv[2:]:
    resumed = read(path)
    close = all(
        abs(m[key] - first[step][key]) <= 1e-5 * abs(first[step][key])
        for step, m in resumed.items()
        for key in ("loss", "grad_norm")
    )
    print(f"steps {sorted(resumed)}: within 1e-05 of the first run: {close}")
