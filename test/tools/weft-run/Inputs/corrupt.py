"""Damages a bundle's manifest.json in one named way, for errors.test.

usage: corrupt.py KIND MANIFEST
"""
import json
import sys

kind, path = sys.argv[1], sys.argv[2]
m = json.load(open(path))
programs = {p["name"]: p for p in m.get("programs", [])}
step = programs.get("step")


def first(program, pred):
    return next(x for x in program if pred(x))


if kind == "version1":
    m["version"] = 1
elif kind == "version3":  # A bundle from a newer weftc.
    m["version"] = 3
elif kind == "operand":  # An instruction reads a buffer that does not exist.
    step["instructions"][3]["operands"][0] = 999999
elif kind == "offset":  # An alloc moved past the end of the arena.
    fwd = programs["forward"]
    first(fwd["buffers"], lambda b: b["kind"] == "alloc")["offset"] = fwd["arena"]
elif kind == "overlap":  # Two allocs live at once moved onto the same bytes.
    allocs = [b for b in step["buffers"] if b["kind"] == "alloc"]
    a = allocs[0]
    b = first(allocs[1:], lambda x: x["first"] <= a["last"] and a["first"] <= x["last"]
              and x["offset"] != a["offset"])
    b["offset"] = a["offset"]
elif kind in ("dropout-microbatches", "dropout-microbatches-huge"):
    # A micro-batched dropout mask cut otherwise than the schedule runs.
    for ins in programs["accumulate"]["instructions"]:
        if ins["op"] == "dropout" and ins.get("has_microbatch"):
            ins["microbatches"] = 3 if kind == "dropout-microbatches" else 1 << 40
elif kind == "fp8-cast-transpose":
    # A cast whose codes' layout its flag does not give.
    first(step["instructions"], lambda i: i["op"] == "fp8_cast" and not i["transpose"])["transpose"] = True
elif kind == "fp8-gemm-unscaled":
    # An FP8 GEMM without its scales.
    gemm = first(step["instructions"], lambda i: i["op"] == "gemm" and i["has_scales"])
    gemm["has_scales"] = False
    gemm["operands"] = gemm["operands"][:3]
elif kind == "fp8-scale-mode":
    # A row-wise cast that says its scales are 1 x 128 tiles.
    first(step["instructions"], lambda i: i["op"] == "fp8_cast" and i.get("scale_mode") == "rows")["scale_mode"] = "vec128"
elif kind == "fp8-gemm-modes":
    # A row-wise GEMM that pairs its A's rows with 128 x 128 blocks of B.
    first(step["instructions"], lambda i: i["op"] == "gemm" and "scale_modes" in i)["scale_modes"] = ["rows", "blk128"]
elif kind == "fp8-cast-before-pow2":
    # Not damage: a bundle written before fp8_cast had pow2_scales.
    for i in step["instructions"]:
        if i["op"] == "fp8_cast":
            del i["pow2_scales"]
elif kind == "fp8-vec32-cast":
    # An MXFP8 cast (1 x 32 blocks) that says its scales are 1 x 128 tiles.
    first(step["instructions"], lambda i: i["op"] == "fp8_cast" and i.get("scale_mode") == "vec32")["scale_mode"] = "vec128"
elif kind == "fp8-grouped-unscaled":
    # An expert layer's FP8 GEMM without its scales.
    g = first(step["instructions"], lambda i: i["op"] == "grouped_matmul" and i.get("has_scales"))
    g["has_scales"] = False
    g["operands"] = g["operands"][:4]
elif kind == "fp8-grouped-modes":
    # An MXFP8 expert GEMM that says its weight's scales are rows.
    first(step["instructions"], lambda i: i["op"] == "grouped_matmul" and i.get("has_scales"))["scale_modes"] = ["vec32", "rows"]
elif kind == "fp8-grouped-untransposed":
    # An expert GEMM on codes whose weight is [E, K, M] (k not contiguous).
    first(step["instructions"], lambda i: i["op"] == "grouped_matmul" and i.get("has_scales"))["transpose_rhs"] = False
elif kind == "grouped-before-fp8":
    # Not damage: expert GEMMs on values as a bundle written before they
    # had has_scales spells them.
    grouped = [i for i in step["instructions"] if i["op"] == "grouped_matmul"]
    assert grouped and not any(i["has_scales"] for i in grouped)
    for i in grouped:
        del i["has_scales"]
elif kind == "fp8-gemm-mode-name":
    first(step["instructions"], lambda i: i["op"] == "gemm" and "scale_modes" in i)["scale_modes"] = ["rows", "tiles"]
elif kind == "op":
    step["instructions"][0]["op"] = "frobnicate"
elif kind == "inputs":  # A valid bundle whose 'step' takes forward's inputs.
    step["name"], programs["forward"]["name"] = "forward", "step"
    for schedule in m["schedules"]:
        for sequence in schedule["sequences"]:
            for run in sequence["runs"]:
                run["program"] = {"step": "forward", "forward": "step"}[run["program"]]
elif kind == "fewinputs":  # 'step' declares only tokens and labels, reads 4.
    step["inputs"] = step["inputs"][:2]
elif kind == "noprog":  # No forward program (nor the schedule that runs it).
    m["programs"] = [p for p in m["programs"] if p["name"] != "forward"]
    m["schedules"] = [s for s in m["schedules"]
                      if all(r["program"] != "forward"
                             for q in s["sequences"] for r in q["runs"])]
elif kind == "meta":
    m["meta"] = 7
elif kind == "epilogue":
    first(step["instructions"], lambda i: i["op"] == "gemm" and i["epilogue"] != "none")["epilogue"] = "relu"
elif kind == "arity":  # A bias_gelu GEMM without its aux operand.
    g = first(step["instructions"], lambda i: i["op"] == "gemm" and i["epilogue"] == "bias_gelu")
    g["operands"].pop()
elif kind in ("norun", "trainforward", "notrain"):
    # The train schedule runs nothing; runs only the forward program (which
    # reports no gradient norm); is missing.
    train = first(m["schedules"], lambda s: s["name"] == "train")
    if kind == "notrain":
        m["schedules"].remove(train)
    else:
        train["sequences"][0]["runs"] = [] if kind == "norun" else [
            {"program": "forward", "microbatch": 0, "chunk": 0}]
elif kind == "hash":  # The kernel library is not the one the bundle names.
    m["kernels"]["cpu"]["xxh3"] = "0" * 32
else:
    sys.exit("unknown kind " + kind)
json.dump(m, open(path, "w"))
