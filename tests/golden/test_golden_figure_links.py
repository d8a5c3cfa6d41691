"""Issue 17 acceptance, pinned: on the gpt-infer pair, the DDP pair and the LatencyPrism
gpu_instability folder every figure is drawn and linked, and the forest plot's first row is the
report's first finding with the same interval.

The golden file holds each report's image lines (where each figure is linked and its alt text,
which states the finding); the figures' pixels are not pinned (they depend on matplotlib's
version), their titles are. Regenerate with ``pytest tests/golden --update-golden``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfdiff.analysis.model import CompareOptions
from perfdiff.report.format import fmt_interval
from perfdiff.report.markdown import render_markdown

pytest.importorskip("matplotlib", reason="the figures need matplotlib (perfdiff[plots])")

from perfdiff.analysis.figure_data import figure_data
from perfdiff.cli.compare import figure_links
from perfdiff.cli.compare_run import compare_paths as load_and_compare
from perfdiff.report.figures import render_figures

REPO = Path(__file__).resolve().parents[2]
LATENCYPRISM = Path(os.environ.get("PERFDIFF_LATENCYPRISM", "/work/shared/latencyprism"))
PAIRS = {
    "gpt-infer": (REPO / "fixtures" / "gpt-infer-normal.json.gz",
                  REPO / "fixtures" / "gpt-infer-contended.json.gz"),
    "ddp": (REPO / "fixtures" / "ddp-normal.json.gz",
            REPO / "fixtures" / "ddp-contended-gpu1.json.gz"),
    "latencyprism-gpu_instability": (
        LATENCYPRISM / "sglang" / "gpu_instability" / "normal_perf_data",
        LATENCYPRISM / "sglang" / "gpu_instability" / "abnormal_perf_data"),
}


def _image_lines(name: str) -> list[str]:
    normal, abnormal = PAIRS[name]
    if not (normal.exists() and abnormal.exists()):
        pytest.skip(f"inputs of {name} not found ({normal.parent})")
    comparison, sides = load_and_compare(normal, abnormal, CompareOptions())
    data = figure_data(comparison, *sides)
    figures = render_figures(comparison, data, ("svg",))
    keys = {f.key for f in figures}
    assert {"what-changed", "cycles"} <= keys
    assert ("where-it-ran" in keys) == (len(comparison.devices) > 1)
    assert ("why" in keys) == any(f.metric_moves for f in comparison.findings)
    assert ("inventory" in keys) == bool(comparison.inventory)
    top = comparison.findings[0]
    first = data.forest.rows[0]
    assert (first.function, first.low, first.high) == (
        top.function, top.time_ci_low_ms, top.time_ci_high_ms)
    assert fmt_interval(top.time_ci_low_ms, top.time_ci_high_ms) in figures[0].svg
    links = figure_links(figures, Path("figs"), Path())
    text = render_markdown(comparison, figures=links)
    lines = [line for line in text.splitlines() if line.startswith("![")]
    assert len(lines) == len(figures)  # every figure linked, once
    return lines


def test_every_figure_is_linked_with_its_finding(update_golden: bool) -> None:
    parts = []
    for name in PAIRS:
        try:
            lines = _image_lines(name)
        except pytest.skip.Exception as skipped:
            lines = [f"(skipped: {skipped})"]
        parts += [f"## {name}", "", *lines, ""]
    if any(line.startswith("(skipped") for line in parts):
        pytest.skip("some inputs are missing: " + "; ".join(
            line for line in parts if line.startswith("(skipped")))
    text = "\n".join(parts)
    golden = Path(__file__).parent / "figure-links.md"
    if update_golden:
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} missing: run pytest tests/golden --update-golden"
    assert text == golden.read_text(encoding="utf-8"), (
        "figure-links.md differs: rerun with --update-golden and review the diff")
