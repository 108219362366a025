"""Counts, in a weft module and its sched lowering, the ops that must map one
to one: GEMMs, attention, generated kernels and collectives."""
import re
import sys

weft = open(sys.argv[1]).read()
sched = open(sys.argv[2]).read()
pairs = [
    ("gemm", r"= weft\.matmul(_epilogue)? ", r"sched\.gemm "),
    ("attention", r"= weft\.attention(_grad)? ", r"sched\.attention(_grad)? "),
    ("kernel", r"= weft\.fused\(", r"sched\.launch "),
    ("collective", r"= weft\.(all_reduce|all_gather|reduce_scatter|all_to_all) ",
     r"sched\.collective "),
]
for name, w, s in pairs:
    print(name, len(re.findall(w, weft)), len(re.findall(s, sched)))
