"""Damages one checkpoint step directory in one named way.

usage: damage.py KIND STEP_DIR [RANK]
STEP_DIR is a step-<N>/ directory `weft-run --checkpoint-dir` wrote
(index.json, rank-<r>.json, rank-<r>.safetensors, rank-<r>.done); RANK
(default 0) picks the rank whose table or shard a KIND edits. Each KIND
edits one field of index.json or of the rank's table, writes one of them
as raw text, or edits (or removes) the rank's safetensors shard. Two kinds
(shard-dtype-bf16, nan-rehash) also put the damaged bytes' xxHash64 into
the table, so that only the damage itself is wrong. The format:
runtime/checkpoint/Checkpoint.h, CheckpointIndex.h.
"""
import json
import math
import os
import struct
import sys

kind, step = sys.argv[1:3]
rank = int(sys.argv[3]) if len(sys.argv) > 3 else 0
index_path = os.path.join(step, "index.json")
table_path = os.path.join(step, "rank-%d.json" % rank)
shard_path = os.path.join(step, "rank-%d.safetensors" % rank)
WTE = "transformer.wte.weight"  # [256, 64] f32: every plan of GPT-2-tiny has it
LNF = "transformer.ln_f.bias"  # [64] f32
ATTN = "transformer.h.0.attn.c_attn.bias"  # [3, 64], checkpoint_shape [192]


# --- xxHash64 (seed 0), what the rank tables hold of each tensor's bytes.
M64 = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F,
                      0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                      0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc, lane):
    return (_rotl((acc + lane * P2) & M64, 31) * P1) & M64


def _merge(acc, v):
    return ((acc ^ _round(0, v)) * P1 + P4) & M64


