"""Compares two safetensors files tensor by tensor.

same_tensors.py A B: prints the tensor counts, whether both hold the same
names, and whether every tensor has the same shape, dtype and bytes (no
numpy, so it runs wherever lit does).
"""
import json
import struct
import sys


def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    return {
        name: (info["shape"], info["dtype"],
               body[info["data_offsets"][0]:info["data_offsets"][1]])
        for name, info in header.items() if name != "__metadata__"
    }


a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
print(len(a), len(b), sorted(a) == sorted(b),
      "same bytes" if all(a[k] == b.get(k) for k in a) else "DIFFERENT")
