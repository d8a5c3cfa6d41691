"""Verdicts of ``perfdiff compare`` on every same-variant pair of recordings under fixtures/
(A/A) and every known-change pair (the demo's, the goldens', the real A/B fixtures), at the
default assumed run-to-run CV and at the alternatives the between-process evidence suggests
(``run_cv.py``). ``--force`` throughout: the HTA pair is A100 vs V100, as its golden.

Why: the default decides both how often an A/A pair of one-run sides says "slower" and how
large a real change must be to be found; one table shows both sides of that trade.

Run (CPU; ../shared must hold latencyprism/ and kineto/hta/)::

    PYTHONPATH=. python bench/run_cv/pair_verdicts.py 1 2 3 5.8 \
        > bench/run_cv/results/pair-verdicts-2026-11-28.json
    PYTHONPATH=. python bench/run_cv/pair_verdicts.py 3 3/18 \
        > bench/run_cv/results/pair-verdicts-2026-12-08.json   (CV/HOST: --host-run-cv-pct)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from perfdiff.analysis.model import CompareOptions
from perfdiff.cli.compare_run import compare_paths

REPO = Path(__file__).resolve().parents[2]
F = REPO / "fixtures"
SHARED = REPO.parent / "shared"
HTA = SHARED / "kineto" / "hta" / "trace_diff"

AA = [(F / "aa" / f"gpt-infer-aa-{i:02d}.json.gz", F / "aa" / f"gpt-infer-aa-{i + 1:02d}.json.gz")
      for i in range(1, 10)]
AA += [(F / "rmsnorm-h100.json.gz", F / "rmsnorm-h100-rerun.json.gz"),
       (F / "linalg-h100-cusolver.json.gz", F / "linalg-h100-cusolver-rerun.json.gz")]
AB = [
    (F / "gpt-infer-normal.json.gz", F / "gpt-infer-contended.json.gz"),  # demo and golden
    (F / "train-step-normal.json.gz", F / "train-step-adamw-loop.json.gz"),  # golden
    (F / "ddp-normal.json.gz", F / "ddp-contended-gpu1.json.gz"),  # golden
    (HTA / "control" / "control.json.gz", HTA / "test" / "test.json.gz"),  # golden
    (SHARED / "latencyprism" / "sglang" / "gpu_instability" / "normal_perf_data",
     SHARED / "latencyprism" / "sglang" / "gpu_instability" / "abnormal_perf_data"),  # golden
    (F / "timm" / "timm-vit-bf16.json.gz", F / "timm" / "timm-vit-fp32.json.gz"),
    (F / "gpt2" / "gpt2-generate-sdpa.json.gz", F / "gpt2" / "gpt2-generate-eager.json.gz"),
    (F / "linalg-h100-cusolver.json.gz", F / "linalg-h100-magma.json.gz"),
    (F / "trainer-gpt2.json.gz", F / "trainer-gpt2-gc.json.gz"),
]


def _row(kind: str, normal: Path, abnormal: Path, cv: float, host: float) -> dict[str, object]:
    options = CompareOptions(run_cv_pct=cv, host_run_cv_pct=host, force=True)
    comparison = compare_paths(normal, abnormal, options)[0]
    ct = comparison.cycle_time
    sides = comparison.options.side_run_cv_pct
    found = [r for r in comparison.rows if r.verdict in ("slower", "faster")]
    return {"kind": kind, "normal": str(normal.relative_to(REPO.parent)),
            "abnormal": str(abnormal.relative_to(REPO.parent)), "run_cv_pct": cv,
            "host_run_cv_pct": host,
            "side_run_cv_pct": [round(v, 2) for v in sides] if sides else None,
            "test_unit": comparison.test_unit, "cycle_verdict": ct.verdict,
            "cycle_delta_pct": round(ct.delta_pct, 2),
            "cycle_ci_pct": [round(ct.ci_low_pct, 2), round(ct.ci_high_pct, 2)],
            "rows_slower_or_faster": len(found)}


def main() -> None:
    # CV or CV/HOST (--run-cv-pct, --host-run-cv-pct; a bare CV: no raise where the GPU idles)
    cvs = [(float(a.split("/")[0]), float(a.split("/")[1]) if "/" in a else 0.0)
           for a in sys.argv[1:]] or [(3.0, 0.0)]
    rows = []
    for kind, pairs in (("A/A", AA), ("A/B", AB)):
        for normal, abnormal in pairs:
            for cv, host in cvs:
                rows.append(_row(kind, normal, abnormal, cv, host))
                print(json.dumps(rows[-1]), file=sys.stderr)
    json.dump({"rows": rows}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
