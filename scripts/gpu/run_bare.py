"""Run a built-in workload with no perfdiff collector (for ncu and torch.profiler checks).

``--profile-last`` brackets the last cycle with cudaProfilerStart/Stop so that
``ncu --profile-from-start off`` profiles exactly one steady-state cycle.
``--torch-profiler OUT.json`` runs the measured cycles under torch.profiler (CPU+CUDA) and
writes the CUDA kernel events (name, duration, cycle) as JSON.

Usage: python scripts/gpu/run_bare.py WORKLOAD [--cycles N] [--warmup N] [-p KEY=VALUE]...
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator

import torch

from perfdiff.collect.workloads import get_workload_class
from perfdiff.collect.workloads.base import CyclePlan


class CountingMarker:
    """Counts cycles; optionally brackets the last one for ncu."""

    def __init__(self, total: int, profile_last: bool) -> None:
        self.total = total
        self.done = 0
        self.profile_last = profile_last

    @contextlib.contextmanager
    def cycle(self, label: str = "", *, warmup: bool = False) -> Iterator[None]:
        last = self.done == self.total - 1
        if last and self.profile_last:
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
        yield
        if last and self.profile_last:
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
        self.done += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workload")
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("-p", "--param", action="append", default=[])
    parser.add_argument("--profile-last", action="store_true")
    parser.add_argument("--torch-profiler", default=None)
    args = parser.parse_args()
    cls = get_workload_class(args.workload)
    params = cls.params_class.from_strings(dict(p.split("=", 1) for p in args.param))
    workload = cls(params)
    workload.setup("cuda:0")
    if args.torch_profiler is None:
        marker = CountingMarker(args.cycles + args.warmup, args.profile_last)
        workload.run(marker, CyclePlan(args.cycles, args.warmup))
        torch.cuda.synchronize()
        return
    workload.run(CountingMarker(args.warmup, False), CyclePlan(args.warmup, 0))
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts) as prof:
        workload.run(CountingMarker(args.cycles, False), CyclePlan(args.cycles, 0))
        torch.cuda.synchronize()
    trace_path = args.torch_profiler + ".trace.json"
    prof.export_chrome_trace(trace_path)
    with open(trace_path) as fh:
        trace = json.load(fh)
    events = [
        {"name": e["name"], "start_us": float(e["ts"]), "dur_us": float(e["dur"])}
        for e in trace.get("traceEvents", [])
        if e.get("cat") == "kernel" and "dur" in e
    ]
    with open(args.torch_profiler, "w") as fh:
        json.dump(events, fh)


if __name__ == "__main__":
    main()
