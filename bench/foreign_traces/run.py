"""``perfdiff compare`` over every trace file of two public test suites, and their sensible pairs.

Issue 24's acceptance: on torch.profiler traces nobody here recorded (AMD-AGI/TraceLens
``tests/traces``, facebookresearch/HolisticTraceAnalysis ``tests/data``), each run ends in a
report or one clear line (exit 2, 3 or 4 with one line on stderr), never a traceback and never
exit 70. Every trace is compared with itself (a report must then be quiet: no finding), and
the pairs a user would make (same folder, the same model on H100 and MI300X, decode against
prefill+decode) are compared with ``--force`` (different GPUs are the point of those pairs).

The repositories are read from their fetched mirrors (bare git dirs; fetch them with the
``fetch`` tool, github:AMD-AGI/TraceLens and github:facebookresearch/HolisticTraceAnalysis),
extracted file by file into a temporary folder (the mirrors lack their largest files):

  PYTHONPATH=$PWD .venv/bin/python bench/foreign_traces/run.py [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

MIRRORS = Path("/work/.mirror")
SUITES = {"TraceLens": ("AMD-AGI+TraceLens", "tests/traces"),
          "HTA": ("facebookresearch+HolisticTraceAnalysis", "tests/data")}
ENTRY = [sys.executable, "-c", "from perfdiff.cli.entry import main; main()"]


def extract(root: Path) -> dict[str, list[Path]]:
    """Every .json/.json.gz file of each suite that the mirror holds, written under ``root``."""
    found: dict[str, list[Path]] = {}
    for suite, (mirror, folder) in SUITES.items():
        git = ["git", "--git-dir", str(MIRRORS / mirror / "repo")]
        names = subprocess.run([*git, "ls-tree", "-r", "--name-only", "HEAD", folder],
                               capture_output=True, text=True, check=True).stdout.split()
        files = []
        for name in names:
            if not name.endswith((".json", ".json.gz")):
                continue
            blob = subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True)
            if blob.returncode:
                continue  # not in the mirror (its largest files are left out)
            path = root / suite / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob.stdout)
            files.append(path)
        found[suite] = sorted(files)
    return found


def is_trace(path: Path) -> bool:
    """A file a user would hand perfdiff as a torch.profiler trace (it has traceEvents)."""
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            return b'"traceEvents"' in handle.read(1 << 20)
    except OSError:
        return False


def pairs(files: list[Path]) -> list[tuple[Path, Path]]:
    """Sensible pairs: traces of one folder; the same file name under two folders (TraceLens
    h100/ against mi300/, HTA's related copies); decode against prefill+decode of one engine."""
    out: set[tuple[Path, Path]] = set()
    by_folder: dict[Path, list[Path]] = {}
    for f in files:
        by_folder.setdefault(f.parent, []).append(f)
    for group in by_folder.values():
        out.update(itertools.combinations(sorted(group), 2))
    by_name: dict[str, list[Path]] = {}
    for f in files:
        by_name.setdefault(f.name, []).append(f)
    for group in by_name.values():
        out.update(itertools.combinations(sorted(group), 2))
    for engine in ("sglang", "vllm"):
        decode = [f for f in files if f"{engine}_decode" in str(f) and "capture" not in str(f)]
        both = [f for f in files if f"{engine}_prefilldecode" in str(f)
                and "capture" not in str(f)]
        out.update(itertools.product(decode, both))
    # HTA's folder pairs (one trace per folder): control/test, base/test
    for a, b in (("trace_diff/control", "trace_diff/test"),
                 ("trace_compare/base", "trace_compare/test")):
        left = [f for f in files if a in str(f)]
        right = [f for f in files if b in str(f)]
        out.update(itertools.product(left, right))
    return sorted(out)


def compare(normal: Path, abnormal: Path, out: Path) -> dict[str, Any]:
    """One ``perfdiff compare`` as a user runs it; what came out."""
    began = time.perf_counter()
    args = [*ENTRY, "compare", str(normal), str(abnormal), "--format", "json", "-o", str(out)]
    if normal != abnormal:
        args.append("--force")
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    result: dict[str, Any] = {"normal": str(normal), "abnormal": str(abnormal),
                              "rc": done.returncode, "s": round(time.perf_counter() - began, 2),
                              "stderr": done.stderr.strip()}
    if done.returncode in (0, 1) and out.is_file():
        report = json.loads(out.read_text())
        result.update(_summary(report))
        out.unlink()
    return result


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    """Cycles per side and the number of findings (significant rows) of a JSON report."""
    body = report["comparison"]
    cycles = [body[side]["n_cycles"] for side in ("normal", "abnormal")]
    findings = [f for f in body["findings"] if f.get("verdict") in ("slower", "faster")]
    return {"cycles": cycles, "findings": len(findings),
            "cycles_from": body["normal"].get("cycle_definition"),
            "cycle_verdict": body["cycle_time"].get("verdict")}


def outcome(result: dict[str, Any]) -> str:
    """report / clear line / traceback / internal error / unclear (more than one line)."""
    err = result["stderr"]
    if "Traceback" in err:
        return "traceback"
    if result["rc"] == 70:
        return "exit 70"
    if result["rc"] in (0, 1):
        return "report"
    lines = [line for line in err.splitlines() if line.strip()]
    return "clear line" if len(lines) == 1 and err.startswith("perfdiff: error:") else "unclear"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write every result here")
    parser.add_argument("--only", help="run only files whose path contains this text")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        found = extract(root)
        every = [f for files in found.values() for f in files]
        traces = [f for f in every if is_trace(f)]
        if args.only:
            traces = [f for f in traces if args.only in str(f)]
        print(f"{len(every)} .json/.json.gz files, {len(traces)} with traceEvents "
              f"({', '.join(f'{k}: {len(v)}' for k, v in found.items())})")
        runs = [(f, f) for f in traces] + pairs(traces)
        results = []
        for normal, abnormal in runs:
            result = compare(normal, abnormal, root / "report.json")
            result["outcome"] = outcome(result)
            results.append(result)
            shown = (f"cycles {result.get('cycles')} findings {result.get('findings')}"
                     if result["outcome"] == "report" else result["stderr"][-300:])
            print(f"{result['outcome']:10s} rc={result['rc']:<3d} {result['s']:6.2f}s "
                  f"{normal.relative_to(root)} vs {abnormal.relative_to(root)}: {shown}",
                  flush=True)
        counts = Counter(r["outcome"] for r in results)
        self_runs = [r for r in results if r["normal"] == r["abnormal"]]
        noisy_self = [r for r in self_runs if r["outcome"] == "report" and r.get("findings")]
        print(f"\n{len(results)} runs ({len(self_runs)} self, {len(results) - len(self_runs)} "
              f"pairs): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
              + f"; self-comparisons with a finding: {len(noisy_self)}")
        if args.json:
            args.json.write_text(json.dumps(
                [{**r, "normal": str(Path(r["normal"]).relative_to(root)),
                  "abnormal": str(Path(r["abnormal"]).relative_to(root))} for r in results],
                indent=1) + "\n")


if __name__ == "__main__":
    main()
