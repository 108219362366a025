"""Damages a pipelined bundle's transfers in one named way.

usage: pipeline_damage.py KIND BUNDLE_DIR
The bundle is Llama-tiny compiled with --plan pp=2,mb=2,schedule=1f1b:
  swap  rank 0 runs its first backward before its first forward (it waits
        for a gradient whose activation it never sent);
  tag   stage 1's forward receives its activation with another tag.
"""
import json
import os
import sys

kind, bundle = sys.argv[1:3]
path = os.path.join(bundle, "manifest.json")
m = json.load(open(path))
train = next(s for s in m["schedules"] if s["name"] == "train")
if kind == "swap":
    runs = next(q for q in train["sequences"] if q["coordinate"] == 0)["runs"]
    b = next(i for i, r in enumerate(runs) if r["program"].endswith(".backward"))
    runs.insert(0, runs.pop(b))
elif kind == "tag":
    prog = next(p for p in m["programs"] if p["name"] == "stage1.forward")
    recv = next(i for i in prog["instructions"] if i["op"] == "recv")
    recv["tag"] = 7
else:
    sys.exit("unknown damage " + kind)
json.dump(m, open(path, "w"))
