"""Issue 28 item 7: what CUPTI reports for kernels replayed from a CUDA graph, in one process.

Why: under ``perfdiff collect --cycle-range step`` a bf16 MLP graph's kernels read 2-18x
longer than torch.profiler's and overlapped on one stream. This probe separates the
suspects: when CUPTI activity is enabled (before or after the capture), how records are taken
in (perfdiff's raw decode or cupti-python's objects), and whether switching activity off and
on between replays (perfdiff's untraced cycles) changes the records. For each phase it prints
per-kernel mean durations, the sum of kernel time per replay and the replay's wall time, and
how many kernels start before the previous one on the same stream ended.

Usage: python scripts/gpu/graph_probe.py [--when before|after] [--intake raw|objects]
           [--dtype bf16|fp32]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def stats(kernels: list[tuple[str, int, int, int]], t0: int, t1: int, replays: int) -> dict:
    ks = sorted(k for k in kernels if t0 <= k[1] < t1)
    per = defaultdict(list)
    for name, s, e, _stream in ks:
        per[name[:60]].append(e - s)
    overlaps = 0
    last_end: dict[int, int] = {}
    for _name, s, e, stream in sorted(ks, key=lambda k: k[1]):
        if s < last_end.get(stream, 0):
            overlaps += 1
        last_end[stream] = max(e, last_end.get(stream, 0))
    busy = sum(e - s for _n, s, e, _st in ks)
    return {"kernels": len(ks), "busy_us_per_replay": round(busy / 1e3 / max(replays, 1), 1),
            "overlaps": overlaps,
            "mean_us": {n: round(sum(v) / len(v) / 1e3, 2) for n, v in sorted(per.items())}}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--when", choices=("before", "after"), default="after")
    p.add_argument("--intake", choices=("raw", "objects"), default="raw")
    p.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    a = p.parse_args()
    import torch
    from torch import nn

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend

    backend = CuptiActivityBackend(trace_memory=False, trace_api=False,
                                   raw_intake=a.intake == "raw")
    if a.when == "before":
        backend.start()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    d = 1024
    model = nn.Sequential(*[nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(),
                                          nn.Linear(4 * d, d)) for _ in range(8)])
    model = model.to(device="cuda", dtype=dtype).eval()
    x = torch.randn(512, d, device="cuda", dtype=dtype)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        model(x)
    torch.cuda.synchronize()
    if a.when == "after":
        backend.start()
    clock = backend.clock_ns
    phases = []

    def replays(phase: str, n: int) -> None:
        t0, walls = clock(), []
        for _ in range(n):
            w = time.perf_counter()
            if phase == "eager":
                with torch.no_grad():
                    model(x)
            else:
                graph.replay()
            torch.cuda.synchronize()
            walls.append(time.perf_counter() - w)
        phases.append((phase, t0, clock(), sorted(walls)[len(walls) // 2] * 1e6, n))

    replays("plain", 20)
    replays("eager", 20)
    for flush in (False, True, False, True):
        replays(f"before_pause_flush{int(flush)}", 5)
        if flush:
            backend.pause()  # flushes, then switches off (the fix)
        else:  # switched off without a flush, as perfdiff did before 2026-11-28
            for kind in backend._enabled:
                backend._cupti.activity_disable(kind)
        graph.replay()
        torch.cuda.synchronize()
        backend.resume()
        replays(f"after_resume_flush{int(flush)}", 5)
    raw = backend.stop()
    cols = raw.as_columns()
    kernels = [(cols.names.get(int(k["name_key"]), "?"), int(k["start"]), int(k["end"]),
                int(k["stream"])) for k in cols.kernels]
    per_replay = defaultdict(list)
    for k in cols.kernels:
        per_replay[int(k["correlation_id"])].append((int(k["start"]), int(k["end"])))
    out = {"when": a.when, "intake": a.intake, "dtype": a.dtype, "warnings": backend.warnings,
           "phases": {}}
    for phase, t0, t1, wall, n in phases:
        reps = sorted(v for v in per_replay.values() if t0 <= min(s for s, _ in v) < t1)
        summary = [(len(v), round(sum(e - s for s, e in v) / 1e3, 1)) for v in reps]
        out["phases"][phase] = {"median_wall_us": round(wall, 1), **stats(kernels, t0, t1, n),
                                "replays_n_busy_us": summary}
    print("GRAPHPROBE " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
