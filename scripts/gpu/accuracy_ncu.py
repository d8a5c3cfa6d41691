"""Accuracy of perfdiff's PM-sampled per-kernel utilisation against Nsight Compute.

Method: (1) ``perfdiff collect gpt-infer`` with a 2 us PM interval; per launch position
within a cycle (the launch sequence is the same in every cycle) take the median over the
measured cycles of the kernel's time-weighted PM mean (perfdiff.analysis.kernel_metrics).
(2) ``ncu --clock-control none`` (never touch the card's clocks) profiles one steady-state
cycle of the same workload run bare (scripts/gpu/run_bare.py --profile-last) for the
corresponding per-kernel metrics. (3) For kernels longer than 20 us, compare position by
position (names are checked to match) and count those within 10 percentage points.

Usage: python scripts/gpu/accuracy_ncu.py --work DIR --json OUT.json
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from perfdiff.analysis.kernel_metrics import kernel_metric_means
from perfdiff.collect.cupti.pm_sampling import DRAM_METRIC, TENSOR_METRIC
from perfdiff.schema.io import load_run_file

NCU_METRICS = {
    "tensor": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "dram": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "duration": "gpu__time_duration.sum",
}
MIN_US = 20.0
TOLERANCE_PP = 10.0


def perfdiff_positions(path: Path) -> list[dict[str, object]]:
    rf = load_run_file(path)
    run = rf.runs[0]
    by_name = {m.name: m for m in run.metrics}
    tensor = kernel_metric_means(run, by_name[TENSOR_METRIC])
    dram = kernel_metric_means(run, by_name[DRAM_METRIC])
    measured = run.cycles.index[~run.cycles.warmup]
    per_cycle = [np.flatnonzero(run.kernels.cycle == c) for c in measured]
    counts = {len(ix) for ix in per_cycle}
    if len(counts) != 1:
        sys.exit(f"kernel count differs between cycles: {sorted(counts)}")
    stack = np.vstack(per_cycle)  # cycles x positions
    dur = (run.kernels.end_ns - run.kernels.start_ns)[stack] / 1000.0
    out = []
    for j in range(stack.shape[1]):
        name = rf.strings[int(run.kernels.name_id[stack[0, j]])].demangled
        out.append({
            "name": name,
            "dur_us": float(np.median(dur[:, j])),
            "tensor": float(np.nanmedian(tensor[stack[:, j]])),
            "dram": float(np.nanmedian(dram[stack[:, j]])),
        })
    return out


def ncu_positions(work: Path, params: list[str]) -> list[dict[str, object]]:
    log = work / "ncu.csv"
    cmd = [
        "ncu", "--clock-control", "none", "--profile-from-start", "off", "--csv",
        "--page", "raw", "--log-file", str(log),
        "--metrics", ",".join(NCU_METRICS.values()),
        sys.executable, "scripts/gpu/run_bare.py", "gpt-infer", "--cycles", "1",
        "--warmup", "3", "--profile-last", *params,
    ]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    text = log.read_text()
    start = text.index('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    rows = [r for r in rows if r.get("ID", "").strip().isdigit()]  # drop the units row
    out = []
    for r in rows:
        out.append({
            "name": r["Kernel Name"],
            "dur_us": float(r[NCU_METRICS["duration"]].replace(",", "")) / 1000.0,
            "tensor": float(r[NCU_METRICS["tensor"]].replace(",", "")),
            "dram": float(r[NCU_METRICS["dram"]].replace(",", "")),
        })
    return out


def short(name: str) -> str:
    """The bare kernel name: namespaces, template and parameter lists dropped."""
    # "(anonymous namespace)" must go first, or splitting at "(" leaves "void at::native::"
    base = name.replace("(anonymous namespace)", "anonymous").split("(")[0]
    base = base.split("<")[0].replace("void ", "").strip()
    return base.split("::")[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("-p", "--param", action="append", default=[])
    parser.add_argument("--interval-ns", type=int, default=2000,
                        help="perfdiff's PM interval (the collector's default is 20000)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    run_path = args.work / "accuracy-gpt-infer.json.gz"
    params = [x for p in args.param for x in ("-p", p)]
    subprocess.run(["perfdiff", "collect", "gpt-infer", "--cycles", "20", "--warmup", "3",
                    "--sample-interval-ns", str(args.interval_ns), "-q", "-o", str(run_path),
                    *params],
                   check=True)
    ours = perfdiff_positions(run_path)
    theirs = ncu_positions(args.work, params)
    if len(ours) != len(theirs):
        print(f"WARNING: {len(ours)} kernels per cycle in perfdiff, {len(theirs)} under ncu")
    rows = []
    for j, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        same = short(str(a["name"])) == short(str(b["name"]))
        rows.append({
            "position": j, "kernel": short(str(a["name"])), "names_match": same,
            "dur_us_perfdiff": round(float(a["dur_us"]), 1),  # type: ignore[arg-type]
            "dur_us_ncu": round(float(b["dur_us"]), 1),  # type: ignore[arg-type]
            "tensor_perfdiff": round(float(a["tensor"]), 1),  # type: ignore[arg-type]
            "tensor_ncu": round(float(b["tensor"]), 1),  # type: ignore[arg-type]
            "dram_perfdiff": round(float(a["dram"]), 1),  # type: ignore[arg-type]
            "dram_ncu": round(float(b["dram"]), 1),  # type: ignore[arg-type]
        })
    long_rows = [r for r in rows if r["dur_us_perfdiff"] > MIN_US and r["names_match"]]
    for r in long_rows:
        r["tensor_diff_pp"] = round(abs(r["tensor_perfdiff"] - r["tensor_ncu"]), 1)
        r["dram_diff_pp"] = round(abs(r["dram_perfdiff"] - r["dram_ncu"]), 1)
        r["within_10pp"] = r["tensor_diff_pp"] <= TOLERANCE_PP and r["dram_diff_pp"] <= TOLERANCE_PP
    summary = {
        "kernels_per_cycle": len(ours),
        "ncu_kernels": len(theirs),
        "name_mismatches": sum(not r["names_match"] for r in rows),
        "kernels_over_20us": len(long_rows),
        "within_10pp": sum(bool(r["within_10pp"]) for r in long_rows),
        "rows_over_20us": long_rows,
        "all_rows": rows,
    }
    summary["interval_ns"] = args.interval_ns
    print(json.dumps({k: v for k, v in summary.items() if k != "all_rows"}, indent=1))
    args.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
