"""Checks a weft-run --trace file: check_trace.py TRACE RANK.

Chrome trace event format: every event is metadata (M) naming the rank's
process or a track, or a complete event (X) with a non-negative duration on
a named track of this rank; events on one track do not overlap (a track is
one stream, run in order). Prints the tracks, the traced steps and the
instruction categories, one line each."""
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
rank = int(sys.argv[2])
names, spans = {}, {}
for e in events:
    assert e["pid"] == rank, e
    if e["ph"] == "M":
        if e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        continue
    assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0, e
    spans.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"], e))
for tid, track in spans.items():
    assert tid in names, f"track {tid} has no name"
    track.sort(key=lambda s: s[0])
    for (a0, a1, _), (b0, b1, _) in zip(track, track[1:]):
        assert b0 >= a1 - 1e-3, f"events overlap on {names[tid]}"
steps = [e["name"] for e in events if e.get("cat") == "step"]
kinds = sorted({s[2]["cat"] for tid, t in spans.items() if names[tid].startswith("stream") for s in t})
print("tracks:", sorted(names.values()))
print("steps:", steps)
print("instructions:", kinds)
