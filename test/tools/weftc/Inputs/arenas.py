"""Compares weftc's report with the sched plan a bundle holds.

Usage: arenas.py WEFTC CONFIGS LABEL -- FLAGS... [then LABEL -- FLAGS...]

For each configuration, compiles the model twice: with --report=json (each
rank's activation bytes, what the placed weft programs' memory plan says)
and with --emit=sched (the programs a bundle holds, each with its planned
arena, what the runtime allocates). Prints one line a configuration:
"LABEL report=R arena=A same" when every rank's activation bytes equal the
largest arena (the programs of a rank share one), else "differs"; with
--recompute budget=G, then "fits" when that arena is at most G GiB, else
"over". CONFIGS
replaces the word CONFIGS in FLAGS. Not for pp, where a rank's activations
also hold its stash of micro-batches in flight.
"""
import json
import re
import subprocess
import sys

weftc, configs = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
runs, current = [], []
for a in args + ["then"]:
    if a == "then":
        if current:
            runs.append(current)
        current = []
    else:
        current.append(a)
for run in runs:
    label, flags = run[0], run[2:]
    flags = [f.replace("CONFIGS", configs) for f in flags]
    report = json.loads(
        subprocess.run([weftc, "compile", *flags, "--report=json"],
                       check=True, capture_output=True, text=True).stdout)
    sched = subprocess.run([weftc, "compile", *flags, "--emit=sched"],
                           check=True, capture_output=True, text=True).stdout
    arenas = {m.group(1): int(m.group(2)) for m in
              re.finditer(r"sched.program @([\w.]+) arena\((\d+)\)", sched)}
    largest = max(arenas.values())
    ranks = sorted({r["activation_bytes"] for r in report["ranks"]})
    same = ranks == [largest]
    line = (f"{label} report={ranks[0] if len(ranks) == 1 else ranks} "
            f"arena={largest} {'same' if same else 'differs'}")
    budget = [f for f in flags if f.startswith("budget=")]
    if budget:
        gib = float(budget[0].split("=")[1])
        line += " fits" if largest <= gib * 2**30 else " over"
    print(line)
