"""Writes a safetensors file damaged in one named way, from a good checkpoint.

usage: damage.py KIND GOOD.safetensors OUT
The good file is what `weft-run --save` writes for GPT-2-tiny; each KIND
changes the 8-byte header length, the JSON header or the data region.
"""
import json
import math
import struct
import sys

kind, good, out = sys.argv[1:4]
blob = open(good, "rb").read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8:8 + n])
data = bytearray(blob[8 + n:])
tensors = {k: v for k, v in header.items() if k != "__metadata__"}
by_offset = sorted(tensors, key=lambda k: tensors[k]["data_offsets"][0])
WTE = "transformer.wte.weight"
LN = "transformer.ln_f.bias"  # [64], F32
raw = None  # bytes of the whole file, when a kind writes it directly
text = None  # header text, when a kind writes it as is


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def put(name, values):
    b, e = tensors[name]["data_offsets"]
    data[b:e] = f32(values)


if kind == "empty":
    raw = b""
elif kind == "short-length":  # fewer than the 8 bytes of the header length
    raw = blob[:5]
elif kind == "length-max":  # 2^64 - 1
    raw = struct.pack("<Q", 2**64 - 1) + blob[8:]
elif kind == "length-2-pow-63":
    raw = struct.pack("<Q", 2**63) + blob[8:]
elif kind == "length-zero":
    raw = struct.pack("<Q", 0) + blob[8:]
elif kind == "length-past-end":
    raw = struct.pack("<Q", len(blob)) + blob[8:]
elif kind == "length-short":  # the length cuts the JSON short
    raw = struct.pack("<Q", n - 10) + blob[8:]
elif kind == "header-only":  # the data region is missing
    raw = blob[:8 + n]
elif kind == "truncated-data":
    raw = blob[:len(blob) - 1000]
elif kind == "not-json":
    text = "{this is not json"
elif kind == "json-array":
    text = "[1, 2, 3]"
elif kind == "json-string":
    text = '"tensors"'
elif kind == "json-trailing":
    text = json.dumps(header) + " garbage"
elif kind == "json-nul":
    text = json.dumps(header)[:-1] + ', "x\u0000": 1}'
elif kind == "not-utf8":
    text = None
    hb = json.dumps(header).encode()[:-1] + b', "\xff\xfe": {}}'
    raw = struct.pack("<Q", len(hb)) + hb + bytes(data)
elif kind == "deep":
    d = 100000
    text = json.dumps(header)[:-1] + ', "deep": ' + "[" * d + "]" * d + "}"
elif kind == "entry-not-object":
    header[LN] = 7
elif kind == "entry-array":
    header[LN] = [1, 2]
elif kind == "no-dtype":
    del header[LN]["dtype"]
elif kind == "no-shape":
    del header[LN]["shape"]
elif kind == "no-offsets":
    del header[LN]["data_offsets"]
elif kind == "dtype-unknown":
    header[LN]["dtype"] = "F33"
elif kind == "dtype-lowercase":
    header[LN]["dtype"] = "f32"
elif kind == "dtype-number":
    header[LN]["dtype"] = 32
elif kind == "dtype-empty":
    header[LN]["dtype"] = ""
elif kind == "shape-negative":
    header[LN]["shape"] = [-64]
elif kind == "shape-string":
    header[LN]["shape"] = ["64"]
elif kind == "shape-float":
    header[LN]["shape"] = [64.5]
elif kind == "shape-not-array":
    header[LN]["shape"] = 64
elif kind == "shape-overflow":  # 2^96 elements
    header[LN]["shape"] = [2**32, 2**32, 2**32]
elif kind == "shape-int64-max":
    header[LN]["shape"] = [2**63 - 1]
elif kind == "shape-too-big-for-int":
    header[LN]["shape"] = [2**64]
elif kind == "shape-rank-65":
    header[LN]["shape"] = [1] * 64 + [64]
elif kind == "offsets-reversed":
    b, e = header[LN]["data_offsets"]
    header[LN]["data_offsets"] = [e, b]
elif kind == "offsets-negative":
    header[LN]["data_offsets"] = [-256, 0]
