"""A measured device profile for Weft's cost model (issue 18): fits the
GEMM efficiency curve the cost model uses (passes/costmodel/Topology.h: a
GEMM of W FLOPs runs at max * W / (W + half) of the dense bf16 peak) to
measured GEMM rates, and writes a topology file (passes/costmodel/
Topology.cpp's JSON form) that `weftc compile --topology FILE` and
`weftc plan --topology FILE` read in place of the preset's datasheet curve.

usage: fit_profile.py MEASURED.json OUT.json

MEASURED.json (bench/gpu/run.sh writes it on the device):
  {"name": "h200-measured", "device": "NVIDIA H200",
   "peak_tflops": {"bf16": 989, "fp8": 1979, "f32": 67},   (datasheet)
   "memory_gb": 141,
   "gemm": [{"m": 1024, "n": 1024, "k": 1024, "tflops": 310.5}, ...],
   "memory_bandwidth_gbps": 4100.0,            (measured: a device copy)
   "attention_tflops": 420.0,                  (optional, measured fwd)
   "intra_node": {...}, "inter_node": {...}}   (optional: the preset's)

Pure Python (no numpy), so the fit is tested here (test/tools/weftc/
gpu-profile.test) as it runs there. Prints the fit and each GEMM's
measured rate against the curve.
"""
import json
import math
import sys


def fit(points, peak):
    """(max, half_gflop) minimising the squared error of the efficiency
    max * w / (w + half) against each point's measured rate / peak, w in
    GFLOP: for each half on a fine log grid, max is the closed-form least
    squares; the best pair wins."""
    xs = [2.0 * p["m"] * p["n"] * p["k"] / 1e9 for p in points]
    es = [p["tflops"] / peak for p in points]

    def at(log_half):
        half = 10 ** log_half
        fs = [x / (x + half) for x in xs]
        top = sum(e * f for e, f in zip(es, fs)) / sum(f * f for f in fs)
        top = min(max(top, 1e-6), 1.0)
        return sum((top * f - e) ** 2 for e, f in zip(es, fs)), top, half

    # half from 1e-4 to 1e6 GFLOP in steps of 0.01 decade, then 1e-5
    # decade around the best.
    best = min((at(i / 100.0) for i in range(-400, 601)), key=lambda b: b[0])
    centre = math.log10(best[2])
    best = min((at(centre + i / 1e5) for i in range(-1000, 1001)),
               key=lambda b: b[0])
    return best[1], best[2]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    measured = json.load(open(sys.argv[1]))
    points = measured.get("gemm", [])
    if len(points) < 2:
        sys.exit("%s: needs at least two GEMM measurements ('gemm'), has %d"
                 % (sys.argv[1], len(points)))
    peak = measured["peak_tflops"]["bf16"]
    top, half = fit(points, peak)
    print("GEMM efficiency: max %.3f of %g TFLOP/s, half at %.3g GFLOP"
          % (top, peak, half))
    print("| m x n x k | GFLOP | measured TFLOP/s | curve TFLOP/s |")
    print("|---|---|---|---|")
    for p in points:
        w = 2.0 * p["m"] * p["n"] * p["k"] / 1e9
        print("| %dx%dx%d | %.3g | %.1f | %.1f |"
              % (p["m"], p["n"], p["k"], w, p["tflops"], peak * top * w / (w + half)))
    device = {
        "name": measured.get("device", "gpu"),
        "memory_gb": measured["memory_gb"],
        "memory_bandwidth_gbps": measured["memory_bandwidth_gbps"],
        "peak_tflops": measured["peak_tflops"],
        "gemm_efficiency": {"max": round(top, 4), "half_gflop": float("%.4g" % half)},
    }
    if "attention_tflops" in measured:
        # The share of the bf16 peak the fused attention forward reached.
        device["efficiency"] = {
            "attention": round(min(1.0, measured["attention_tflops"] / peak), 4)}
    topology = {
        "name": measured.get("name", "gpu-measured"),
        "nodes": 1,
        "devices_per_node": 1,
        "device": device,
        # One GPU measures no links: the preset's figures stand.
        "intra_node": measured.get("intra_node", {"bandwidth_gbps": 450, "latency_us": 2}),
        "inter_node": measured.get("inter_node", {"bandwidth_gbps": 50, "latency_us": 5}),
    }
    with open(sys.argv[2], "w") as f:
        json.dump(topology, f, indent=1)
        f.write("\n")
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()
