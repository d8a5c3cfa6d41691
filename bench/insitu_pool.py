"""Pool in-situ cross-check passes: per case, every cycle of every pass, each still paired with
its own CUDA events.

Why: a host-bound call's time, and the in-situ reference's own floor, depend on the state of
the host *process*: on the lent H100 (a 16-vCPU virtual machine) the host cost of a CUDA call
after a host-bound return ranged from 14 to 106 us between processes of one configuration, and
the in-situ residual (perfdiff's ``call`` minus the events) from +0.5 to +9.8 us with it
(bench/crosscheck/README.md, "Where the end event lands"). One process samples one host state;
a case's time is better estimated from several. Pooling changes no pairing: every per-cycle
difference is still one call measured both ways in one process; only the median is taken
over the cycles of all passes. Each pass's own figures are printed beside the pooled ones.

usage: python bench/insitu_pool.py PASS.json PASS.json [...] [--measure call]
       [--limit-pct 5] [--json OUT]
PASS.json: ``bench/bench_crosscheck.py --in-situ ... --json PASS.json`` (same workload and
GPU; recorded since per-cycle times are kept in the rows). Exit code as bench_crosscheck.py:
0 every case whose pooled event median is over 20 us is within the limit by its pooled
paired difference, 1 not, 2 unusable
input (one line).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/NAME.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from perfdiff.errors import InputError


def _crosscheck() -> ModuleType:
    """bench_crosscheck beside this module (imported as part of the ``bench`` package)."""
    import bench.bench_crosscheck as crosscheck

    return crosscheck


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read an in-situ result ({exc})") from None
    summary, rows = data.get("summary"), data.get("rows")
    if not isinstance(summary, dict) or summary.get("mode") != "in-situ" or not isinstance(
            rows, list):
        raise InputError(f"{path}: not a bench_crosscheck.py --in-situ --json result")
    if rows and not all(isinstance(r, dict) and "cycles" in r for r in rows):
        raise InputError(f"{path}: has no per-cycle times (recorded before they were kept); "
                         "run the pass again")
    return data


def _array(values: Sequence[float | None]) -> np.ndarray:
    return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)


def pool(passes: Sequence[dict[str, Any]], measures: Sequence[str]) -> list[dict[str, Any]]:
    """Per case (in the first pass's order), one row over the cycles of every pass."""
    first = passes[0]["summary"]
    for data in passes[1:]:
        s = data["summary"]
        if (s.get("workload"), s.get("gpu")) != (first.get("workload"), first.get("gpu")):
            raise InputError(f"passes differ: {first.get('workload')} on {first.get('gpu')} "
                             f"and {s.get('workload')} on {s.get('gpu')}; pool one workload "
                             "on one GPU model")
    cc = _crosscheck()
    order: dict[str, list[dict[str, Any]]] = {}
    for data in passes:
        for row in data["rows"]:
            order.setdefault(row["case"], []).append(row)
    pooled = []
    for label, rows in order.items():
        if len(rows) != len(passes):
            raise InputError(f"case {label!r} is in {len(rows)} of {len(passes)} passes; "
                             "pool passes of the same grid")
        ev = np.concatenate([_array(r["cycles"]["event_ms"]) for r in rows])
        ours = {m: np.concatenate([_array(r["cycles"][f"{m}_ms"]) for r in rows])
                for m in measures if all(f"{m}_ms" in r["cycles"] for r in rows)}
        kernel_ms = statistics.median(float(r["kernel_ms"]) for r in rows)
        row = cc.case_row(label, ev, ours, kernel_ms)
        row["per_pass_paired_pct"] = {
            m: [r.get(f"paired_diff_{m}_pct") for r in rows] for m in ours}
        pooled.append(row)
    return pooled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("passes", type=Path, nargs="+")
    parser.add_argument("--measure", choices=("span", "stream", "call"), default="call")
    parser.add_argument("--limit-pct", type=float, default=5.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    cc = _crosscheck()
    try:
        if len(args.passes) < 2:
            raise InputError("give two or more passes to pool")
        passes = [_load(p) for p in args.passes]
        rows = pool(passes, cc.MEASURES)
    except InputError as exc:
        print(f"insitu_pool: {exc}", file=sys.stderr)
        return 2
    summary = {"mode": "in-situ pooled", "workload": passes[0]["summary"].get("workload"),
               "gpu": passes[0]["summary"].get("gpu"), "passes": [str(p) for p in args.passes],
               "per_pass": [{k: p["summary"].get(k) for k in
                             ("cases_over_20us", "within_limit", "max_abs_diff_pct")}
                            | {"within_limit_paired": p["summary"].get("by_measure", {})
                               .get(args.measure, {}).get("within_limit_paired")}
                            for p in passes],
               **cc.in_situ_summary(rows, args.measure, args.limit_pct)}
    cc.print_in_situ(rows)
    print(json.dumps({k: v for k, v in summary.items() if k != "by_measure"}))
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    if "within_limit" not in summary:
        print(f"insitu_pool: no {args.measure} time in these passes", file=sys.stderr)
        return 2
    return 0 if cc.in_situ_ok(summary) else 1


if __name__ == "__main__":
    sys.exit(main())
