"""Rewrites one line of a planned sched module in a named way, for sched.test.

usage: sched_mutate.py KIND IN.mlir OUT.mlir
IN is `weftc compile tiny.mlir --emit=sched` of Inputs/tiny.mlir (a 16-row
embedding and its tied LM head, batch 1, seq 4); each KIND replaces the
first match of a regular expression in it.
"""
import re
import sys

kind, src, out = sys.argv[1:4]
text = open(src).read()
GEMM = r"mnk \[4, 16, 8\] batch 1 ld \[8, 8, 16\]"
M = {
    "gemm-k": (GEMM, "mnk [4, 16, 9] batch 1 ld [8, 8, 16]"),
    "gemm-zero": (GEMM, "mnk [0, 16, 8] batch 1 ld [8, 8, 16]"),
    "gemm-ld": (GEMM, "mnk [4, 16, 8] batch 1 ld [1, 8, 16]"),
    "gemm-batch-zero": (GEMM, "mnk [4, 16, 8] batch 0 ld [8, 8, 16]"),
    "gemm-batch-negative": (GEMM, "mnk [4, 16, 8] batch -3 ld [8, 8, 16]"),
    "gemm-huge": (GEMM, "mnk [4611686018427387904, 16, 8] batch 1 ld [8, 8, 16]"),
    "gemm-stride-negative": (r"strides \[0, 0, 128\]", "strides [-9223372036854775808, 0, 128]"),
    "alloc-live-reversed": (r"(sched.alloc offset\(\d+\)) live\(0, 1\)", r"\1 live(1, 0)"),
    "alloc-offset-huge": (r"sched.alloc offset\(\d+\) live\(0, 1\)", "sched.alloc offset(9223372036854775744) live(0, 1)"),
    "alloc-misaligned": (r"sched.alloc offset\(\d+\) live\(0, 1\)", "sched.alloc offset(4) live(0, 1)"),
    "arena-negative": (r"sched.program @forward arena\(\d+\)", "sched.program @forward arena(-384)"),
    "arena-small": (r"sched.program @forward arena\(\d+\)", "sched.program @forward arena(8)"),
    "align-three": (r"(sched.program @forward arena\(\d+\)) align\(64\)", r"\1 align(3)"),
    "no-streams": (r'(sched.program @forward .*) streams \["compute"\]', r"\1 streams []"),
    "stream-twice": (r'(sched.program @forward .*) streams \["compute"\]', r'\1 streams ["compute", "compute"]'),
    "launch-unknown": (r"sched.launch @weft_k0 ", "sched.launch @weft_k99 "),
    "launch-grid-zero": (r"(sched.launch @weft_k0) grid \[1, 1, 1\]", r"\1 grid [0, 1, 1]"),
    "launch-block": (r"(sched.launch @weft_k0 grid \[1, 1, 1\]) block \d+", r"\1 block 2048"),
    "get-unknown": (r"sched.get @w :", "sched.get @nothing :"),
    "get-type": (r"sched.get @w : <16x8xf32>", "sched.get @w : <8x16xf32>"),
    "assign-constant": (r"sched.assign @w = ", "sched.assign @const0 = "),
    "return-twice": (r'sched.return \["loss", "grad_norm"\]', 'sched.return ["loss", "loss"]'),
    "return-count": (r'sched.return \["loss", "grad_norm"\]', 'sched.return ["loss"]'),
    "view-outside": (r"(sched.view %\d+)\[0\] : <1x4x8xf32> to <4x8xf32>", r"\1[64] : <1x4x8xf32> to <4x8xf32>"),
    "view-misaligned": (r"(sched.view %\d+)\[0\] : <1x4x8xf32> to <4x8xf32>", r"\1[2] : <1x4x8xf32> to <4x8xf32>"),
    "run-unknown": (r"sched.run @step microbatch\(0\)", "sched.run @nostep microbatch(0)"),
    "run-microbatch": (r"sched.run @step microbatch\(0\)", "sched.run @step microbatch(5)"),
    "microbatches-zero": (r"sched.schedule @train microbatches\(1\)", "sched.schedule @train microbatches(0)"),
    "param-split-no-mesh": (r"sched.param @w init\(normal, 2.000000e-02\) :", 'sched.param @w init(normal, 2.000000e-02) {split = [["dp"], []]} :'),
    "param-int": (r"sched.param @w init\(normal, 2.000000e-02\) : !sched.buffer<16x8xf32>", "sched.param @w init(normal, 2.000000e-02) : !sched.buffer<16x8xi32>"),
    "param-zeros-scale": (r"sched.param @w init\(normal, 2.000000e-02\)", "sched.param @w init(zeros, 2.000000e-02)"),
    "param-nan-scale": (r"sched.param @w init\(normal, 2.000000e-02\)", "sched.param @w init(normal, 0x7FF8000000000000)"),
    "param-negative-scale": (r"sched.param @w init\(normal, 2.000000e-02\)", "sched.param @w init(normal, -2.0)"),
    "buffer-overflow": (r"(sched.param @w init)", r"sched.param @z init(zeros) : !sched.buffer<4294967296x4294967296xf32>\n  \1"),
    "buffer-f64": (r"(sched.param @w init)", r"sched.param @z init(zeros) : !sched.buffer<4xf64>\n  \1"),
    "mesh-zero": (r"(sched.param @w init)", r'sched.mesh @mesh axes ["dp"] sizes [0]\n  \1'),
    "mesh-twice": (r"(sched.param @w init)", r'sched.mesh @mesh axes ["dp", "dp"] sizes [2, 2]\n  \1'),
    "mesh-overflow": (r"(sched.param @w init)", r'sched.mesh @mesh axes ["dp", "tp"] sizes [4294967296, 4294967296]\n  \1'),
    "reduce-dims": (r"(sched.reduce sum %\d+ -> %\d+) dims \[0, 1\]", r"\1 dims [0, 7]"),
    "kernel-body": (r"weft.add %arg2, %arg3 : tensor<16x8xf32>", "weft.exp %arg2 : tensor<16x8xf32>, tensor<16x8xf32>"),
}
pattern, repl = M[kind]
new, n = re.subn(pattern, repl, text, count=1)
if n != 1:
    sys.exit("kind %s: pattern not found" % kind)
open(out, "w").write(new)
