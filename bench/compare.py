"""Prints the table the CPU benchmarks share: median step and tokens/s of
Weft runs (weft-run --metrics JSONL, first two steps warm-up) and JAX runs
(jax_gpt.py / jax_moe.py JSON), each against the first JAX run.

  python3 bench/compare.py OUT BATCH SEQ TITLE LABEL=FILE ...

FILE (after the last "=") is in OUT: NAME.jsonl for Weft, NAME.json for JAX.
"""
import json
import statistics
import sys


def median_step(path):
    if path.endswith(".jsonl"):
        rows = [json.loads(line) for line in open(path)][2:]
        return statistics.median(r["step_s"] for r in rows)
    return json.load(open(path))["median_step_s"]


def main():
    out, batch, seq, title = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    runs = [arg.rsplit("=", 1) for arg in sys.argv[5:]]
    steps = [(label, median_step(f"{out}/{name}")) for label, name in runs]
    jax = next(s for (label, s), (_, name) in zip(steps, runs) if name.endswith(".json"))
    print(title)
    print(f"{'':42} {'step ms':>9} {'tokens/s':>10} {'vs JAX':>7}")
    for label, s in steps:
        print(f"{label:42} {s * 1e3:9.1f} {batch * seq / s:10.0f} {jax / s:7.2f}")


if __name__ == "__main__":
    main()
