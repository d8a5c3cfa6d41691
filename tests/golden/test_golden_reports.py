"""Golden markdown reports: real inputs -> the full report, pinned byte for byte.

Regenerate with ``pytest tests/golden --update-golden`` and review ``git diff tests/golden``.
The expected files are our outputs (not copies of the input data). Inputs:
- the LatencyPrism SGLang incidents under ../shared/latencyprism (skipped when absent);
- the GPU fixtures under fixtures/ recorded by ``perfdiff collect`` (skipped until they exist).
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from pathlib import Path

import pytest

from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.report.markdown import render_markdown
from tests.door import compare_inputs
from tests.shared_data import missing_reason, shared

GOLDEN = Path(__file__).parent
REPO = GOLDEN.parents[1]
LATENCYPRISM = Path(os.environ.get("PERFDIFF_LATENCYPRISM", shared("latencyprism")))
SEED_REPORT = Path(os.environ.get("PERFDIFF_SEEDS", shared("seeds"))) / (
    "strict-comparison-report.md"
)
FIXTURE_PAIRS = {
    "gpt-infer": ("gpt-infer-normal.json.gz", "gpt-infer-contended.json.gz"),
    "train-step": ("train-step-normal.json.gz", "train-step-adamw-loop.json.gz"),
    # the real two-GPU DDP pair (rank 1's GPU contended): pinned as issue 26 found it
    "ddp": ("ddp-normal.json.gz", "ddp-contended-gpu1.json.gz"),
}
DDP_FIXTURES = ("ddp-normal", "ddp-contended-gpu1")


def _portable(comparison: Comparison, root: Path) -> Comparison:
    """Sources relative to the data root, so the golden file does not depend on where it is."""
    def rel(source: str) -> str:
        path = Path(source)
        return str(path.relative_to(root)) if path.is_relative_to(root) else path.name

    prefix = str(root) + os.sep  # notes name their input as it was given
    return replace(
        comparison,
        normal=replace(comparison.normal, source=rel(comparison.normal.source)),
        abnormal=replace(comparison.abnormal, source=rel(comparison.abnormal.source)),
        notes=tuple(note.replace(prefix, "") for note in comparison.notes),
    )


def check_golden(text: str, name: str, update: bool) -> None:
    path = GOLDEN / name
    if update:
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"{path} missing: run pytest tests/golden --update-golden and review it")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs: rerun with --update-golden and review the diff"


def _latencyprism(scenario: str, seed_compatible: bool) -> Comparison:
    folder = LATENCYPRISM / "sglang" / scenario
    if not folder.is_dir():
        pytest.skip(f"LatencyPrism data not found at {folder}")
    return _compare_latencyprism(folder, seed_compatible)


@functools.cache
def _compare_latencyprism(folder: Path, seed_compatible: bool) -> Comparison:
    """Cached: two tests read the same seed-compatible comparison (a few seconds each)."""
    options = CompareOptions(seed_compatible=seed_compatible)
    comparison = compare_inputs(folder / "normal_perf_data", folder / "abnormal_perf_data",
                                  options)
    return _portable(comparison, LATENCYPRISM)


@pytest.mark.parametrize("seed_compatible", [False, True], ids=["default", "seed-compatible"])
def test_latencyprism_gpu_instability(seed_compatible: bool, update_golden: bool) -> None:
    comparison = _latencyprism("gpu_instability", seed_compatible)
    mode = "seed" if seed_compatible else "default"
    check_golden(render_markdown(comparison), f"latencyprism-gpu_instability-{mode}.md",
                 update_golden)


def test_seed_compatible_sections_1_and_2_reproduce_the_seed() -> None:
    """Issue 3 acceptance: sections 1 and 2 equal LatencyPrism's report character for character."""
    if not SEED_REPORT.exists():
        pytest.skip(missing_reason(SEED_REPORT))
    comparison = _latencyprism("gpu_instability", seed_compatible=True)
    ours = render_markdown(comparison)
    seed = SEED_REPORT.read_text(encoding="utf-8").replace("\r\n", "\n")

    def sections_1_2(text: str) -> str:
        start = text.index("## 1. High-Level Performance Summary")
        end = text.index("## 3. In-depth Core Metric Comparison")
        return text[start:end].strip()

    assert sections_1_2(ours) == sections_1_2(seed)


