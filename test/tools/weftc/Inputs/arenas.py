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
replaces the word CONFIGS in FLAGS. Under pp a rank's activations are the
largest arena of its own programs (rank<r>.*, and stage<s>.* for s mod P =
r) plus its stash of micro-batches in flight, and "arena" prints the
largest rank's.
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
    pipeline = report.get("pipeline")
    if pipeline:
        # Pipeline rank r runs rank<r>.* and the stages s with s mod P = r
        # (their last micro-batch's copies too); the stashes in flight come
        # on top, as the report's own table states them.
        pp, chunks = pipeline["ranks"], pipeline["virtual"]
        want = []
        for stage in pipeline["stages"]:
            r = stage["rank"]
            mine = [a for name, a in arenas.items()
                    if re.match(rf"rank{r}\.", name) or
                    (re.match(r"stage(\d+)\.", name) and
                     int(re.match(r"stage(\d+)\.", name).group(1)) % pp == r)]
            want.append(max(mine) + stage["stash_bytes"] * stage["in_flight"]
                        // chunks + stage["weight_stash_bytes"] *
                        stage["awaiting_w"])
        got = [x["activation_bytes"] for x in report["ranks"]]
        per_stage = len(got) // pp
        same = got == [want[g // per_stage] for g in range(len(got))]
        largest = max(want)
    line = (f"{label} report={ranks[0] if len(ranks) == 1 else ranks} "
            f"arena={largest} {'same' if same else 'differs'}")
    budget = [f for f in flags if f.startswith("budget=")]
    if budget:
        gib = float(budget[0].split("=")[1])
        line += " fits" if largest <= gib * 2**30 else " over"
    print(line)
