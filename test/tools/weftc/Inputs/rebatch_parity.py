"""Imports each config at 4 (and 1, 3) sequences and compares weft-rebatch's
rewrite of one size with the frontend's import at the other, as printed by
weft-opt. Prints "<config> <from>-><to> same" or "... differs" per pair."""
import subprocess
import sys

out, weftc, opt, configs = sys.argv[1:5]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


# (config, dtype, seq): bf16 with master weights for two; a capacity-limited
# expert also at 10 tokens a sequence, where its capacity per sequence is
# not whole (0.75 x 20 pairs / 4 experts), so scaling the capacity would
# not give the frontend's.
cases = [(name, "f32", 16) for name in sys.argv[5:]]
cases += [("llama-tiny", "bf16", 16), ("mixtral-tiny-capacity", "bf16", 16),
          ("mixtral-tiny-capacity", "f32", 10)]
for name, dtype, seq in cases:
    config = f"{configs}/{name}.json"
    flags = ["--dtype", dtype, "--master-weights"] if dtype != "f32" else []
    made = {}
    for batch in (1, 3, 4):
        path = f"{out}/{name}-{dtype}-{seq}-{batch}.mlir"
        run(weftc, "import", "--config", config, "--batch", str(batch),
            "--seq", str(seq), "-o", path, *flags)
        made[batch] = path
    for src, dst in ((4, 1), (4, 3), (1, 4)):
        rewritten = run(opt, made[src], f"-weft-rebatch=batch={dst}")
        built = run(opt, made[dst])
        verdict = "same" if rewritten == built else "differs"
        print(f"{name} {dtype} seq {seq} {src}->{dst} {verdict}")
