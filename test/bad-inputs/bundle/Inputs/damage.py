"""Damages a compiled bundle in one named way (its manifest.json, or a file).

usage: damage.py KIND BUNDLE_DIR
The bundle is GPT-2-tiny compiled with --batch 2 --seq 16 for the CPU. Each
KIND edits one field of the manifest (docs/bundle-format.md), writes the
manifest as raw text, or replaces a file of the bundle.
"""
import json
import os
import sys

kind, bundle = sys.argv[1:3]
path = os.path.join(bundle, "manifest.json")
m = json.load(open(path))
progs = {p["name"]: p for p in m["programs"]}
step, fwd = progs["step"], progs["forward"]
raw = None


def first(items, pred):
    return next(x for x in items if pred(x))


def instr(program, op):
    return first(program["instructions"], lambda i: i["op"] == op)


def plain_copy(program):
    """The first copy of a matrix (two sizes, offset and two strides)."""
    return first(program["instructions"],
                 lambda i: i["op"] == "copy" and len(i["sizes"]) == 2)


def alloc(program, i=0):
    return [b for b in program["buffers"] if b["kind"] == "alloc"][i]


def index_of_alloc(program, i=0):
    allocs = [n for n, b in enumerate(program["buffers"]) if b["kind"] == "alloc"]
    return allocs[i]


text = json.dumps(m)
# The manifest as a whole.
if kind == "format":
    m["format"] = "weft-bundel"
elif kind == "no-format":
    del m["format"]
elif kind == "version-string":
    m["version"] = "2"
elif kind == "version-fraction":
    m["version"] = 2.5
elif kind == "version-negative":
    m["version"] = -1
elif kind == "no-version":
    del m["version"]
elif kind == "version-twice":  # "version": 2 then "version": 3
    raw = text[:-1] + ', "version": 3}'
elif kind == "version-1e400":
    raw = text.replace('"version": 2', '"version": 1e400')
elif kind == "empty":
    raw = ""
elif kind == "not-object":
    raw = '"weft-bundle"'
elif kind == "deep":
    raw = text[:-1] + ', "x": ' + "[" * 200000 + "]" * 200000 + "}"
elif kind == "nan-literal":
    raw = text.replace('"scale": 0.25', '"scale": NaN', 1)
elif kind == "trailing":
    raw = text + " trailing"
# meta
elif kind == "no-meta":
    del m["meta"]
elif kind == "meta-batch-zero":
    m["meta"]["batch"] = 0
elif kind == "meta-batch-mismatch":
    m["meta"]["batch"] = 3
elif kind == "meta-seq-huge":
    m["meta"]["seq"] = 10**12
elif kind == "meta-vocab-zero":
    m["meta"]["vocab"] = 0
elif kind == "meta-vocab-larger":  # the model's table has 256 rows
    m["meta"]["vocab"] = 1000
elif kind == "meta-dtype":
    m["meta"]["dtype"] = "f8"
# kernels
elif kind == "no-kernels":
    del m["kernels"]
elif kind == "kernel-file-missing":
    os.remove(os.path.join(bundle, "kernels.so"))
elif kind == "kernel-file-traversal":
    m["kernels"]["cpu"]["file"] = "../../../../../../etc/passwd"
elif kind == "kernel-file-absolute":
    m["kernels"]["cpu"]["file"] = "/bin/sh"
elif kind == "kernel-hash-short":
    m["kernels"]["cpu"]["xxh3"] = "abc"
elif kind == "kernel-not-elf":  # garbage, with the hash the manifest then gives it
    so = os.path.join(bundle, "kernels.so")
    open(so, "wb").write(b"not a shared library\n")
    m["kernels"]["cpu"]["xxh3"] = "0" * 32
    json.dump(m, open(path, "w"))
    # weft-run names the hash the file has; take it from its error.
    import re
    import subprocess
    out = subprocess.run(["weft-run", bundle, "--data", so], capture_output=True, text=True).stderr
    m["kernels"]["cpu"]["xxh3"] = re.search(r"hashes to ([0-9a-f]{32})", out).group(1)
