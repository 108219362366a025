"""Replays the prepared kernel checks (bench/gpu/prepare_kernels.py) on the
GPU: loads each model's cubin with CuPy, launches every kernel as the CUDA
runtime will (element kernels: 256 threads, grid-stride; row kernels: one
256-thread block per row) and compares with the CPU outputs.

usage: check_kernels.py DIR [model ...]   (needs cupy and numpy)
Prints a line per model and exits non-zero on any mismatch.
"""
import json
import os
import sys

import cupy as cp
import numpy as np


def main():
    root = sys.argv[1]
    models = sys.argv[2:] or ["gpt2-tiny", "llama-tiny"]
    arch = "sm_" + cp.cuda.Device().compute_capability
    failed = False
    for model in models:
        bundle = os.path.join(root, model)
        module = cp.RawModule(path=os.path.join(bundle, "kernels.%s.cubin" % arch))
        worst, count = 0.0, 0
        for k in json.load(open(os.path.join(bundle, "kernels.json"))):
            name = k["kernel"]
            ins = [cp.asarray(np.load(os.path.join(bundle, "%s.in%d.npy" % (name, i))))
                   for i in range(k["inputs"])]
            want = [np.load(os.path.join(bundle, "%s.out%d.npy" % (name, i)))
                    for i in range(k["outputs"])]
            outs = [cp.zeros(w.shape, cp.float32) for w in want]
            n = k["n"]
            grid = n // k["width"] if k["row"] else min((n + 255) // 256, 4096)
            module.get_function(name + "_cuda")((grid,), (256,),
                                                (*ins, *outs, np.int64(n)))
            cp.cuda.Device().synchronize()
            for got, w in zip(outs, want):
                err = float(np.max(np.abs(cp.asnumpy(got) - w) / (1 + np.abs(w))))
                worst = max(worst, err)
            count += 1
        ok = worst <= 1e-6
        failed |= not ok
        print("%s: %d kernels on %s, worst relative error %.2e: %s"
              % (model, count, arch, worst, "ok" if ok else "MISMATCH"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
