"""``perfdiff bench`` on the recorded GPU fixtures (fixtures/rmsnorm-h100*.json.gz,
fixtures/linalg-h100-*.json.gz): A/A pairs flag nothing as regressed, MAGMA vs cuSOLVER flags
both ways.

These fixtures were recorded with the GPU lead (``perfdiff.collect.kernels.lead``): an L2
flush and a 1 ms spin kernel before each cycle, so the host's launch delays stay out of the
span and the default measure can be trusted between runs. Kernel durations repeat between
runs on either measure; host work inside one ``eigh`` call still moves the linalg span a
little between processes (docs/howto/benchmarks.md), which is why the A/A tests pin "nothing
regressed" on the span and "nothing flagged at all" on kernel time.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from perfdiff.analysis.bench_cases import (
    BenchRules,
    BenchRun,
    bench_run,
    compare_cases,
    select_measure,
)
from perfdiff.report.bench_table import bench_view, render_markdown
from perfdiff.schema.io import load_run_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _load(name: str) -> BenchRun:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    return bench_run(load_run_file(path), name)


def test_rmsnorm_rerun_flags_nothing_on_kernel_time() -> None:
    a = select_measure(_load("rmsnorm-h100.json.gz"), "kernels")
    b = select_measure(_load("rmsnorm-h100-rerun.json.gz"), "kernels")
    changes = compare_cases(a, b)
    assert len(changes) == 4 * 4 * 2 * 8
    assert Counter(c.verdict for c in changes) == {"no change": len(changes)}


def test_fixtures_were_recorded_behind_the_gpu_lead() -> None:
    for name in ("rmsnorm-h100.json.gz", "rmsnorm-h100-rerun.json.gz",
                 "linalg-h100-magma.json.gz", "linalg-h100-cusolver.json.gz",
                 "linalg-h100-cusolver-rerun.json.gz"):
        assert _load(name).params.get("lead_us") == 1000, name


def test_rmsnorm_rerun_flags_nothing_regressed_on_the_default_measure() -> None:
    a = _load("rmsnorm-h100.json.gz")
    b = _load("rmsnorm-h100-rerun.json.gz")
    assert a.measure == b.measure == "span"
    changes = compare_cases(a, b)
    assert len(changes) == 4 * 4 * 2 * 8
    assert [c.label for c in changes if c.verdict == "regressed"] == []


def test_linalg_cusolver_rerun_flags_nothing_regressed() -> None:
    a = _load("linalg-h100-cusolver.json.gz")
    b = _load("linalg-h100-cusolver-rerun.json.gz")
    changes = compare_cases(a, b)
    assert len(changes) == 40
    assert [c.label for c in changes if c.verdict == "regressed"] == []
    kernel_changes = compare_cases(select_measure(a, "kernels"), select_measure(b, "kernels"))
    assert len(kernel_changes) == 40
    assert Counter(c.verdict for c in kernel_changes) == {"no change": 40}


def test_rmsnorm_span_differs_from_kernel_time_only_by_gaps() -> None:
    a = _load("rmsnorm-h100.json.gz")
    for case in a.cases.values():
        assert (case.kernel_ms <= case.gpu_ms + 1e-9).all(), case.label
    # one kernel per forward call for Triton and the extension: span == kernel time
    one_kernel = [c for c in a.cases.values()
                  if c.fields["impl"] in ("triton", "cuda") and c.fields["direction"] == "forward"]
    assert one_kernel and all((c.launches == 1).all() for c in one_kernel)
    assert all(abs(c.gpu_ms - c.kernel_ms).max() < 1e-9 for c in one_kernel)


def test_linalg_magma_vs_cusolver_flags_both_directions() -> None:
    magma = _load("linalg-h100-magma.json.gz")
    cusolver = _load("linalg-h100-cusolver.json.gz")
    changes = {c.label: c for c in compare_cases(magma, cusolver)}
    assert len(changes) == 40
    big = "op=eigh device=cuda batch=[] n=1024 dtype=float32"
    assert changes[big].verdict == "faster" and changes[big].ratio < 0.5
    verdicts = Counter(c.verdict for c in changes.values())
    assert verdicts["regressed"] >= 5 and verdicts["faster"] >= 5
    text = render_markdown(bench_view(magma, cusolver, list(changes.values()), BenchRules()))
    assert "gpu_time_before (magma) (ms)" in text and "gpu_time_after (cusolver) (ms)" in text
