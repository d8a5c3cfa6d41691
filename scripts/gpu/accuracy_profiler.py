"""Kernel durations from perfdiff vs torch.profiler for the same workload.

Method: ``perfdiff collect gpt-infer`` and, in a second process, the same workload bare under
torch.profiler (scripts/gpu/run_bare.py --torch-profiler). Both give a launch sequence per
cycle; per position, the median duration over measured cycles is compared. Criterion: for
kernels longer than 10 us, |perfdiff / torch.profiler - 1| <= 2 %. perfdiff runs twice: with
every source on (the default) and with ``--no-pm``, because torch.profiler does not PM-sample
and PM sampling itself can stretch memory-bound kernels by a few per cent (the comparison of
like with like is the --no-pm one; the gap between the two is PM sampling's own cost).

Usage: python scripts/gpu/accuracy_profiler.py --work DIR --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from perfdiff.schema.io import load_run_file

CYCLES = 150
MIN_US = 10.0
TOLERANCE = 0.02


def perfdiff_durations(path: Path) -> tuple[list[str], np.ndarray]:
    rf = load_run_file(path)
    run = rf.runs[0]
    measured = run.cycles.index[~run.cycles.warmup]
    stack = np.vstack([np.flatnonzero(run.kernels.cycle == c) for c in measured])
    dur = (run.kernels.end_ns - run.kernels.start_ns)[stack] / 1000.0
    names = [rf.strings[int(run.kernels.name_id[i])].demangled for i in stack[0]]
    return names, np.median(dur, axis=0)


def profiler_durations(events: list[dict[str, float]], per_cycle: int) -> np.ndarray:
    events = sorted(events, key=lambda e: e["start_us"])
    durs = np.array([e["dur_us"] for e in events], dtype=np.float64)
    n = durs.size // per_cycle
    if n * per_cycle != durs.size:
        print(f"WARNING: {durs.size} profiler kernels is not a multiple of {per_cycle}")
    return np.median(durs[: n * per_cycle].reshape(n, per_cycle), axis=0)


def compare(names: list[str], ours: np.ndarray, theirs: np.ndarray) -> dict[str, Any]:
    rows = []
    for j, (name, a, b) in enumerate(zip(names, ours, theirs, strict=True)):
        if a <= MIN_US:
            continue
        rel = a / b - 1.0
        rows.append({"position": j, "kernel": name.split("(")[0][-60:],
                     "perfdiff_us": round(float(a), 2), "torch_profiler_us": round(float(b), 2),
                     "rel_diff_pct": round(100 * float(rel), 2),
                     "within_2pct": bool(abs(rel) <= TOLERANCE)})
    return {"kernels_over_10us": len(rows),
            "within_2pct": int(sum(bool(r["within_2pct"]) for r in rows)),
            "max_abs_rel_diff_pct": max((abs(r["rel_diff_pct"]) for r in rows), default=None),
            "median_abs_rel_diff_pct": float(np.median([abs(r["rel_diff_pct"]) for r in rows]))
            if rows else None, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    base = ["perfdiff", "collect", "gpt-infer", "--cycles", str(CYCLES), "--warmup", "3", "-q"]
    nopm_path = args.work / "durations-gpt-infer-nopm.json.gz"
    subprocess.run([*base, "--no-pm", "-o", str(nopm_path)], check=True)
    prof_path = args.work / "profiler-events.json"
    subprocess.run([sys.executable, "scripts/gpu/run_bare.py", "gpt-infer", "--cycles",
                    str(CYCLES), "--warmup", "3", "--torch-profiler", str(prof_path)], check=True)
    run_path = args.work / "durations-gpt-infer.json.gz"
    subprocess.run([*base, "-o", str(run_path)], check=True)
    events = json.loads(prof_path.read_text())
    out: dict[str, Any] = {"cycles": CYCLES}
    for key, path in (("perfdiff_all_sources", run_path), ("perfdiff_no_pm", nopm_path)):
        names, ours = perfdiff_durations(path)
        out[key] = compare(names, ours, profiler_durations(events, len(names)))
        print(key, json.dumps({k: v for k, v in out[key].items() if k != "rows"}))
    args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
