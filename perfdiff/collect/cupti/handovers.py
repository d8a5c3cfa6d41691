"""Buffer hand-overs that landed inside measured cycles, as one warning.

Why: CUPTI hands its activity records over a buffer at a time, and turning a full 32 MiB
buffer (~136,000 records) into records holds the Python interpreter for ~0.5 s on the H100
(scripts/gpu/buffer_stall_probe.py): a cycle open then is that much longer. Workloads that are
idle between cycles drain the buffers between them (session.py); for the others, and for user
programs, the run file says which cycles include a hand-over. A hand-over that only parks
the buffer for decoding at the cycle's end (``RawIntake.defer``: a few microseconds) holds
nothing worth a warning: only those of at least HANDOVER_WARN_NS count.
"""

from __future__ import annotations

import numpy as np

from perfdiff.schema.model import CycleTable

HANDOVER_WARN_NS = 100_000


def handover_warning(handovers: list[tuple[int, int, int]], cycles: CycleTable) -> str | None:
    """One warning naming the measured cycles during which the trace took in a buffer
    (``(start, end, records)`` on the trace's clock), or None when none did."""
    measured = ~np.asarray(cycles.warmup, dtype=bool)
    starts = np.asarray(cycles.start_ns)[measured]
    ends = np.asarray(cycles.end_ns)[measured]
    index = np.asarray(cycles.index)[measured]
    hit: list[int] = []
    longest = 0
    for start, end, _ in handovers:
        if end - start < HANDOVER_WARN_NS:
            continue
        inside = (starts < end) & (ends > start)
        if inside.any():
            hit.extend(int(i) for i in index[inside])
            longest = max(longest, end - start)
    cycles_hit = sorted(set(hit))
    if not cycles_hit:
        return None
    shown = ", ".join(str(i) for i in cycles_hit[:5]) + (", ..." if len(cycles_hit) > 5 else "")
    return (f"CUPTI handed over an activity buffer during {len(cycles_hit)} measured cycle(s) "
            f"(cycle {shown}); taking it in held the interpreter for up to {longest / 1e6:.1f} "
            "ms, which those cycles include (docs/howto/collect.md, known limits)")


__all__ = ["HANDOVER_WARN_NS", "handover_warning"]
