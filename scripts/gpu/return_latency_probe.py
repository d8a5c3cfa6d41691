"""Host cost of what runs at a timed call's return, under CUPTI activity tracing (GPU only).

Why: the in-situ cross-check (bench/crosscheck/README.md, "In-situ results on the H100") found
that whichever of {end event record, return stamp, end mark} comes first at a host-bound
call's return decides the others' times by 20-130 us. This measures each step's host time
right after a ``torch.cuda.synchronize()`` (the state a host-bound call returns in), median of
N repetitions, to say which step is the slow one.

usage: python scripts/gpu/return_latency_probe.py [N] [--json PATH]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def _median_us(step: Callable[[], Any], sync: Callable[[], None], n: int) -> float:
    times = []
    for _ in range(n):
        sync()
        t0 = time.perf_counter_ns()
        step()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times)


def main() -> None:
    import torch

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
    from perfdiff.collect.cycles.boundary_marks import TorchBoundaryMarker

    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 200
    backend = CuptiActivityBackend(trace_api=False)
    backend.start()
    marker = TorchBoundaryMarker(torch, 0)
    x = torch.ones(1024, device="cuda")
    sync = torch.cuda.synchronize
    made = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    pre = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for e in pre:
        e.record()
    it_made, it_pre = iter(made), iter(pre)
    result = {
        "cupti_get_timestamp_us": _median_us(backend.clock_ns, sync, n),
        "perf_counter_ns_us": _median_us(time.perf_counter_ns, sync, n),
        "event_record_first_us": _median_us(lambda: next(it_made).record(), sync, n),
        "event_record_created_us": _median_us(lambda: next(it_pre).record(), sync, n),
        "end_mark_us": _median_us(marker.mark, sync, n),
        "small_kernel_us": _median_us(lambda: x.add_(1), sync, n),
    }
    sync()
    backend.stop()
    for k, v in result.items():
        print(f"{k:28s} {v:8.2f}")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as out:
            json.dump({"n": n, "gpu": torch.cuda.get_device_name(0), **result}, out, indent=1)


if __name__ == "__main__":
    main()