# params
elif kind == "param-shape":
    m["params"][0]["shape"] = [255, 64]
elif kind == "param-negative-shape":
    m["params"][0]["shape"] = [-256, 64]
elif kind == "param-checkpoint-rows":
    m["params"][0]["checkpoint_rows"] = 257
elif kind == "param-checkpoint-rows-scalar":
    m["params"][0]["shape"] = []
    m["params"][0]["checkpoint_rows"] = 1
elif kind == "param-checkpoint-shape":
    p = next(p for p in m["params"] if "checkpoint_shape" in p)
    p["checkpoint_shape"] = [64, 191]
elif kind == "param-init":
    m["params"][0]["init"] = "glorot"
elif kind == "param-dtype":
    m["params"][0]["dtype"] = "f64"
elif kind == "param-nan-scale":
    raw = text.replace('"scale": 0.02', '"scale": NaN', 1)
elif kind == "param-negative-scale":
    m["params"][0]["scale"] = -0.02
elif kind == "param-duplicate":
    m["params"].append(dict(m["params"][0]))
elif kind == "param-huge":
    m["params"].append({"dtype": "f32", "init": "zeros", "name": "huge", "shape": [10**7, 10**7], "state": False})
elif kind == "no-params":
    m["params"] = []
# constants
elif kind == "constant-shape":
    first(m["constants"], lambda c: "splat" in c)["shape"] = [2**40, 2**30]
elif kind == "constant-nan":
    raw = text.replace('"splat": 1}', '"splat": NaN}', 1)
elif kind == "constant-no-value":
    del first(m["constants"], lambda c: "splat" in c)["splat"]
# kernel declarations
elif kind == "decl-scalar-type":
    m["kernel_decls"][0]["scalars"] = ["i128"]
elif kind == "decl-missing":
    m["kernel_decls"] = m["kernel_decls"][1:]
elif kind == "decl-shape":
    m["kernel_decls"][0]["inputs"][0]["shape"] = [2, 16, 65]
# programs
elif kind == "no-programs":
    m["programs"] = []
elif kind == "program-twice":
    m["programs"].append(json.loads(json.dumps(fwd)))
elif kind == "arena-negative":
    fwd["arena"] = -1
elif kind == "arena-huge":  # 2^62 bytes, every buffer inside it
    fwd["arena"] = 2**62
elif kind == "arena-1e400":
    raw = text.replace('"arena": %d' % fwd["arena"], '"arena": 1e400', 1)
elif kind == "align-zero":
    fwd["align"] = 0
elif kind == "align-three":
    fwd["align"] = 3
elif kind == "events-huge":
    fwd["events"] = 2**62
elif kind == "no-streams":
    fwd["streams"] = []
elif kind == "unknown-stream":
    fwd["instructions"][0]["stream"] = "side"
# buffers
elif kind == "offset-negative":
    alloc(fwd)["offset"] = -64
elif kind == "offset-misaligned":
    alloc(fwd)["offset"] = 4
elif kind == "offset-huge":
    alloc(fwd)["offset"] = 2**63 - 64
elif kind == "buffer-shape-negative":
    alloc(fwd)["shape"] = [-2, 16, 64]
elif kind == "buffer-dtype":
    alloc(fwd)["dtype"] = "f128"
elif kind == "buffer-kind":
    alloc(fwd)["kind"] = "heap"
elif kind == "live-reversed":
    b = alloc(fwd)
    b["first"], b["last"] = b["last"], b["first"]
elif kind == "live-past-end":
    alloc(fwd)["last"] = 10**6
elif kind == "param-buffer-unknown":
    first(fwd["buffers"], lambda b: b["kind"] == "param")["name"] = "no.such.param"
elif kind == "input-index":
    first(fwd["buffers"], lambda b: b["kind"] == "input")["index"] = 7
