"""Prepares the generated-kernel check for a lent GPU, on a machine without
one: for each model, compiles its training bundle with --target cuda, runs
every fused kernel's CPU launcher (kernels.so, through ctypes) on seeded
random inputs, and writes inputs, CPU outputs and an index under OUT/<model>/
beside the bundle's cubin. bench/gpu/check_kernels.py replays them on the GPU.

usage: prepare_kernels.py WEFTC OUT [model ...]   (needs numpy)
"""
import ctypes
import json
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    weftc, out = sys.argv[1], sys.argv[2]
    models = sys.argv[3:] or ["gpt2-tiny", "llama-tiny"]
    for model in models:
        bundle = os.path.join(out, model)
        subprocess.run([weftc, "compile", "--config",
                        os.path.join(ROOT, "examples", "configs", model + ".json"),
                        "--batch", "2", "--seq", "16", "--target", "cuda",
                        "-o", bundle], check=True)
        manifest = json.load(open(os.path.join(bundle, "manifest.json")))
        source = open(os.path.join(bundle, "kernels.cu")).read()
        # Row kernels (groups holding a norm) open with their row width D.
        rows = set(re.findall(r"void (weft_k\d+)_cuda\([^)]*\) \{\n  const int64_t D", source))
        library = ctypes.CDLL(os.path.join(bundle, "kernels.so"))
        step = manifest["programs"]["step"]
        rng = np.random.default_rng(7)
        index = []
        for s in step["steps"]:
            if s["op"] != "weft.fused":
                continue
            name = s["attrs"]["kernel"]
            ins = [rng.uniform(0.5, 1.5, size=step["values"][v]["shape"]).astype(np.float32)
                   for v in s["operands"]]
            outs = [np.zeros(step["values"][v]["shape"], np.float32) for v in s["results"]]
            n = outs[0].size
            in_ptrs = (ctypes.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
            out_ptrs = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
            getattr(library, name)(in_ptrs, out_ptrs, ctypes.c_int64(n))
            for i, a in enumerate(ins):
                np.save(os.path.join(bundle, "%s.in%d.npy" % (name, i)), a)
            for i, a in enumerate(outs):
                np.save(os.path.join(bundle, "%s.out%d.npy" % (name, i)), a)
            index.append({"kernel": name, "inputs": len(ins), "outputs": len(outs),
                          "n": n, "row": name in rows,
                          "width": int(outs[0].shape[-1]) if outs[0].ndim else 1})
        json.dump(index, open(os.path.join(bundle, "kernels.json"), "w"), indent=1)
        print("%s: %d kernels prepared in %s" % (model, len(index), bundle))


if __name__ == "__main__":
    main()
