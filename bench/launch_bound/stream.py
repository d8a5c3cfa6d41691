"""A synthetic stream of tiny kernels under perfdiff's CUPTI backend: drops, holds, memory.

Two sources of launches, each for ``--seconds``:
- ``graph``: a CUDA graph of 500 one-element ``add_`` kernels replayed back to back (the GPU
  runs them at its own rate: several hundred thousand kernels/s on an H100);
- ``loop``: ``x.add_(1)`` from a Python loop (the host's launch rate, ~100,000/s).
Cycles of 10 ms are marked with ``perfdiff.collect.cycles.cycles.CycleLog`` (boundary marks) as a
built-in workload would. Reported: kernels launched vs kernels in the run file, CUPTI's
dropped-record count, the longest buffer hand-over (interpreter hold), resident memory of
the collecting process before / after collection (per million kernels), and the time to build
and write the run file.

Usage: python bench/launch_bound/stream.py [--seconds 30] [--mode graph|loop] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_file_from_tables(tables: Any, cycles: Any, names: list[Any]) -> Any:
    """A minimal valid run file around the tables (what the collector would write)."""
    import platform
    import socket

    from perfdiff import __version__
    from perfdiff.schema.model import Collection, Environment, Run, RunFile, Status, Workload
    from perfdiff.schema.versions import CURRENT_VERSION

    run = Run(index=0, pid=os.getpid(), rank=None, exit_code=0, cycles=cycles,
              kernels=tables.kernels, memcpy=tables.memcpy, memset=tables.memset, metrics=())
    return RunFile(
        schema_version=CURRENT_VERSION, tool_version=__version__, status=Status("complete"),
        environment=Environment(host=socket.gethostname(), driver_version=None,
                                cuda_version=None, cupti_version=None, torch_version=None,
                                python_version=platform.python_version(), devices=()),
        collection=Collection(metrics=(), sample_interval_ns=20_000,
                              sources=("cupti_activity",)),
        workload=Workload(name="stream", params={}), strings=tuple(names), runs=(run,),
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--mode", choices=("graph", "loop"), default="graph")
    parser.add_argument("--api", action="store_true", help="launch API records (--cycle-ms)")
    parser.add_argument("--rate", type=float, default=150_000,
                        help="graph mode: kernels per second to aim at (0: as fast as it goes)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--spool", action="store_true",
                        help="spool buffers to a file, decode at stop (as user programs do)")
    args = parser.parse_args()

    import numpy as np
    import torch

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
    from perfdiff.collect.cupti.handovers import handover_warning
    from perfdiff.collect.cycles.boundary_marks import TorchBoundaryMarker
    from perfdiff.collect.cycles.cycles import CycleLog
    from perfdiff.collect.records import StringTable, build_tables
    from perfdiff.schema.io import save_run_file

    dev = torch.device("cuda", 0)
    x = torch.zeros(1, device=dev)
    nodes = 500
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            x.add_(1)
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(nodes):
                x.add_(1)
    torch.cuda.synchronize()
    spool_dir = tempfile.mkdtemp(prefix="perfdiff-spool-") if args.spool else None
    backend = CuptiActivityBackend(trace_api=args.api, trace_memory=True, spool_dir=spool_dir)
    marker = None if args.api else TorchBoundaryMarker(torch, 0)
    log = CycleLog(clock_ns=backend.clock_ns, mark=marker.mark if marker else None)
    rss0 = rss_mb()
    backend.start()
    launched = 0
    t_end = time.perf_counter() + args.seconds
    cycle_end = 0.0
    started = time.perf_counter()
    while True:
        now = time.perf_counter()
        if now >= cycle_end:
            log.begin_cycle("", False)
            cycle_end = now + 0.010
        if args.mode == "graph":
            graph.replay()
            launched += nodes
            ahead = launched / args.rate - (now - started) if args.rate else 0.0
            if ahead > 0.001:
                time.sleep(ahead)
        else:
            for _ in range(100):
                x.add_(1)
            launched += 100
        if time.perf_counter() >= cycle_end:
            log.end_cycle()
        if now >= t_end:
            break
    log.end_cycle()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    raw = backend.stop()
    rss1 = rss_mb()
    cols = raw.columns
    assert cols is not None
    kernels_all = int(cols.kernels.size)
    t0 = time.perf_counter()
    mark_gpu = None
    if marker is not None:
        from perfdiff.collect.cycles.boundary_marks import attach_launch_records, take_marks

        ids, gpu_ns = take_marks(raw, marker.stream_ids)
        attach_launch_records(raw, ids, log.mark_ns)
        mark_gpu = gpu_ns if len(gpu_ns) == len(log.mark_slots) else None
    cycles = log.table(mark_gpu)
    strings = StringTable()
    tables = build_tables(raw, cycles, strings)
    built = time.perf_counter() - t0
    rss2 = rss_mb()
    holds = np.asarray([(e - s) for s, e, _ in raw.handovers], dtype=np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        t1 = time.perf_counter()
        rf = run_file_from_tables(tables, cycles, strings.names)
        path = save_run_file(rf, Path(tmp) / "stream.json.gz")
        written = time.perf_counter() - t1
        size_mb = path.stat().st_size / 1e6
    rss3 = rss_mb()
    in_file = int(tables.kernels.name_id.size)
    result: dict[str, Any] = {
        "mode": args.mode, "api_records": args.api, "spool": args.spool,
        "decode_after_run_ms": round(raw.after_run_ns / 1e6, 1), "seconds": round(elapsed, 2),
        "kernels_launched": launched, "kernels_per_s": round(launched / elapsed),
        "kernel_records": kernels_all, "kernels_in_run_file": in_file,
        # the records beyond the launches are the cycles' boundary marks (2 per cycle), which
        # the run file leaves out
        "every_launch_recorded": in_file == launched and kernels_all >= launched,
        "mark_records": kernels_all - launched,
        "dropped_records": raw.dropped_records, "buffers": len(raw.handovers),
        "hold_ms_max": round(float(holds.max()) / 1e6, 3) if holds.size else 0.0,
        "hold_ms_median": round(float(np.median(holds)) / 1e6, 3) if holds.size else 0.0,
        "cycles": int(cycles.index.size),
        "rss_mb": {"before": round(rss0), "after_stop": round(rss1), "after_build": round(rss2),
                   "after_write": round(rss3)},
        "collected_mb_per_million_kernels": round((rss1 - rss0) / (launched / 1e6), 1),
        "build_s": round(built, 2), "write_s": round(written, 2), "file_mb": round(size_mb, 1),
        "warnings": backend.warnings + ([w] if (w := handover_warning(raw.handovers, cycles))
                                        else []),
    }
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    sys.exit(main())
