"""Is CUPTI counting nanoseconds? A check from the cycle boundary marks.

Why: torch.profiler (kineto) registers its own CUPTI timestamp callback. Once it has run in a
process, CUPTI stamps every activity record in kineto's units (CPU TSC ticks), not in
nanoseconds: perfdiff's kernel durations came out 2.1x on the H100 (2026-11-22, see
docs/explanation/accuracy.md). Nothing in a record says so. The boundary marks give the check
for free: each mark starts on the GPU right after the host issued it (its stream is idle), so
over a run the marks' GPU start times must advance at the rate of the host's clock.

The host side is ``time.perf_counter_ns`` at each issue, not the cycle stamps
(``cupti.get_timestamp``): if CUPTI's own clock followed the same callback, cycle stamps and
records would agree with each other and the check would see nothing. perf_counter is the
system's monotonic clock in nanoseconds whoever else runs in the process.

The slope is robust to the odd delayed mark (a mark waits for a free SM slot when the GPU is
full, or another process holds the GPU's time slice): the median of slopes between mark i
and mark i + n/2, pairs that each span about half the run, so a delay of even a few
milliseconds moves a slope by a few percent of it only when the run is short, hence the
minimum span.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# 100 ms of host time between the first and last usable mark: under --contend the GPU
# time-slices with another process, which can hold a mark back by a few ms; over pairs half
# a run apart that is a few percent at most, and the median over the pairs removes most of it
MIN_SPAN_NS = 100_000_000
MIN_MARKS = 4
TOLERANCE = 0.05  # |rate - 1| above this is not jitter: 2.1x was seen, drift is ppm


def clock_rate(host_ns: Sequence[int], gpu_ns: Sequence[int], *,
               min_span_ns: int = MIN_SPAN_NS, min_marks: int = MIN_MARKS) -> float | None:
    """GPU-record time per host nanosecond over the marks; None when too few or too short.

    ``host_ns[i]``: host time the i-th mark was issued (perf_counter); ``gpu_ns[i]``: its
    GPU start from its CUPTI record, or a negative value where unknown (left out).
    """
    if len(host_ns) != len(gpu_ns):
        raise ValueError(f"{len(host_ns)} host times for {len(gpu_ns)} GPU times")
    host = np.asarray(host_ns, dtype=np.float64)
    gpu = np.asarray(gpu_ns, dtype=np.float64)
    known = gpu >= 0
    host, gpu = host[known], gpu[known]
    if host.size < min_marks or host.max() - host.min() < min_span_ns:
        return None
    order = np.argsort(host, kind="stable")
    host, gpu = host[order], gpu[order]
    half = host.size // 2
    dh = host[half:half + half] - host[:half]
    dg = gpu[half:half + half] - gpu[:half]
    usable = dh > 0
    if not usable.any():
        return None
    return float(np.median(dg[usable] / dh[usable]))


def clock_rate_warning(host_ns: Sequence[int], gpu_ns: Sequence[int], *,
                       tolerance: float = TOLERANCE, min_span_ns: int = MIN_SPAN_NS,
                       min_marks: int = MIN_MARKS) -> str | None:
    """The run-file warning when CUPTI's records do not advance at 1 ns per host ns."""
    rate = clock_rate(host_ns, gpu_ns, min_span_ns=min_span_ns, min_marks=min_marks)
    if rate is None or abs(rate - 1.0) <= tolerance:
        return None
    return (f"CUPTI timestamps advanced {rate:.2f}x as fast as the host clock over the cycle "
            "boundary marks: durations in this run file are not in nanoseconds (likely "
            "another profiler in this process, such as torch.profiler, set CUPTI's timestamp "
            "source); record without it")


__all__ = ["MIN_MARKS", "MIN_SPAN_NS", "TOLERANCE", "clock_rate", "clock_rate_warning"]