# instructions
elif kind == "operand-negative":
    fwd["instructions"][0]["operands"][0] = -1
elif kind == "operand-missing":
    fwd["instructions"][0]["operands"].pop()
elif kind == "no-op":
    del fwd["instructions"][0]["op"]
elif kind == "gemm-mnk":  # more rows than the buffers hold
    instr(fwd, "gemm")["mnk"][0] *= 4
elif kind == "gemm-mnk-overflow":
    instr(fwd, "gemm")["mnk"] = [2**32, 2**32, 64]
elif kind == "gemm-ld":
    instr(fwd, "gemm")["ld"][0] = 1
elif kind == "gemm-batch-zero":
    instr(fwd, "gemm")["batch"] = 0
elif kind == "gemm-epilogue":
    instr(fwd, "gemm")["epilogue"] = "relu"
elif kind == "launch-grid":
    instr(fwd, "launch")["grid"] = [0, 1, 1]
elif kind == "launch-count":  # the element count scalar of a generated kernel
    instr(fwd, "launch")["scalars"] = [{"i64": 2**40}]
elif kind == "launch-count-negative":
    instr(fwd, "launch")["scalars"] = [{"i64": -1}]
elif kind == "launch-scalar-type":
    instr(fwd, "launch")["scalars"] = [{"f32": 2048}]
elif kind == "launch-kernel":
    instr(fwd, "launch")["kernel"] = "weft_k999"
elif kind == "launch-inputs":
    instr(fwd, "launch")["inputs"] += 1
elif kind == "attention-scale-nan":
    raw = text.replace('"scale": 0.25', '"scale": NaN', 1)
elif kind == "attention-algorithm":
    instr(fwd, "attention")["algorithm"] = "magic"
elif kind == "attention-positions":  # says it has positions, lists none
    instr(fwd, "attention")["has_positions"] = True
elif kind == "attention-entropy":  # says it writes an entropy, lists none
    instr(fwd, "attention")["has_entropy"] = True
elif kind == "attention-entropy-shape":  # the entropy into q's buffer
    a = instr(fwd, "attention")
    a["has_entropy"] = True
    a["operands"].insert(5, a["operands"][0])
elif kind == "attention-grad-entropy":  # only the forward writes one
    a = instr(step, "attention_grad")
    a["has_entropy"] = True
    a["operands"].insert(9, a["operands"][4])
elif kind == "sequence-chunks":  # 3 chunks cannot pair up
    fwd["inputs"][0]["sequence_chunks"] = 3
elif kind == "copy-sizes":  # copies more than its buffers hold
    plain_copy(fwd)["sizes"] = [64, 64]
elif kind == "copy-strides":
    plain_copy(fwd)["src"] = [0, -64, 1]
elif kind == "reduce-dims":
    instr(step, "reduce")["dims"] = [0, 9]
elif kind == "ce-ignore-index":
    instr(fwd, "cross_entropy")["ignore_index"] = 2**40
elif kind == "epsilon-negative":
    instr(step, "layer_norm_grad")["epsilon"] = -1.0
elif kind == "extra-field":
    fwd["instructions"][0]["frobnicate"] = 1
# outputs, assigns, schedules
elif kind == "no-loss-output":
    step["outputs"] = [o for o in step["outputs"] if o["name"] != "loss"]
elif kind == "output-buffer":
    step["outputs"][0]["buffer"] = 10**6
elif kind == "assign-unknown":
    step["assigns"][0]["param"] = "no.such.param"
elif kind == "assign-twice":
    step["assigns"].append(dict(step["assigns"][0]))
elif kind == "no-schedules":
    m["schedules"] = []
elif kind == "schedule-program":
    m["schedules"][0]["sequences"][0]["runs"][0]["program"] = "nothing"
elif kind == "schedule-microbatches":
    m["schedules"][0]["microbatches"] = 0
else:
    sys.exit("unknown kind " + kind)

with open(path, "w") as f:
    f.write(json.dumps(m) if raw is None else raw)
