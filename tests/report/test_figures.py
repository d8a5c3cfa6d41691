"""The figures: content (names, intervals, titles), determinism, escaping; never pixels.

SVG text is kept as text (``svg.fonttype: none``), so a test can read what a figure says.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from perfdiff.analysis.figure_data import CycleTrace, FigureData, MetricSpread, forest_rows
from perfdiff.analysis.model import CompareOptions, Comparison, DeviceSummary
from perfdiff.report.format import display_name, fmt_interval
from tests import report_factories as rf

pytest.importorskip("matplotlib", reason="the figures need matplotlib (perfdiff[plots])")

from perfdiff.report.figures import render_figures, write_figures
from perfdiff.report.figures.forest import NAME_WIDTH

REPO = Path(__file__).resolve().parents[2]
GPT = (REPO / "fixtures" / "gpt-infer-normal.json.gz",
       REPO / "fixtures" / "gpt-infer-contended.json.gz")
DDP = (REPO / "fixtures" / "ddp-normal.json.gz", REPO / "fixtures" / "ddp-contended-gpu1.json.gz")


def _trace(label: str, values: tuple[float, ...]) -> CycleTrace:
    n = len(values)
    return CycleTrace(label, ("run 0",) * n, values, (True,) + (False,) * (n - 1),
                      (False,) * (n - 2) + (True, False), (False, True) + (False,) * (n - 2),
                      True)


def _data(comparison: Comparison) -> FigureData:
    spreads = tuple(
        MetricSpread(f.function, f.device, f.pid, m.metric, (60.0, 61.0, 59.5), (40.0, 41.0),
                     m.metric_mean_normal, m.metric_mean_abnormal, m.p_value)
        for f in comparison.findings for m in f.metric_moves)
    return FigureData(forest_rows(comparison),
                      (_trace("normal", (30.0, 10.0, 10.2, 9.9, 10.1)),
                       _trace("abnormal", (31.0, 11.5, 11.0, 11.7, 11.2))), spreads)


def _text(svg: str) -> str:
    """All text of an SVG document (parsed: entities resolved)."""
    root = ET.fromstring(svg)
    return "\n".join(t for t in root.itertext())


def test_the_forest_shows_the_first_finding_with_its_interval() -> None:
    comparison = rf.comparison()
    figures = {f.key: f for f in render_figures(comparison, _data(comparison))}
    assert list(figures) == ["what-changed", "cycles", "why", "inventory"]  # one device
    text = _text(figures["what-changed"].svg)
    finding = comparison.findings[0]
    assert display_name(finding.function, NAME_WIDTH) in text
    assert fmt_interval(finding.time_ci_low_ms, finding.time_ci_high_ms) in text
    assert fmt_interval(finding.time_ci_low_ms, finding.time_ci_high_ms) in (
        figures["what-changed"].title)
    assert "new_kernel" in _text(figures["inventory"].svg)
    assert "stretch without PM samples" in _text(figures["cycles"].svg)
    assert "collector stall" in _text(figures["cycles"].svg)


def test_cycles_figure_marks_holds_and_untraced_cycles_from_the_run_files_columns() -> None:
    comparison = rf.comparison()
    data = _data(comparison)
    normal = replace(data.traces[0], untraced=(False, False, True, False, False),
                     stalled_by="hold")
    data = replace(data, traces=(normal, data.traces[1]))
    text = _text({f.key: f for f in render_figures(comparison, data, ("svg",))}["cycles"].svg)
    assert "untraced (measures perfdiff's overhead; not in statistics)" in text
    assert "collector stall (held the interpreter > 1 ms)" in text
    assert "collector stall (buffer hand-over)" in text  # the other side: no column


def test_where_it_ran_only_with_several_devices() -> None:
    devices = (DeviceSummary("GPU 0", 1, 8.0, 8.1, 1.2, "no change", -1.0, 3.4),
               DeviceSummary("GPU 1", 2, 8.0, 16.0, 100.0, "slower", 90.0, 110.0))
    comparison = rf.comparison(devices=devices)
    figures = {f.key: f for f in render_figures(comparison, _data(comparison), ("svg",))}
    assert "where-it-ran" in figures
    title = figures["where-it-ran"].title
    assert "GPU 1" in title and "[+90.00%, +110.00%]" in title
    assert figures["where-it-ran"].png == b""  # only what was asked for


def test_figures_are_byte_for_byte_deterministic(tmp_path: Path) -> None:
    comparison = rf.comparison()
    first = render_figures(comparison, _data(comparison))
    second = render_figures(comparison, _data(comparison))
    assert first == second
    for fig in first:
        assert "<dc:date>" not in fig.svg and "Matplotlib v" not in fig.svg
        assert b"Software" not in fig.png
    written = write_figures(first, tmp_path / "f")
    assert sorted(p.name for w in written for p in (w.png, w.svg)) == sorted(
        f"{f.key}.{ext}" for f in first for ext in ("png", "svg"))


def test_names_with_markup_and_dollars_are_printed_as_they_are() -> None:
    name = "k<float>|`x`$a_b$ & <script>"
    comparison = rf.comparison(
        rows=tuple(replace(r, function=name) if r.function == "gemm_kernel" else r
                   for r in rf.comparison().rows),
        findings=(rf.finding(name),))
    figures = render_figures(comparison, _data(comparison), ("svg",))
    text = _text(figures[0].svg)  # parses: the name is escaped for XML
    assert display_name(name, NAME_WIDTH) in text  # '$' did not start math mode


def test_cycles_cut_differently_draw_share_changes() -> None:
    nan = float("nan")
    base = rf.comparison()
    comparison = rf.comparison(
        cycle_time=replace(base.cycle_time, comparable=False, delta_ms=nan, delta_pct=nan,
                           ci_low_pct=nan, ci_high_pct=nan, verdict="insufficient data"),
        rows=tuple(replace(r, time_delta_ms=nan, time_ci_low_ms=nan, time_ci_high_ms=nan)
                   for r in base.rows),
        findings=(replace(base.findings[0], time_delta_ms=nan, time_ci_low_ms=nan,
                          time_ci_high_ms=nan),))
    figures = render_figures(comparison, _data(comparison), ("svg",))
    assert "cycle times not compared" in figures[0].title
    assert "+10.00 pp" in _text(figures[0].svg)


@pytest.mark.parametrize("pair", [GPT, DDP], ids=["gpt-infer", "ddp"])
def test_fixture_forest_first_row_is_the_reports_first_finding(
        pair: tuple[Path, Path]) -> None:
    from perfdiff.analysis.figure_data import figure_data
    from perfdiff.cli.compare_run import compare_paths as load_and_compare

    if not all(p.exists() for p in pair):
        pytest.skip("GPU fixtures not found")
    comparison, sides = load_and_compare(pair[0], pair[1], CompareOptions())
    data = figure_data(comparison, *sides)
    figures = {f.key: f for f in render_figures(comparison, data, ("svg",))}
    top = comparison.findings[0]
    assert data.forest.rows[0].function == top.function
    text = _text(figures["what-changed"].svg)
    assert display_name(top.function, NAME_WIDTH) in text
    assert fmt_interval(top.time_ci_low_ms, top.time_ci_high_ms) in text
    expected = {"what-changed", "cycles", "why"}
    if len(comparison.devices) > 1:
        expected.add("where-it-ran")
    assert expected <= set(figures)
