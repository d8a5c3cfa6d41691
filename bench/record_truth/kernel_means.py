"""Per-kernel mean durations: a perfdiff run file beside a torch.profiler trace of the same program.

Why: issue 28's CUDA-graph acceptance (per-kernel means within 2 % of torch.profiler's for
every kernel above 5 us; GPU busy never above cycle time on one stream). perfdiff's side uses
traced, measured cycles only; the profiler's side every ``cat == "kernel"`` event of its
active steps. Kernels are matched by demangled name (the profiler writes demangled names).

Usage: python bench/record_truth/kernel_means.py RUN.json.gz TRACE.pt.trace.json.gz [--json OUT]
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from typing import Any

import numpy as np

from perfdiff.schema.io import load_run_file


def perfdiff_means(path: str) -> tuple[dict[str, float], dict[str, Any]]:
    rf = load_run_file(path)
    run = rf.runs[0]
    c, k = run.cycles, run.kernels
    traced = np.ones(c.index.size, dtype=bool) if c.traced is None else np.asarray(c.traced) == 1
    use = traced & ~np.asarray(c.warmup)
    keep = (k.cycle >= 0) & use[np.clip(k.cycle, 0, None)]
    dur = (k.end_ns - k.start_ns)[keep] / 1e3
    names = [rf.strings[i].demangled for i in k.name_id[keep]]
    per: dict[str, list[float]] = defaultdict(list)
    for n, d in zip(names, dur, strict=True):
        per[n].append(float(d))
    busy = np.bincount(k.cycle[keep], weights=dur * 1e3, minlength=c.index.size)
    length = (c.end_ns - c.start_ns).astype(float)
    ratio = busy[use] / length[use]
    return ({n: float(np.mean(v)) for n, v in per.items()},
            {"cycles": int(use.sum()), "busy_over_cycle_max": round(float(ratio.max()), 3),
             "busy_over_cycle_median": round(float(np.median(ratio)), 3),
             "warnings": list(rf.collection.warnings)})


def profiler_means(path: str) -> dict[str, float]:
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as fh:
        trace = json.load(fh)
    per: dict[str, list[float]] = defaultdict(list)
    for e in trace.get("traceEvents", []):
        if e.get("cat") == "kernel" and "dur" in e:
            per[e["name"]].append(float(e["dur"]))
    return {n: float(np.mean(v)) for n, v in per.items()}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run")
    p.add_argument("trace")
    p.add_argument("--json")
    a = p.parse_args()
    ours, info = perfdiff_means(a.run)
    theirs = profiler_means(a.trace)
    rows = []
    for name in sorted(set(ours) | set(theirs), key=lambda n: -theirs.get(n, ours.get(n, 0))):
        o, t = ours.get(name), theirs.get(name)
        diff = None if o is None or t is None else round(100 * (o / t - 1), 2)
        rows.append({"kernel": name[:70], "perfdiff_us": None if o is None else round(o, 3),
                     "profiler_us": None if t is None else round(t, 3), "diff_pct": diff})
        print(f"{name[:70]:70s} {o if o is None else round(o, 3)!s:>9} "
              f"{t if t is None else round(t, 3)!s:>9} {diff!s:>7} %")
    print(json.dumps(info))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"info": info, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
