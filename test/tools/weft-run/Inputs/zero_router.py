"""Copies a safetensors checkpoint with every MoE router weight zeroed.

usage: zero_router.py IN.safetensors OUT.safetensors
"""
import json
import struct
import sys

src, dst = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8 : 8 + n])
body = bytearray(data[8 + n :])
for name, info in header.items():
    if name != "__metadata__" and name.endswith("block_sparse_moe.gate.weight"):
        begin, end = info["data_offsets"]
        body[begin:end] = bytes(end - begin)
open(dst, "wb").write(data[: 8 + n] + bytes(body))
