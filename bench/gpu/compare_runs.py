"""Compares a GPU training run with the CPU run of the same bundle, seed and
data (weft-run --metrics and --save on each): the loss of every step and
every saved parameter, as relative errors (a tensor's largest difference
over its largest magnitude). Prints a table; exits 1 above a tolerance.

usage: compare_runs.py LOSS_TOL PARAM_TOL CPU.jsonl CPU.safetensors GPU.jsonl GPU.safetensors
"""
import json
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (path, name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], np.float32).reshape(info["shape"])
    return out


def main():
    loss_tol, param_tol = float(sys.argv[1]), float(sys.argv[2])
    cpu_steps = [json.loads(l) for l in open(sys.argv[3])]
    gpu_steps = [json.loads(l) for l in open(sys.argv[5])]
    worst = 0.0
    print("| step | CPU loss | GPU loss | relative error |")
    print("|---|---|---|---|")
    for c, g in zip(cpu_steps, gpu_steps):
        err = abs(c["loss"] - g["loss"]) / abs(c["loss"])
        worst = max(worst, err)
        print("| %d | %.6f | %.6f | %.2e |" % (c["step"], c["loss"], g["loss"], err))
    if len(cpu_steps) != len(gpu_steps) or not cpu_steps:
        print("step counts differ: %d vs %d" % (len(cpu_steps), len(gpu_steps)))
        worst = float("inf")
    cpu, gpu = read_safetensors(sys.argv[4]), read_safetensors(sys.argv[6])
    params = 0.0
    for name in cpu:
        scale = max(float(np.abs(cpu[name]).max()), 1e-12)
        err = float(np.abs(cpu[name] - gpu[name]).max()) / scale
        params = max(params, err)
    print("parameters after the last step: worst relative error %.2e over %d tensors"
          % (params, len(cpu)))
    ok = worst <= loss_tol and params <= param_tol
    print("%s: loss %.2e (tolerance %.0e), parameters %.2e (tolerance %.0e)"
          % ("PASS" if ok else "FAIL", worst, loss_tol, params, param_tol))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