@pytest.mark.parametrize("workload", sorted(FIXTURE_PAIRS))
def test_gpu_fixture_reports(workload: str, update_golden: bool) -> None:
    normal_name, abnormal_name = FIXTURE_PAIRS[workload]
    normal, abnormal = REPO / "fixtures" / normal_name, REPO / "fixtures" / abnormal_name
    if not (normal.exists() and abnormal.exists()):
        pytest.skip(f"GPU fixtures {normal_name} / {abnormal_name} not recorded yet")
    comparison = _portable(compare_inputs(normal, abnormal, CompareOptions()), REPO)
    check_golden(render_markdown(comparison), f"fixtures-{workload}.md", update_golden)


@pytest.mark.parametrize("name", DDP_FIXTURES)
def test_ddp_fixture_ranks_reports(name: str, update_golden: bool) -> None:
    """``perfdiff ranks`` of each DDP recording, pinned as issue 26 found it (rank 1 named in
    the contended one with its GEMMs, none in the other)."""
    from perfdiff.analysis.ranks.entry import ranks_of_loaded
    from perfdiff.readers.dispatch import open_input
    from perfdiff.report.ranks import render_ranks_markdown

    path = REPO / "fixtures" / f"{name}.json.gz"
    report = replace(ranks_of_loaded(open_input(path)), source=f"fixtures/{name}.json.gz")
    check_golden(render_ranks_markdown(report), f"ranks-{name}.md", update_golden)


def test_contended_gpt_infer_puts_gemm_and_tensor_utilisation_first() -> None:
    """Issue 3 acceptance: the contended run's first finding is a GEMM kernel, with tensor-pipe
    utilisation among the metrics that moved with it (the partition neighbour: half of the SMs
    held, docs/explanation/contention.md)."""
    normal_name, abnormal_name = FIXTURE_PAIRS["gpt-infer"]
    normal, abnormal = REPO / "fixtures" / normal_name, REPO / "fixtures" / abnormal_name
    if not (normal.exists() and abnormal.exists()):
        pytest.skip("GPU fixtures not recorded yet")
    comparison = compare_inputs(normal, abnormal, CompareOptions())
    assert comparison.findings, "no finding for a run contended half of the time"
    first = comparison.findings[0]
    gemm_families = ("gemm", "cutlass", "nvjet")  # nvjet: cuBLASLt's Hopper GEMM kernels
    assert any(f in first.function.lower() for f in gemm_families), first.function
    assert any("tensor" in move.metric for move in first.metric_moves), first.metric_moves


def test_a_recording_against_itself_has_no_finding() -> None:
    """A/A at its limit: identical inputs give no slower/faster row and no cycle-time change."""
    normal = REPO / "fixtures" / FIXTURE_PAIRS["gpt-infer"][0]
    if not normal.exists():
        pytest.skip("GPU fixtures not recorded yet")
    comparison = compare_inputs(normal, normal, CompareOptions())
    assert comparison.findings == ()
    assert {r.verdict for r in comparison.rows} <= {"no change", "insufficient data"}
    assert comparison.cycle_time.verdict == "no change"
    assert "No function's time changed significantly" in render_markdown(comparison)


HTA_TRACE_DIFF = shared("kineto", "hta", "trace_diff")


@pytest.mark.skipif(not HTA_TRACE_DIFF.is_dir(), reason=missing_reason(HTA_TRACE_DIFF))
def test_hta_trace_diff_pair(update_golden: bool) -> None:
    """HTA's own TraceDiff example pair (an A100 rank against a V100 rank, hence --force),
    read by the door: issue 24 changed the reader and the door, never this report (the
    golden file was first written by the code before issue 24, commit 16a5e86)."""
    comparison = compare_inputs(HTA_TRACE_DIFF / "control" / "control.json.gz",
                                HTA_TRACE_DIFF / "test" / "test.json.gz",
                                CompareOptions(force=True))
    check_golden(render_markdown(_portable(comparison, HTA_TRACE_DIFF.parent)),
                 "hta-trace_diff.md", update_golden)
