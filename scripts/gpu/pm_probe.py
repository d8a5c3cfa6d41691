"""Why PM samples leave measured cycles uncovered, and where the interpreter holds come from.

Runs ``perfdiff collect WORKLOAD`` in this process (built-in workloads only) with the PM
drain's settings patched, keeps the sampler's decode log, every activity-buffer hand-over
(CPU time, records by kind, whether the layout was learnt) and every garbage-collector pass
(thread, generation, duration), then prints one JSON line: coverage of the measured cycles,
each stretch without samples (where, how long, the decode calls around it), the holds.

usage: python3 scripts/gpu/pm_probe.py gpt-infer [--decode-at-fill 0.4]
       [--untraced-every 8] [--cycles 60] [--json OUT]
Decode log entries: [ms since the first decode, ms taken, image capacity, samples decoded,
first and last sample end (ms from the first measured cycle), overflow, stop reason (1: image
full), from the drain thread].
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("workload")
    parser.add_argument("--decode-at-fill", type=float, default=None)
    parser.add_argument("--untraced-every", type=int, default=8)
    parser.add_argument("--cycles", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import numpy as np

    from perfdiff.collect.cupti import pm_sampling, raw_intake
    from perfdiff.schema.io import load_run_file

    if args.decode_at_fill is not None:
        pm_sampling.DECODE_AT_FILL = args.decode_at_fill
    logs: list[Any] = []
    original_stop = pm_sampling.PmSampler.stop

    def stop(self: Any) -> Any:
        try:
            return original_stop(self)
        finally:
            logs.append(list(self.decode_log))

    pm_sampling.PmSampler.stop = stop  # type: ignore[method-assign]
    handovers: list[dict[str, Any]] = []
    original_take = raw_intake.RawIntake.take

    def take(self: Any, array: Any, valid: int) -> int:
        cpu = time.thread_time_ns()
        wall = time.perf_counter_ns()
        sizes = dict(self.layout.sizes)
        count = original_take(self, array, valid)
        chunk = self.chunks[-1]
        handovers.append({
            "cpu_ms": (time.thread_time_ns() - cpu) / 1e6,
            "wall_ms": (time.perf_counter_ns() - wall) / 1e6, "bytes": valid,
            "kernels": int(chunk.kernels.size), "memcpy": int(chunk.memcpy.size),
            "memset": int(chunk.memset.size), "api": int(chunk.api.size),
            "learnt": dict(self.layout.sizes) != sizes,
            "thread": threading.current_thread().name})
        return count

    raw_intake.RawIntake.take = take  # type: ignore[method-assign]
    gcs: list[dict[str, Any]] = []
    gc_start: dict[int, int] = {}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        ident = threading.get_ident()
        if phase == "start":
            gc_start[ident] = time.perf_counter_ns()
        elif ident in gc_start:
            ms = (time.perf_counter_ns() - gc_start.pop(ident)) / 1e6
            if ms > 0.5:
                gcs.append({"gen": info.get("generation"), "ms": round(ms, 2),
                            "thread": threading.current_thread().name})

    gc.callbacks.append(on_gc)
    out = Path(tempfile.mkdtemp()) / "run.json.gz"
    sys.argv = ["perfdiff", "collect", args.workload, "--cycles", str(args.cycles),
                "--warmup", str(args.warmup), "--untraced-every", str(args.untraced_every),
                "-q", "-o", str(out)]
    from perfdiff.cli.app import main as cli_main

    with contextlib.suppress(SystemExit):
        cli_main()
    gc.callbacks.remove(on_gc)
    rf = load_run_file(out)
    run = rf.runs[0]
    c = run.cycles
    measured = ~np.asarray(c.warmup, dtype=bool)
    starts, ends = np.asarray(c.start_ns), np.asarray(c.end_ns)
    span = (int(starts[measured][0]), int(ends[measured][-1]))
    pm = [m for m in run.metrics if m.source == "pm_sampling"]
    result: dict[str, Any] = {
        "workload": args.workload, "decode_at_fill": pm_sampling.DECODE_AT_FILL,
        "untraced_every": args.untraced_every, "warnings": list(rf.collection.warnings),
        "measured_span_ms": (span[1] - span[0]) / 1e6,
    }
    if pm:
        t = np.asarray(pm[0].timestamps_ns, dtype=np.int64)
        interval = int(pm[0].interval_ns or 20_000)
        inside = t[(t > span[0]) & (t <= span[1] + interval)]
        result["pm_samples"] = int(t.size)
        result["coverage_pct"] = round(100 * min(1.0, inside.size * interval
                                                 / (span[1] - span[0])), 2)
        result["first_sample_ms"] = (int(t[0]) - span[0]) / 1e6
        result["last_sample_ms"] = (int(t[-1]) - span[0]) / 1e6
        gaps = np.diff(t)
        holes = np.flatnonzero(gaps > 2 * interval)
        decode = logs[0] if logs else []
        result["decodes"] = len(decode)
        if decode:
            took = np.asarray([d[1] for d in decode]) / 1e6
            result["decode_ms"] = {"median": float(np.median(took)), "max": float(took.max())}
            host = np.asarray([d[0] for d in decode], dtype=np.int64)
            result["decode_period_ms"] = {
                "median": float(np.median(np.diff(host)) / 1e6) if host.size > 1 else None,
                "max": float(np.diff(host).max() / 1e6) if host.size > 1 else None}
            reasons: dict[str, int] = {}
            for d in decode:
                reasons[str(d[7])] = reasons.get(str(d[7]), 0) + 1
            result["decode_stop_reasons"] = reasons
            result["decode_overflow"] = sum(1 for d in decode if d[6])
        result["holes"] = []
        for i in holes[:20]:
            lo, hi = int(t[i]), int(t[i + 1])
            near = [d for d in decode if (d[5] and lo - 2 * interval <= d[5] <= hi + 2 * interval)
                    or (d[4] and lo - 2 * interval <= d[4] <= hi + 2 * interval)]
            result["holes"].append({
                "at_ms": (lo - span[0]) / 1e6, "ms": (hi - lo) / 1e6,
                "decodes_at_edges": [[(d[0] - decode[0][0]) / 1e6, d[1] / 1e6, d[2], d[3],
                                      (d[4] - span[0]) / 1e6 if d[4] else None,
                                      (d[5] - span[0]) / 1e6 if d[5] else None,
                                      d[6], d[7], d[8]] for d in near][:6]})
        result["decode_log_head"] = [[(d[0] - decode[0][0]) / 1e6, d[1] / 1e6, d[2], d[3],
                                      d[6], d[7], d[8]] for d in decode[:8]] if decode else []
        result["decode_log_tail"] = [[(d[0] - decode[0][0]) / 1e6, d[1] / 1e6, d[2], d[3],
                                      (d[4] - span[0]) / 1e6 if d[4] else None,
                                      (d[5] - span[0]) / 1e6 if d[5] else None,
                                      d[6], d[7], d[8]] for d in decode[-8:]] if decode else []
    hold = np.asarray(c.hold_ns if c.hold_ns is not None else [0])[measured] / 1e6
    result["hold_ms_max_measured"] = float(hold.max()) if hold.size else 0.0
    cpu = np.asarray([h["cpu_ms"] for h in handovers]) if handovers else np.zeros(1)
    result["handovers"] = {"n": len(handovers), "cpu_ms_median": float(np.median(cpu)),
                           "cpu_ms_max": float(cpu.max()),
                           "slowest": sorted(handovers, key=lambda h: -h["cpu_ms"])[:4]}
    result["gc_passes_over_0.5ms"] = gcs[:20]
    text = json.dumps(result)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
