"""Writes small safetensors files, valid and damaged, for weftc eval tests.

usage: make_safetensors.py MODE OUT
"""
import json
import struct
import sys


def write(path, header, data, header_len=None):
    text = json.dumps(header).encode()
    length = len(text) if header_len is None else header_len
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", length) + text + data)


def tensor(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


mode, out = sys.argv[1], sys.argv[2]
f32 = lambda n: struct.pack("<%df" % n, *([0.0] * n))
if mode == "header-too-long":
    write(out, {}, b"", header_len=1 << 20)
elif mode == "truncated":
    write(out, {"a": tensor("F32", [4], 0, 16)}, f32(2))
elif mode == "overlap":
    write(out, {"a": tensor("F32", [2], 0, 8), "b": tensor("F32", [2], 4, 12)}, f32(3))
elif mode == "size-mismatch":
    write(out, {"a": tensor("F32", [3], 0, 8)}, f32(2))
elif mode == "bad-dtype":
    write(out, {"a": tensor("F33", [2], 0, 8)}, f32(2))
elif mode == "wrong-shape":
    write(out, {"transformer.wte.weight": tensor("F32", [10, 64], 0, 2560)}, f32(640))
elif mode == "wrong-dtype":
    write(out, {"transformer.wte.weight": tensor("BF16", [256, 64], 0, 32768)},
          b"\0" * 32768)
elif mode == "missing":
    write(out, {"unrelated": tensor("F32", [2], 0, 8)}, f32(2))
elif mode == "not-json":
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", 5) + b"{oops")
else:
    sys.exit("unknown mode " + mode)
