"""Writes a token file of one named kind for weft-run --data / weftc eval --tokens.

usage: make_tokens.py KIND OUT
Token files are little-endian uint16 ids (uint32 for the *-u32 kinds), or
text for the *-text kinds; the models under test have a vocabulary of 256
and the bundles a window of 16 tokens.
"""
import struct
import sys

kind, out = sys.argv[1:3]
u16 = lambda ids: struct.pack("<%dH" % len(ids), *ids)
u32 = lambda ids: struct.pack("<%dI" % len(ids), *ids)
ok = [i % 256 for i in range(4000)]
kinds = {
    "empty": b"",
    "one-byte": b"\x01",
    "odd-bytes": b"\x01\x00\x02",
    "one-token": u16([5]),
    "ten-tokens": u16(list(range(10))),
    "sixteen-tokens": u16(list(range(16))),  # one window, no label for its last token
    "id-at-vocab": u16([7] * 30 + [256] + [1] * 9),
    "id-max-u16": u16([7] * 39 + [65535]),
    "id-in-last-label": u16([7] * 3999 + [300]),  # only the last label is out of range
    "id-first": u16([999] + ok[1:]),
    "odd-bytes-u32": b"\x01\x00\x00\x00\x02\x00",
    "id-max-u32": u32([7] * 39 + [2**32 - 1]),
    "id-2-pow-31-u32": u32([7] * 39 + [2**31]),
    "u16-read-as-u32": u16(ok),  # valid as u16; as u32 pairs make ids >= 256
    "empty-text": b"",
    "short-text": b"0123456789",
}
open(out, "wb").write(kinds[kind])
