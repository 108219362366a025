"""Writes a weft dataset of byte tokens: make_dataset.py TEXT DIR SHARDS
[DTYPE]. TEXT's bytes as uint16 (or uint32) ids, cut into SHARDS shards of
about equal size, with dataset.json (vocab 256)."""
import json
import os
import struct
import sys

text, out, shards = open(sys.argv[1], "rb").read(), sys.argv[2], int(sys.argv[3])
dtype = sys.argv[4] if len(sys.argv) > 4 else "uint16"
os.makedirs(out, exist_ok=True)
size = (len(text) + shards - 1) // shards
entries = []
for s in range(shards):
    part = text[s * size:(s + 1) * size]
    name = f"shard-{s:05d}.bin"
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<%d%s" % (len(part), "H" if dtype == "uint16" else "I"), *part))
    entries.append({"file": name, "tokens": len(part)})
json.dump({"format": "weft-dataset", "version": 1, "dtype": dtype, "vocab": 256,
           "eos": 10, "shards": entries}, open(os.path.join(out, "dataset.json"), "w"), indent=1)
