"""Counts MoE routing and exchange instructions per sched program.

Reads `weftc compile --emit=sched` on stdin and prints one line per
(program, instruction) pair: "@program instruction count", for
expert_route, ragged_all_to_all and the all_to_all collectives.
"""
import collections
import re
import sys

counts = collections.Counter()
program = None
for line in sys.stdin:
    m = re.search(r"sched\.program (@\S+)", line)
    if m:
        program = m.group(1)
        continue
    m = re.search(r"sched\.(expert_route|ragged_all_to_all)\b", line)
    if m:
        counts[(program, m.group(1))] += 1
    elif re.search(r"sched\.collective all_to_all\b", line):
        counts[(program, "collective")] += 1
for (program, op), n in sorted(counts.items()):
    print(program, op, n)
