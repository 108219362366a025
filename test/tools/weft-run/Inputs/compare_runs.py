"""Compares two weft-run results: the loss of every step (metrics JSONL) and
every tensor of the saved weights (safetensors, f32), each as the largest
absolute difference relative to the largest magnitude of the reference.

usage: compare_runs.py REF.jsonl RUN.jsonl REF.safetensors RUN.safetensors TOL
                       [PARAM_TOL]
(PARAM_TOL, default TOL, bounds the weights.) Prints one line per check and 'parity ok' or 'parity FAILED'; no numpy, so
it runs wherever lit does.
"""
import json
import struct
import sys


def losses(path):  # The steps' (--eval-data's lines have no "loss").
    return [m["loss"] for m in map(json.loads, open(path)) if "loss" in m]


def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        begin, end = info["data_offsets"]
        out[name] = struct.unpack("<%df" % ((end - begin) // 4), body[begin:end])
    return out


def main():
    ref_log, run_log, ref_w, run_w, tol = sys.argv[1:6]
    tol = float(tol)
    param_tol = float(sys.argv[6]) if len(sys.argv) > 6 else tol
    ok = True
    for path in (ref_log, run_log, ref_w, run_w):
        try:
            open(path, "rb").close()
        except OSError as e:
            print("cannot read %s: %s" % (path, e.strerror))
            print("parity FAILED")
            return 1
    a, b = losses(ref_log), losses(run_log)
    if not a or not b:
        print("no steps in %s" % (ref_log if not a else run_log))
        print("parity FAILED")
        return 1
    if len(a) != len(b):
        print("steps differ: %d vs %d" % (len(a), len(b)))
        ok = False
    worst_loss = max(abs(x - y) / abs(x) for x, y in zip(a, b))
    print("steps %d, worst loss error %.2e" % (len(a), worst_loss))
    ok &= worst_loss <= tol
    ta, tb = tensors(ref_w), tensors(run_w)
    if sorted(ta) != sorted(tb):
        print("tensor names differ")
        ok = False
    worst, worst_name = 0.0, ""
    for name in ta:
        scale = max(max(abs(v) for v in ta[name]), 1e-30)
        err = max(abs(x - y) for x, y in zip(ta[name], tb[name])) / scale
        if err > worst:
            worst, worst_name = err, name
    print("tensors %d, worst parameter error %.2e (%s)" % (len(ta), worst, worst_name))
    ok &= worst <= param_tol
    print("parity ok" if ok else "parity FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
