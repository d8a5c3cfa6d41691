"""`perfdiff compare` of recorded pairs against the bare programs' own step-time change.

Why: issue 28's acceptance sets each compare's mean-cycle-time change against the bare
processes' change (median steady step of the program's own timer, same device call), within
5 pp + 10 % of it, same direction; a pair of one variant must say "no change". Runs on the
device machine (the run files stay there) and prints one JSON line per pair.

Usage: python bench/record_truth/compare_pairs.py DIR A B [--rounds 3] [--json OUT]
  DIR holds A-rR.json.gz / B-rR.json.gz (recorded) and A-rR-bare.log / B-rR-bare.log.
  Pairs: A-rR -> B-rR for each round, and A-r1 -> A-r2, A-r2 -> A-r3 (same variant).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from untraced_check import timer_of


def compare(normal: str, abnormal: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "c.json")
        proc = subprocess.run([sys.executable, "-c", "from perfdiff.cli.app import main; main()",
                               "compare", normal, abnormal, "--format", "json", "-o", out],
                              capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode not in (0, 1) or not os.path.exists(out):
            return {"error": proc.stderr.strip()[-400:], "rc": proc.returncode}
        with open(out) as fh:
            c = json.load(fh)["comparison"]
    ct = c["cycle_time"]
    if ct.get("delta_pct") is None:  # no cycle-time change computed (the report says why)
        return {"delta_pct": None, "verdict": ct.get("verdict"), "notes": c.get("notes", [])[:4]}
    return {"delta_pct": round(ct["delta_pct"], 2),
            "ci_pct": [round(ct["ci_low_pct"], 2), round(ct["ci_high_pct"], 2)],
            "verdict": ct["verdict"], "notes": c.get("notes", [])[:3]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json")
    a = p.parse_args()
    bare: dict[str, list[float]] = {a.a: [], a.b: []}
    for name in bare:
        for r in range(1, a.rounds + 1):
            t = timer_of(os.path.join(a.dir, f"{name}-r{r}-bare.log"))
            if t and t.get("median_step_ms") is not None:
                bare[name].append(float(t["median_step_ms"]))
    change = None
    if bare[a.a] and bare[a.b]:
        change = 100 * (statistics.median(bare[a.b]) / statistics.median(bare[a.a]) - 1)
    band = None if change is None else [round(change - 5 - 0.1 * abs(change), 1),
                                        round(change + 5 + 0.1 * abs(change), 1)]
    rows = []
    pairs = [(f"{a.a}-r{r}", f"{a.b}-r{r}") for r in range(1, a.rounds + 1)]
    pairs += [(f"{a.a}-r{r}", f"{a.a}-r{r + 1}") for r in range(1, a.rounds)]
    for x, y in pairs:
        fx, fy = (os.path.join(a.dir, f"{n}.json.gz") for n in (x, y))
        if not (os.path.exists(fx) and os.path.exists(fy)):
            continue
        row = {"pair": f"{x} -> {y}", **compare(fx, fy)}
        same = x.rsplit("-r", 1)[0] == y.rsplit("-r", 1)[0]
        if not same and band is not None and row.get("delta_pct") is not None:
            row["in_band"] = band[0] <= row["delta_pct"] <= band[1]
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {"bare_ms": bare, "bare_change_pct": None if change is None else round(change, 1),
               "band_pct": band, "rows": rows}
    print("COMPARE " + json.dumps(summary), flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(summary, fh, indent=1)


if __name__ == "__main__":
    main()
