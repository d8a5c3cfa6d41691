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
    return run_file_durations(load_run_file(path))


def run_file_durations(rf: Any) -> tuple[list[str], np.ndarray]:
    """Per launch position of a cycle: the kernel's name and its median duration (us)."""
    names, start, end = run_file_kernels(rf)
    return names, np.median(end - start, axis=0)


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


# name -> CollectSettings overrides (no PM: torch.profiler has none)
PERFDIFF_VARIANTS: dict[str, dict[str, Any]] = {
    "perfdiff": {},  # boundary marks + NVML: what `perfdiff collect --no-pm` records
    "perfdiff-api": {"trace_api": True},  # launch API records instead of marks
    "perfdiff-nonvml": {"nvml": False},
}
PROFILER_VARIANTS = {  # name -> torch.profiler activities
    "profiler": ("CPU", "CUDA"),  # what torch.profiler users run
    "profiler-cuda": ("CUDA",),  # device activity only: less host work per launch
}


def in_process(blocks: int, cycles: int) -> dict[str, Any]:
    """Both tools in ONE process on one model: perfdiff's blocks first, then the profiler's.

    Why: across processes the same kernel's duration moved by up to 5 % (run 2026-11-22: the
    large GEMM 3.5 % shorter in every layer in the perfdiff process), which is the processes,
    not the tools. perfdiff runs with --no-pm settings (torch.profiler does not PM-sample).
    Not alternating the tools: torch.profiler (kineto) registers its own CUPTI timestamp
    callback, and after that CUPTI stamps every record in kineto's clock (CPU TSC ticks:
    perfdiff's durations came out 2.1x on the H100, 2026-11-22), so perfdiff must run before
    it. Within each tool the variants rotate block by block (PERFDIFF_VARIANTS,
    PROFILER_VARIANTS), so that a kernel whose duration depends on how fast the host
    launches (the one miss of the first in-process run, launch position 6) shows it: the
    variants differ in host work per launch, not in what they measure.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    from perfdiff.collect.session import CollectSettings, run_collection
    from perfdiff.collect.sources import open_sources
    from perfdiff.collect.workloads import get_workload_class
    from perfdiff.collect.workloads.base import CyclePlan
    from perfdiff.markers import NullMarker

    cls = get_workload_class("gpt-infer")
    workload = cls(cls.params_class())
    workload.setup("cuda:0")
    workload.setup = lambda device: None  # type: ignore[method-assign]  # built once
    teardown = workload.teardown
    workload.teardown = lambda: None  # type: ignore[method-assign]  # kept for the next block
    durs: dict[str, list[np.ndarray]] = {v: [] for v in [*PERFDIFF_VARIANTS, *PROFILER_VARIANTS]}
    gaps: dict[str, list[np.ndarray]] = {v: [] for v in durs}
    names: list[str] = []
    order = [v for b in range(blocks) for v in _rotate(list(PERFDIFF_VARIANTS), b)]
    order += [v for b in range(blocks) for v in _rotate(list(PROFILER_VARIANTS), b)]
    for variant in order:
        if variant in PERFDIFF_VARIANTS:
            settings = CollectSettings(pm_sampling=False, **PERFDIFF_VARIANTS[variant])
            opened = open_sources(settings)
            outcome = run_collection(workload, CyclePlan(cycles, 3), opened.sources,
                                     opened.environment, settings)
            names, start, end = run_file_kernels(outcome.run_file)
        else:
            workload.run(NullMarker(), CyclePlan(3, 0))
            torch.cuda.synchronize()
            acts = [getattr(ProfilerActivity, a) for a in PROFILER_VARIANTS[variant]]
            with profile(activities=acts) as prof:
                workload.run(NullMarker(), CyclePlan(cycles, 0))
                torch.cuda.synchronize()
            start, end = profiler_kernels(_kernel_events(prof), len(names) or 127)
        durs[variant].append(np.median(end - start, axis=0))
        gap = np.full(start.shape, np.nan)
        gap[:, 1:] = start[:, 1:] - end[:, :-1]
        gaps[variant].append(np.median(gap, axis=0))
        print(f"block {variant}: position 6 {durs[variant][-1][6]:.2f} us, "
              f"gap before it {gaps[variant][-1][6]:.2f} us", flush=True)
    teardown()
    med = {v: np.median(np.vstack(d), axis=0) for v, d in durs.items() if d}
    out: dict[str, Any] = {"blocks": blocks, "cycles": cycles, "comparisons": {}}
    for ours in PERFDIFF_VARIANTS:
        for theirs in PROFILER_VARIANTS:
            out["comparisons"][f"{ours} vs {theirs}"] = compare(names, med[ours], med[theirs])
    out["by_block_us"] = {v: {f"position_{j}": [round(float(x[j]), 2) for x in durs[v]]
                              for j in (5, 6, 7)} for v in durs}
    out["position_gaps_us"] = {v: [round(float(x), 2) for x in np.median(np.vstack(g), axis=0)]
                               for v, g in gaps.items() if g}
    out["position_durations_us"] = {v: [round(float(x), 2) for x in m] for v, m in med.items()}
    return out


def _rotate(items: list[str], k: int) -> list[str]:
    k %= len(items)
    return items[k:] + items[:k]


def run_file_kernels(rf: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Names per launch position, and start/end (us) as (cycle, position) arrays."""
    run = rf.runs[0]
    measured = run.cycles.index[~run.cycles.warmup]
    stack = np.vstack([np.flatnonzero(run.kernels.cycle == c) for c in measured])
    names = [rf.strings[int(run.kernels.name_id[i])].demangled for i in stack[0]]
    return (names, np.asarray(run.kernels.start_ns)[stack] / 1000.0,
            np.asarray(run.kernels.end_ns)[stack] / 1000.0)


def profiler_kernels(events: list[Any], per_cycle: int) -> tuple[np.ndarray, np.ndarray]:
    """torch.profiler's kernel events as (cycle, position) start/end arrays (us)."""
    pairs = sorted((float(e.time_range.start), float(e.time_range.end)) for e in events)
    n = len(pairs) // per_cycle
    if n * per_cycle != len(pairs):
        print(f"WARNING: {len(pairs)} profiler kernels is not a multiple of {per_cycle}")
    arr = np.asarray(pairs[: n * per_cycle], dtype=np.float64).reshape(n, per_cycle, 2)
    return arr[:, :, 0], arr[:, :, 1]


def _kernel_events(prof: Any) -> list[Any]:
    """torch.profiler's CUDA kernel events (device-side), from its own event list."""
    from torch.autograd import DeviceType

    return [e for e in prof.events() if e.device_type == DeviceType.CUDA and e.is_async is False
            and "memcpy" not in e.name.lower() and "memset" not in e.name.lower()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--in-process", type=int, default=0, metavar="BLOCKS",
                        help="both tools in one process, BLOCKS blocks of 50 cycles per variant")
    args = parser.parse_args()
    if args.in_process:
        result = in_process(args.in_process, 50)
        for key, cmp in result["comparisons"].items():
            print(key, json.dumps({k: v for k, v in cmp.items() if k != "rows"}))
        args.json.write_text(json.dumps({"in_process": result}, indent=1))
        return
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