def xxh64(data):
    n, i = len(data), 0
    if n >= 32:
        v = [(P1 + P2) & M64, P2, 0, (-P1) & M64]
        lanes = struct.unpack_from("<%dQ" % (n // 32 * 4), data)
        for j in range(0, len(lanes), 4):
            v = [_round(v[k], lanes[j + k]) for k in range(4)]
        i = n // 32 * 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) +
             _rotl(v[3], 18)) & M64
        for x in v:
            h = _merge(h, x)
    else:
        h = P5
    h = (h + n) & M64
    while i + 8 <= n:
        (lane,) = struct.unpack_from("<Q", data, i)
        h = (_rotl(h ^ _round(0, lane), 27) * P1 + P4) & M64
        i += 8
    if i + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, i)
        h = (_rotl(h ^ (lane * P1 & M64), 23) * P2 + P3) & M64
        i += 4
    while i < n:
        h = (_rotl(h ^ (data[i] * P5 & M64), 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    h ^= h >> 32
    return "%016x" % h


# --- The files, read.
index = json.load(open(index_path)) if os.path.exists(index_path) else None
table = json.load(open(table_path)) if os.path.exists(table_path) else None


def read_shard():
    blob = open(shard_path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + n]), bytearray(blob[8 + n:])


def write_shard(header, data):
    text = json.dumps(header).encode()
    open(shard_path, "wb").write(struct.pack("<Q", len(text)) + text + data)


def rehash(header, data, name):
    b, e = header[name]["data_offsets"]
    table[name]["xxh64"] = xxh64(bytes(data[b:e]))


raw_index = raw_table = None  # text written as is
write_index = write_table = False

# --- What is missing.
if kind == "no-index":
    os.remove(index_path)
elif kind == "index-dir":  # a directory where index.json should be
    os.remove(index_path)
    os.mkdir(index_path)
elif kind == "no-table":
    os.remove(table_path)
elif kind == "table-dir":
    os.remove(table_path)
    os.mkdir(table_path)
elif kind == "no-shard":
    os.remove(shard_path)
elif kind == "shard-dir":
    os.remove(shard_path)
    os.mkdir(shard_path)

# --- index.json as text.
elif kind == "index-empty":
    raw_index = ""
elif kind == "index-not-json":
    raw_index = "{this is not json"
elif kind == "index-array":
    raw_index = "[1, 2, 3]"
elif kind == "index-trailing":
    raw_index = json.dumps(index) + " garbage"
elif kind == "index-deep":
    raw_index = json.dumps(index)[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}"
elif kind == "index-duplicate-key":  # "step" twice: which one would count?
    raw_index = json.dumps(index)[:-1] + ', "step": 1}'
elif kind == "index-nan":
    raw_index = json.dumps(index).replace('"step": %d' % index["step"], '"step": NaN')
elif kind == "index-step-1e400":
    raw_index = json.dumps(index).replace('"step": %d' % index["step"], '"step": 1e400')
elif kind == "index-huge":  # past the 1 MiB index.json may have
    index["padding"] = "x" * (2 << 20)
    write_index = True
# --- index.json's fields.
elif kind == "index-format":
    index["format"] = "weft-checkpoint-9"
    write_index = True
elif kind == "index-no-format":
    del index["format"]
    write_index = True
elif kind == "index-step-negative":
    index["step"] = -3
    write_index = True
elif kind == "index-step-string":
    index["step"] = str(index["step"])
    write_index = True
elif kind == "index-step-fraction":
    index["step"] = index["step"] + 0.5
    write_index = True
elif kind == "index-no-step":
    del index["step"]
    write_index = True
elif kind == "index-step-other":  # index.json of step 3 says 7
    index["step"] = 7
    write_index = True
elif kind == "index-ranks-zero":
    index["ranks"] = 0
    write_index = True
elif kind == "index-ranks-more":  # one rank more than wrote the checkpoint
    index["ranks"] = index["ranks"] + 1
    write_index = True
elif kind == "index-ranks-fewer":
    index["ranks"] = index["ranks"] - 1
    write_index = True
elif kind == "index-ranks-huge":
    index["ranks"] = 2**62
    write_index = True
elif kind == "index-bundle-number":
    index["bundle"] = 12345
    write_index = True
elif kind == "index-bundle-other":  # another bundle's hash: read as resharded
    index["bundle"] = "0" * 32
    write_index = True
elif kind == "index-no-run":
    del index["run"]
    write_index = True
elif kind == "index-run-array":
    index["run"] = list(index["run"].items())
    write_index = True
elif kind == "index-run-number":  # a run fact that is not a string
    index["run"]["--seed"] = 1
    write_index = True
elif kind == "index-run-no-seed":
    del index["run"]["--seed"]
    write_index = True
elif kind == "index-run-batch":
    index["run"]["global batch"] = "4x16"
    write_index = True

# --- rank-<r>.json as text.
elif kind == "table-empty":
    raw_table = ""
elif kind == "table-not-json":
    raw_table = json.dumps(table)[:-1]
elif kind == "table-array":
    raw_table = "[]"
elif kind == "table-deep":
    raw_table = json.dumps(table)[:-1] + ', "x": ' + "{\"a\": " * 100000 + "1" + "}" * 100000 + "}"
elif kind == "table-duplicate-key":  # the first entry again, with a wrong hash
    first = next(iter(table))
    raw_table = json.dumps(table)[:-1] + ', %s: %s}' % (
        json.dumps(first), json.dumps(dict(table[first], xxh64="0" * 16)))
# --- a tensor's entry.
elif kind == "entry-not-object":
    table[WTE] = [256, 64]
    write_table = True
elif kind == "entry-missing":  # the table lacks a tensor the shard holds
    del table[WTE]
    write_table = True
elif kind == "xxh64-short":
    table[WTE]["xxh64"] = table[WTE]["xxh64"][:8]
    write_table = True
elif kind == "xxh64-number":
    table[WTE]["xxh64"] = 1234
    write_table = True
elif kind == "xxh64-missing":
    del table[WTE]["xxh64"]
    write_table = True
elif kind == "xxh64-not-hex":
    table[WTE]["xxh64"] = "z" * 16
    write_table = True
elif kind == "xxh64-other":  # a table whose hash disagrees with the bytes
    h = table[WTE]["xxh64"]
    table[WTE]["xxh64"] = h[:-1] + ("0" if h[-1] != "0" else "1")
    write_table = True
elif kind == "shape-missing":
    del table[WTE]["shape"]
    write_table = True
elif kind == "global-shape-missing":
    del table[WTE]["global_shape"]
    write_table = True
elif kind == "start-missing":
    del table[WTE]["start"]
    write_table = True
elif kind == "shape-string":
    table[WTE]["shape"] = "256x64"
    write_table = True
elif kind == "shape-zero":
    table[WTE]["shape"] = [0, 64]
    write_table = True
elif kind == "shape-fraction":
    table[WTE]["shape"] = [256, 64.5]
    write_table = True
elif kind == "start-negative":
    table[WTE]["start"] = [-1, 0]
    write_table = True
elif kind == "shape-rank-9":
    table[WTE]["shape"] = [1] * 9
    write_table = True
elif kind == "shape-lengths":  # shape of rank 3, global_shape and start of rank 2
    table[WTE]["shape"] = [256, 64, 1]
    write_table = True
elif kind == "block-past-end":  # start 1 of 256 rows, 256 long
    table[WTE]["start"] = [1, 0]
    write_table = True
elif kind == "sizes-overflow":  # 2^40 x 2^40: the product overflows 2^62 and int64
    table[WTE]["shape"] = [2**40, 2**40]
    table[WTE]["global_shape"] = [2**40, 2**40]
    write_table = True
elif kind == "sizes-2-pow-64":
    table[WTE]["global_shape"] = [2**64, 64]
    write_table = True
elif kind == "table-shape-other":  # the table's block is half the stored one
    table[WTE]["shape"] = [128, 64]
    write_table = True
elif kind == "rows-zero":
    table[WTE]["rows"] = 0
    write_table = True
elif kind == "rows-past-end":
    table[WTE]["rows"] = 257
    write_table = True
elif kind == "rows-string":
    table[WTE]["rows"] = "256"
    write_table = True
elif kind == "rows-fewer":  # a consolidated checkpoint would keep 255 rows
    table[WTE]["rows"] = 255
    write_table = True
elif kind == "checkpoint-shape-count":  # [192] -> [191]
    table[ATTN]["checkpoint_shape"] = [191]
    write_table = True
elif kind == "checkpoint-shape-other":  # [192] -> [64, 3]: the same count
    table[ATTN]["checkpoint_shape"] = [64, 3]
    write_table = True
elif kind == "checkpoint-shape-negative":
    table[ATTN]["checkpoint_shape"] = [-192]
    write_table = True
elif kind == "stack-no-star":
    table[WTE]["stack"] = "transformer.wte.weight.0"
    write_table = True
elif kind == "stack-two-stars":
    table[WTE]["stack"] = "transformer.*.wte.*"
    write_table = True
elif kind == "stack-rank-1":  # a [64] tensor cannot be stacked slices
    table[LNF]["stack"] = "transformer.ln_f.*.bias"
    write_table = True
elif kind == "state-string":
    table[WTE + ".exp_avg"]["state"] = "yes"
    write_table = True
elif kind == "global-shape-other":  # another model's table: 512 rows
    table[WTE]["global_shape"] = [512, 64]
    write_table = True
elif kind == "start-duplicate":  # this rank's block said to start where rank 0's does
    table[WTE]["start"] = [0] * len(table[WTE]["start"])
    write_table = True

# --- rank-<r>.safetensors.
elif kind == "flip-byte":  # one bit of a tensor's data, the table left alone
    header, data = read_shard()
    b, e = header[WTE]["data_offsets"]
    data[(b + e) // 2] ^= 0x01
    write_shard(header, data)
elif kind == "flip-moment":  # the same in Adam's second moment of it
    header, data = read_shard()
    b, e = header[WTE + ".exp_avg_sq"]["data_offsets"]
    data[b] ^= 0x80
    write_shard(header, data)
elif kind == "truncate":
    blob = open(shard_path, "rb").read()
    open(shard_path, "wb").write(blob[:len(blob) // 2])
elif kind == "shard-empty":
    open(shard_path, "wb").write(b"")
elif kind == "shard-append":  # bytes after the last tensor
    open(shard_path, "ab").write(b"\0" * 64)
elif kind == "shard-header-length":  # the 8-byte length says 2^63
    blob = open(shard_path, "rb").read()
    open(shard_path, "wb").write(struct.pack("<Q", 2**63) + blob[8:])
elif kind == "shard-header-not-json":
    header, data = read_shard()
    text = b"{" + json.dumps(header).encode()[2:]
    open(shard_path, "wb").write(struct.pack("<Q", len(text)) + text + data)
elif kind == "shard-shape-lie":  # [256, 64] said to be [64, 256]: the same bytes
    header, data = read_shard()
    header[WTE]["shape"] = [64, 256]
    write_shard(header, data)
elif kind == "shard-dtype-lie":  # F32 said to be I32: the same bytes
    header, data = read_shard()
    header[WTE]["dtype"] = "I32"
    write_shard(header, data)
elif kind == "shard-dtype-bf16":  # written as bf16 (half the bytes), rehashed
    header, data = read_shard()
    b, e = header[WTE]["data_offsets"]
    vals = struct.unpack("<%dI" % ((e - b) // 4), bytes(data[b:e]))
    half = struct.pack("<%dH" % len(vals), *[v >> 16 for v in vals])
    shift = (e - b) - len(half)
    data[b:e] = half
    header[WTE] = {"dtype": "BF16", "shape": header[WTE]["shape"],
                   "data_offsets": [b, b + len(half)]}
    for name, t in header.items():
        if name != "__metadata__" and t["data_offsets"][0] >= e:
            t["data_offsets"] = [t["data_offsets"][0] - shift, t["data_offsets"][1] - shift]
    write_shard(header, data)
    rehash(header, data, WTE)
    write_table = True
elif kind == "shard-renamed":  # the shard names the tensor otherwise
    header, data = read_shard()
    header[WTE + "_renamed"] = header.pop(WTE)
    write_shard(header, data)
elif kind == "shard-duplicate-key":
    header, data = read_shard()
    text = json.dumps(header)[:-1] + ', %s: %s}' % (json.dumps(WTE), json.dumps(header[WTE]))
    text = text.encode()
    open(shard_path, "wb").write(struct.pack("<Q", len(text)) + text + data)
elif kind == "nan-rehash":
    # Element 100 of transformer.wte.weight made NaN (as a value that was
    # NaN when the rank hashed it), the table's hash the damaged bytes'.
    header, data = read_shard()
    b, e = header[WTE]["data_offsets"]
    data[b + 4 * 100:b + 4 * 101] = struct.pack("<f", math.nan)
    write_shard(header, data)
    rehash(header, data, WTE)
    write_table = True
else:
    sys.exit("damage.py: unknown kind " + kind)

if raw_index is not None:
    open(index_path, "w").write(raw_index)
elif write_index:
    json.dump(index, open(index_path, "w"), indent=1)
if raw_table is not None:
    open(table_path, "w").write(raw_table)
elif write_table:
    json.dump(table, open(table_path, "w"), indent=1)
