"""Opens a PNG (a browser's screenshot) and says whether it shows
something: its size, and how many distinct byte values its decompressed
rows hold (a blank page has a handful).

usage: check_png.py SHOT.png
"""
import struct
import sys
import zlib

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
idat, at = b"", 8
while at < len(data):
    n, kind = struct.unpack(">I4s", data[at:at + 8])
    if kind == b"IDAT":
        idat += data[at + 8:at + 8 + n]
    at += 12 + n
rows = zlib.decompress(idat)
print("size:", width, "x", height)
print("shows something:", len(set(rows)) > 32)