elif kind == "offsets-float":
    b, e = header[LN]["data_offsets"]
    header[LN]["data_offsets"] = [b + 0.5, e]
elif kind == "offsets-three":
    header[LN]["data_offsets"] = header[LN]["data_offsets"] + [0]
elif kind == "offsets-string":
    header[LN]["data_offsets"] = [str(x) for x in header[LN]["data_offsets"]]
elif kind == "offsets-huge":
    header[LN]["data_offsets"] = [2**64 - 256, 2**64]
elif kind == "offsets-wrap":  # end - begin wraps to the right size
    header[LN]["data_offsets"] = [2**64 - 128, 128]
elif kind == "overlap":
    first, second = by_offset[0], by_offset[1]
    b, e = tensors[second]["data_offsets"]
    tensors[second]["data_offsets"] = [b - 4, e - 4]
elif kind == "gap":  # 4 unused bytes before the last tensor
    last = by_offset[-1]
    b, e = tensors[last]["data_offsets"]
    tensors[last]["data_offsets"] = [b + 4, e + 4]
    data += b"\0" * 4
elif kind == "trailing-data":  # bytes after the last tensor
    data += b"\0" * 64
elif kind == "size-mismatch":
    header[LN]["shape"] = [63]
elif kind == "duplicate-name":  # the same tensor name twice in the JSON
    entry = json.dumps(header[LN])
    text = json.dumps(header)[:-1] + ', "%s": %s}' % (LN, entry)
elif kind == "wrong-shape":  # a valid file whose tensor has another shape
    b, e = tensors[LN]["data_offsets"]
    tensors[LN]["shape"] = [8, 8]
elif kind == "transposed":  # Conv1D [in, out] written as nn.Linear [out, in]
    name = "transformer.h.0.attn.c_attn.weight"
    tensors[name]["shape"] = tensors[name]["shape"][::-1]
elif kind == "wrong-dtype":  # F32 bytes relabelled as I32
    header[LN]["dtype"] = "I32"
elif kind == "bf16":  # the whole checkpoint in BF16
    new, out_data = {}, bytearray()
    for name in by_offset:
        b, e = tensors[name]["data_offsets"]
        vals = struct.unpack("<%df" % ((e - b) // 4), data[b:e])
        start = len(out_data)
        out_data += b"".join(struct.pack("<f", v)[2:] for v in vals)
        new[name] = {"dtype": "BF16", "shape": tensors[name]["shape"], "data_offsets": [start, len(out_data)]}
    header, data = new, out_data
elif kind == "missing-tensor":
    del header[LN]
elif kind == "renamed-tensor":
    header["transformer.ln_f.bais"] = header.pop(LN)
elif kind == "no-tensors":
    header = {"__metadata__": header.get("__metadata__", {})}
    data = bytearray()
elif kind == "metadata-not-object":
    header["__metadata__"] = [1, 2]
elif kind == "metadata-number-value":
    header["__metadata__"] = {"format": 7}
elif kind == "nan":
    put(LN, [float("nan")] * 64)
elif kind == "inf":
    put(WTE, [math.inf] + [0.0] * (256 * 64 - 1))
elif kind == "nan-one":  # a single NaN in the embedding
    b, e = tensors[WTE]["data_offsets"]
    data[b + 400:b + 404] = f32([float("nan")])
elif kind == "huge-values":  # finite, but 3e38 everywhere
    b, e = tensors[WTE]["data_offsets"]
    data[b:e] = f32([3e38] * ((e - b) // 4))
elif kind == "extra-tensor":  # an extra tensor, valid: ignored
    header["unused.weight"] = {"dtype": "F32", "shape": [2], "data_offsets": [len(data), len(data) + 8]}
    data += f32([1.0, 2.0])
elif kind == "no-prefix":  # OpenAI's layout without 'transformer.': valid
    header = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in header.items()}
else:
    sys.exit("unknown kind " + kind)

if raw is None:
    if text is None:
        text = json.dumps(header)
    hb = text.encode("utf-8", "surrogatepass")
    raw = struct.pack("<Q", len(hb)) + hb + bytes(data)
open(out, "wb").write(raw)
