"""perfdiff compare vs HolisticTraceAnalysis' TraceDiff.compare_traces on the same trace pairs.

Issue 15's acceptance: on the same pairs, in one run, ``perfdiff compare`` >= 5x faster than
HTA's ``compare_traces`` and <= half its peak memory; per-kernel totals of the step HTA compares
agree with HTA's (same kernels, same summed durations); perfdiff reports every step.

Each tool runs as a user would run it, in its own child process, timed from the process start
to its exit (imports included) with peak RSS from ``/usr/bin/time -f %M``:
- HTA: ``TraceDiff.compare_traces(control_dir, test_dir)`` (its defaults: first rank, first
  iteration, CPU ops and GPU kernels);
- perfdiff: ``perfdiff compare CONTROL TEST --force --format json -o FILE`` (--force: HTA's own
  trace_diff pair is an A100 trace against a V100 trace).
HTA needs a folder per trace: each pair's files are linked into a temporary folder.
HTA runs from its own venv (it is never a perfdiff dependency), perfdiff from the project's:
  python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install holistictraceanalysis
  .venv/bin/python bench/kineto/hta_vs_perfdiff.py --hta-python /tmp/hta-venv/bin/python \
      --repeat 5 --json bench/kineto/results.json
Any other pair (one trace file per side, e.g. larger HF Trainer or generate traces recorded
on the GPU): ``--pair NAME CONTROL TEST`` (repeatable); it runs with the built-in pairs, or
alone with ``--pairs NAME``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "kineto" / "hta"
PAIRS = {
    "hta-trace_diff": (SHARED / "trace_diff/control/control.json.gz",
                       SHARED / "trace_diff/test/test.json.gz"),
    "h100-gpt": (ROOT / "fixtures/kineto/kineto-gpt-normal.pt.trace.json.gz",
                 ROOT / "fixtures/kineto/kineto-gpt-abnormal.pt.trace.json.gz"),
    "h100-train": (ROOT / "fixtures/kineto/kineto-train-normal.pt.trace.json.gz",
                   ROOT / "fixtures/kineto/kineto-train-abnormal.pt.trace.json.gz"),
    "h100-hf": (ROOT / "fixtures/kineto/kineto-hf-normal.pt.trace.json.gz",
                ROOT / "fixtures/kineto/kineto-hf-abnormal.pt.trace.json.gz"),
}
HTA_CHILD = """
import sys, logging
logging.disable(logging.WARNING)
from hta.trace_diff import TraceDiff
comp = TraceDiff.compare_traces(sys.argv[1], sys.argv[2])
print(len(comp))
"""
HTA_FLOOR = "import logging; from hta.trace_diff import TraceDiff"
# what ``perfdiff compare A B --format json -o F`` imports (the console script's fast door,
# with the door's settings: one BLAS thread, no cyclic collector), before it reads a byte
PERFDIFF_FLOOR = ("import gc, os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); "
                  "gc.disable(); import perfdiff.cli.entry, perfdiff.cli.compare_run, "
                  "perfdiff.cli.guard, perfdiff.analysis.entry, perfdiff.analysis.comparison, "
                  "perfdiff.report.json_report, perfdiff.readers.torch_profiler")
HTA_GPU_TOTALS = """
import sys, json, logging
logging.disable(logging.WARNING)
from hta.trace_diff import TraceDiff, DeviceType, LabeledTrace
c = LabeledTrace(trace_dir=sys.argv[1], label="control")
t = LabeledTrace(trace_dir=sys.argv[2], label="test")
out = {}
for side, trace in (("control", c), ("test", t)):
    it = trace.iterations()[0]
    ops = trace.get_ops_summary(trace.extract_ops(None, it, DeviceType.GPU))
    totals = ops.groupby("name")[["counts", "total_duration"]].sum()
    out[side] = {"iteration": int(it), "iterations": [int(i) for i in trace.iterations()],
                 "totals": {n: [int(r.counts), float(r.total_duration)]
                            for n, r in totals.iterrows()}}
