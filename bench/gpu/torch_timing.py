"""The median milliseconds of a CUDA call, as run.sh's PyTorch peers time
them: CUDA events around each of 20 calls after three warm-ups."""
import statistics

import torch


def median_ms(fn, iterations=20, warmups=3):
    times = []
    for i in range(iterations + warmups):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        if i >= warmups:
            times.append(s.elapsed_time(e))
    return statistics.median(times)
