"""Issue 5 acceptance on the real 2-GPU DDP recordings: the report singles out the contended GPU.

The pair was recorded on 2x H200 (fixtures/README.md): rank 1's GPU shared with a process
running matrix products. Every rank waits for the slowest at each all-reduce, so *both* ranks'
cycles get longer; the report must still put the contended GPU's kernels first and the
per-device summary must show that GPU departing from the other.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.schema import load_run_file
from tests.door import compare_inputs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NORMAL = FIXTURES / "ddp-normal.json.gz"
CONTENDED = FIXTURES / "ddp-contended-gpu1.json.gz"


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return compare_inputs(NORMAL, CONTENDED, CompareOptions())


def test_each_rank_recorded_its_own_gpu_with_pm_samples() -> None:
    for path in (NORMAL, CONTENDED):
        run_file = load_run_file(path)
        assert run_file.status.state == "complete"
        assert sorted(r.rank for r in run_file.runs) == [0, 1]
        for run in run_file.runs:
            assert set(run.kernels.device.tolist()) == {run.rank}
            assert (~run.cycles.warmup).sum() >= 30
            pm = [m for m in run.metrics if m.source == "pm_sampling"]
            assert pm and all(m.values.size > 0 for m in pm)


def test_first_findings_are_on_the_contended_gpu(comparison: Comparison) -> None:
    assert comparison.findings, "the contended run must produce findings"
    first = comparison.findings[0]
    assert first.device.startswith("GPU 1")
    assert first.verdict == "slower"


def test_device_summary_singles_out_the_contended_gpu(comparison: Comparison) -> None:
    by_device = {d.device.split(" (")[0]: d for d in comparison.devices}
    assert set(by_device) == {"GPU 0", "GPU 1"}
    contended, other = by_device["GPU 1"], by_device["GPU 0"]
    assert contended.verdict == "slower"
    # the contended GPU's compute time grows several times more than its peer's
    assert contended.delta_pct > 3 * max(other.delta_pct, 1.0)
