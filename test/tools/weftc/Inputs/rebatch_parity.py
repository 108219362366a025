"""Imports each config at 4 (and 1, 3) sequences and compares weft-rebatch's
rewrite of one size with the frontend's import at the other, as printed by
weft-opt. Prints "<config> <from>-><to> same" or "... differs" per pair."""
import subprocess
import sys

out, weftc, opt, configs = sys.argv[1:5]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


for name in sys.argv[5:]:
    config = f"{configs}/{name}.json"
    for dtype in ["f32"] + (["bf16"] if name in ("llama-tiny", "mixtral-tiny-capacity") else []):
        flags = ["--dtype", dtype, "--master-weights"] if dtype != "f32" else []
        made = {}
        for batch in (1, 3, 4):
            path = f"{out}/{name}-{dtype}-{batch}.mlir"
            run(weftc, "import", "--config", config, "--batch", str(batch),
                "--seq", "16", "-o", path, *flags)
            made[batch] = path
        for src, dst in ((4, 1), (4, 3), (1, 4)):
            rewritten = run(opt, made[src], f"-weft-rebatch=batch={dst}")
            built = run(opt, made[dst])
            verdict = "same" if rewritten == built else "differs"
            print(f"{name} {dtype} {src}->{dst} {verdict}")
