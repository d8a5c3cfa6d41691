"""Issue 28 item 2: what a buffer hand-over costs the program's thread, seen from that thread.

The run file's holds are stamped by perfdiff itself (CPU time of CUPTI's thread in the
callback, less a spooled write's system calls, which run with the interpreter lock
released). This checks that stamp from the other side: one Python thread launches tiny kernels
(~100,000/s, ``x.add_(1)``) and stamps every iteration of 4 launches; a gap far above the
median iteration is time the thread could not run (the lock held elsewhere). Phases of
``--seconds`` each, alternated: no tracing; perfdiff's CUPTI backend decoding each buffer
where CUPTI hands it over; the same backend spooling buffers (user programs' default);
no tracing again. Per phase: launches/s, iteration gaps (median, p99, p99.9, max, count above
0.1 / 0.3 / 1 ms, excess ms per second above the median) and the stamped holds (count,
median, max, ms per second) and the spool's write time.

Usage: python scripts/gpu/hold_probe.py [--seconds 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


_KEEP: list[Any] = []  # every backend stays alive: CUPTI holds its ctypes callbacks


def phase(name: str, seconds: float, torch: Any, x: Any) -> dict[str, Any]:
    import numpy as np

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend

    backend = None
    if name != "none":
        spool_dir = tempfile.mkdtemp(prefix="perfdiff-spool-") if name == "spool" else None
        backend = CuptiActivityBackend(trace_api=False, trace_memory=True,
                                       spool_dir=spool_dir)
        _KEEP.append(backend)
        backend.start()
    stamps = np.empty(4_000_000, dtype=np.int64)
    n = 0
    end = time.perf_counter_ns() + int(seconds * 1e9)
    now = time.perf_counter_ns()
    while now < end and n < stamps.size:
        for _ in range(4):
            x.add_(1)
        now = time.perf_counter_ns()
        stamps[n] = now
        n += 1
    torch.cuda.synchronize()
    out: dict[str, Any] = {"phase": name, "launches_per_s": round(4 * n / seconds)}
    gaps = np.diff(stamps[:n]) / 1e6
    med = float(np.median(gaps))
    out["gap_ms"] = {"median": round(med, 4), "p99": round(float(np.percentile(gaps, 99)), 4),
                     "p999": round(float(np.percentile(gaps, 99.9)), 4),
                     "max": round(float(gaps.max()), 3),
                     "over_0.1": int((gaps > 0.1).sum()), "over_0.3": int((gaps > 0.3).sum()),
                     "over_1": int((gaps > 1.0).sum()),
                     "excess_ms_per_s": round(float((gaps[gaps > 0.1] - med).sum()) / seconds,
                                              2)}
    if backend is not None:
        raw = backend.stop()
        holds = np.asarray([e - s for s, e, _ in raw.handovers], dtype=np.int64) / 1e6
        out["holds_ms"] = {"count": int(holds.size),
                           "median": round(float(np.median(holds)), 4) if holds.size else 0,
                           "max": round(float(holds.max()), 3) if holds.size else 0,
                           "ms_per_s": round(float(holds.sum()) / seconds, 2)}
        out["spool_write_ms_per_s"] = round(raw.spool_write_ns / 1e6 / seconds, 2)
        out["decode_after_run_ms"] = round(raw.after_run_ns / 1e6, 1)
        cols = raw.columns
        out["kernels"] = int(cols.kernels.size) if cols is not None else 0
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=4.0)
    a = p.parse_args()
    import torch

    x = torch.zeros(16, device="cuda")
    for _ in range(1000):
        x.add_(1)
    torch.cuda.synchronize()
    rows = [phase(name, a.seconds, torch, x) for name in ("none", "decode", "spool", "none")]
    for row in rows:
        print("HOLDPROBE " + json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