print(json.dumps(out))
"""


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of a child process."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True,
                          env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    peak_kib = int(proc.stderr.strip().splitlines()[-1])
    return wall, peak_kib / 1024, proc.stdout


def folders(pair: tuple[Path, Path], tmp: Path, name: str) -> tuple[Path, Path]:
    out = []
    for side, path in zip(("control", "test"), pair, strict=True):
        folder = tmp / name / side
        folder.mkdir(parents=True)
        (folder / path.name).symlink_to(path)
        out.append(folder)
    return out[0], out[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pairs", nargs="*", default=None,
                        help="pairs to run, by name (default: all, --pair ones included)")
    parser.add_argument("--pair", nargs=3, action="append", default=[],
                        metavar=("NAME", "CONTROL", "TEST"),
                        help="another pair of trace files to run (repeatable)")
    parser.add_argument("--hta-python", default=sys.executable,
                        help="interpreter of a venv with holistictraceanalysis")
    args = parser.parse_args()
    for name, control, test in args.pair:
        PAIRS[name] = (Path(control).resolve(), Path(test).resolve())
    if args.pairs is None:
        args.pairs = list(PAIRS)
    unknown = [name for name in args.pairs if name not in PAIRS]
    if unknown:
        parser.error(f"unknown pair(s) {unknown}; known: {sorted(PAIRS)}")
    py, hta_py = sys.executable, args.hta_python
    results: dict[str, Any] = {}
    # the floor: interpreter start and imports, before either tool reads a byte
    floors = {tool: [timed([interpreter, "-c", code]) for _ in range(args.repeat)]
              for tool, interpreter, code in (("hta", hta_py, HTA_FLOOR),
                                              ("perfdiff", py, PERFDIFF_FLOOR))}
    results["floor"] = {tool: {"seconds": [r[0] for r in runs], "peak_mib": [r[1] for r in runs]}
                        for tool, runs in floors.items()}
    results["floor"]["when_utc"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    print("floor (start + imports): " + ", ".join(
        f"{tool} {min(r[0] for r in runs):.2f} s {max(r[1] for r in runs):.0f} MiB"
        for tool, runs in floors.items()))
    print("| pair | HTA s | HTA MiB | perfdiff s | perfdiff MiB | speed-up | memory ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for name in args.pairs:
            pair = PAIRS[name]
            if not all(p.exists() for p in pair):
                print(f"| {name} | skipped: {pair} not found |")
                continue
            control_dir, test_dir = folders(pair, tmp, name)
            hta, pd_ = [], []
            for i in range(args.repeat):  # interleaved, so drift of the machine hits both
                hta.append(timed([hta_py, "-c", HTA_CHILD, str(control_dir), str(test_dir)]))
                out = tmp / f"{name}-{i}.json"
                pd_.append(timed([py, "-c", "from perfdiff.cli.entry import main; main()",
                                  "compare", str(pair[0]), str(pair[1]), "--force",
                                  "--format", "json", "-o", str(out)]))
            hta_s = min(r[0] for r in hta)
            hta_mib = max(r[1] for r in hta)
            pd_s = min(r[0] for r in pd_)
            pd_mib = max(r[1] for r in pd_)
            print(f"| {name} | {hta_s:.2f} | {hta_mib:.0f} | {pd_s:.2f} | {pd_mib:.0f} | "
                  f"{hta_s / pd_s:.1f}x | {pd_mib / hta_mib:.2f} |", flush=True)
            entry: dict[str, Any] = {
                "when_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                "load_average_1min": os.getloadavg()[0],
                "hta_seconds": [r[0] for r in hta], "hta_peak_mib": [r[1] for r in hta],
                "perfdiff_seconds": [r[0] for r in pd_],
                "perfdiff_peak_mib": [r[1] for r in pd_],
            }
            # HTA rounds ns-resolution times (ts up, end down: up to 2 us less per kernel)
            # unless told not to; the totals check compares unrounded sums
            exact = {**os.environ, "HTA_DISABLE_NS_ROUNDING": "1"}
            _, _, hta_out = timed([hta_py, "-c", HTA_GPU_TOTALS, str(control_dir), str(test_dir)],
                                  env=exact)
            hta_totals = json.loads(hta_out)
            entry["totals_check"] = {
                side: check_totals(hta_totals[side], path)
                for side, path in zip(("control", "test"), pair, strict=True)
            }
            results[name] = entry
    for name, entry in results.items():
        for side, check in entry.get("totals_check", {}).items():
            print(f"{name} {side}: HTA step {check['step']}: {check['names']} names, "
                  f"{check['same_names']=}, {check['same_counts']=}, max |diff| "
                  f"{check['max_abs_diff_us']:.3f} us, perfdiff steps {check['perfdiff_steps']}")
    if args.json:
        # merged into what the file holds: a later run of one pair (--pair) keeps the others
        old = json.loads(args.json.read_text()) if args.json.is_file() else {}
        old.update(results)
        args.json.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
    return 0


def check_totals(hta_side: dict[str, Any], path: Path) -> dict[str, Any]:
    """perfdiff's per-name totals of HTA's step against HTA's (kernels, memcpy, memset)."""
    import numpy as np

    from perfdiff.readers.torch_profiler import read_torch_profiler

    step = int(hta_side["iteration"])
    rf = read_torch_profiler([path])
    run = rf.runs[0]
    mine: dict[str, list[float]] = {}

    def add(names: list[str], start: Any, end: Any, cycle: Any) -> None:
        sel = np.flatnonzero(cycle == step)
        for i in sel:
            entry = mine.setdefault(names[i], [0, 0.0])
            entry[0] += 1
            entry[1] += int(end[i] - start[i]) / 1e3

    k = run.kernels
    add([rf.strings[int(i)].demangled for i in k.name_id], k.start_ns, k.end_ns, k.cycle)
    for table in (run.memcpy, run.memset):
        add(trace_names(path, table), table.start_ns, table.end_ns, table.cycle)
    theirs = hta_side["totals"]
    common = set(mine) & set(theirs)
    diffs = [abs(mine[n][1] - theirs[n][1]) for n in common]
    return {
        "step": step, "names": len(theirs), "same_names": set(mine) == set(theirs),
        "only_hta": sorted(set(theirs) - set(mine))[:5],
        "only_perfdiff": sorted(set(mine) - set(theirs))[:5],
        "same_counts": all(mine[n][0] == theirs[n][0] for n in common),
        "max_abs_diff_us": max(diffs) if diffs else 0.0,
        "perfdiff_steps": sorted(int(i) for i in run.cycles.index),
        "hta_iterations": hta_side["iterations"],
    }


def trace_names(path: Path, table: Any) -> list[str]:
    """The trace's own names for memcpy/memset rows (the run file keeps only their kind)."""
    kind_to_name = {"memset": "Memset (Device)"}
    import gzip

    import msgspec

    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    for event in msgspec.json.decode(data)["traceEvents"]:
        if event.get("cat") == "gpu_memcpy":
            kind_to_name.setdefault(event["name"].split()[1], event["name"])
    return [kind_to_name.get(k, k) for k in table.kind]


if __name__ == "__main__":
    raise SystemExit(main())
