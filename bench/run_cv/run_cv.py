"""Between-process variation of the same unmodified program (issue 28, "A pair of the same
variant says 'no change'"): the evidence behind ``compare``'s assumed run-to-run CV.

Why: a side recorded in one run cannot show how much a second process of the same program
would differ; ``compare`` assumes ``DEFAULT_RUN_CV_PCT`` (perfdiff/analysis/model.py). This
script gathers every committed per-process step median of one program and variant from one
device call, and reports their coefficient of variation (sample SD / mean of the process
medians), per (program, variant, call), for

- bare processes (the program without perfdiff, its own timer):
  ``bench/record_truth/results/*.json``, ``summary`` (or ``untraced_check.summary``),
  key ``bare``;
- recorded processes (the program's timer under ``perfdiff collect``, same files, key
  ``recorded``; bisect configurations that are not perfdiff's defaults are kept, labelled);
- perfdiff's own A/A recordings, ``fixtures/aa/gpt-infer-aa-*.json.gz`` (ten processes of the
  built-in gpt-infer, one device call): each run file's median measured cycle time.

Run: ``PYTHONPATH=. python bench/run_cv/run_cv.py > bench/run_cv/results/run-cv-2026-11-28.json``
(CPU only, reads committed files).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

from perfdiff.schema.io import load_run_file

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "record_truth" / "results"
AA = REPO / "fixtures" / "aa"


# the cost bisect's labels for configurations that are the plain program (its "D" rounds ran
# timm ViT-S bf16 bare, bench/README.md issue 28 "The cost was CUPTI's API kinds")
SAME_PROGRAM = {"timmD": "timm-bf16"}


def _cv_pct(values: list[float]) -> float:
    return 100.0 * statistics.stdev(values) / statistics.fmean(values)


def _host(name: str, data: dict[str, object]) -> str:
    machine = str(data.get("machine", ""))
    if "h200-x2" in machine or "h200x2" in name:
        return "H200 x2"
    return "H200" if ("h200" in name or "H200" in machine) else "H100"


def _summary(data: dict[str, object]) -> dict[str, dict[str, list[float]]]:
    found = data.get("summary")
    check = data.get("untraced_check")
    if found is None and isinstance(check, dict):
        found = check.get("summary")
    return found if isinstance(found, dict) else {}


def record_truth_rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            continue
        for program, sides in sorted(_summary(data).items()):
            for kind in ("bare", "recorded"):
                medians = [float(v) for v in sides.get(kind, [])]
                if len(medians) < 2:
                    continue
                rows.append({"source": str(path.relative_to(REPO)), "host": _host(path.name, data),
                             "program": SAME_PROGRAM.get(program, program), "processes": kind,
                             "medians_ms": medians, "cv_pct": round(_cv_pct(medians), 2),
                             "max_over_min_pct": round(100 * (max(medians) / min(medians) - 1),
                                                       1)})
    return rows


def aa_row() -> dict[str, object]:
    medians = []
    for path in sorted(AA.glob("gpt-infer-aa-*.json.gz")):
        run_file = load_run_file(path)
        durations = []
        for run in run_file.runs:
            c = run.cycles
            keep = ~np.asarray(c.warmup, dtype=bool)
            durations.extend(((np.asarray(c.end_ns) - np.asarray(c.start_ns))[keep] / 1e6).tolist())
        medians.append(round(float(np.median(durations)), 4))
    return {"source": "fixtures/aa/gpt-infer-aa-01..10.json.gz", "host": "see fixtures/README.md",
            "program": "gpt-infer (built-in)", "processes": "recorded (perfdiff, A/A)",
            "medians_ms": medians, "cv_pct": round(_cv_pct(medians), 2),
            "max_over_min_pct": round(100 * (max(medians) / min(medians) - 1), 1)}


def _spread(values: list[float]) -> dict[str, float]:
    q = np.percentile(values, [0, 25, 50, 75, 100])
    return {"n": len(values), "min": round(float(q[0]), 2), "q1": round(float(q[1]), 2),
            "median": round(float(q[2]), 2), "q3": round(float(q[3]), 2),
            "max": round(float(q[4]), 2)}


def main() -> None:
    rows = [*record_truth_rows(), aa_row()]
    bare = [r for r in rows if r["processes"] == "bare"]
    cvs = [float(r["cv_pct"]) for r in bare]  # type: ignore[arg-type]
    # per program and variant: the median over its calls, so a program measured in more calls
    # does not weigh more
    by_program: dict[str, list[float]] = {}
    for r in bare:
        by_program.setdefault(str(r["program"]), []).append(float(r["cv_pct"]))  # type: ignore[arg-type]
    per_program = {k: round(statistics.median(v), 2) for k, v in sorted(by_program.items())}
    out = {
        "what": "CV (%) of per-process step medians of one program and variant within one "
                "device call (bench/run_cv/run_cv.py)",
        "rows": rows,
        "bare_over_calls": _spread(cvs),
        "bare_per_program_median_over_calls": per_program,
        "bare_over_programs": _spread(list(per_program.values())),
        "recorded_over_calls": _spread([float(r["cv_pct"]) for r in rows  # type: ignore[arg-type]
                                        if r["processes"] != "bare"]),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
