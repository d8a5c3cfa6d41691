"""``compare --plots [DIR]`` and ``--format html`` through the real entry point."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from perfdiff.cli.bare_options import expand_bare_options
from perfdiff.cli.compare import figures_folder
from perfdiff.schema import save_run_file
from tests.conftest import Runner
from tests.factories import KernelSpec, make_run_file

needs_matplotlib = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                      reason="needs matplotlib (perfdiff[plots])")
SLOW = (
    KernelSpec("gemm_kernel", 1.6, {"tensor_pct": 50.0, "dram_pct": 30.0}),
    KernelSpec("softmax_kernel", 0.3, {"tensor_pct": 0.0, "dram_pct": 70.0}),
    KernelSpec("new|kernel<T>", 0.2, {"tensor_pct": 0.0, "dram_pct": 60.0}),
)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("runs")
    save_run_file(make_run_file(seed=1), d / "normal.json.gz")
    save_run_file(make_run_file(SLOW, seed=3), d / "slow.json.gz")
    return str(d / "normal.json.gz"), str(d / "slow.json.gz")


def test_bare_options_get_an_empty_value() -> None:
    assert expand_bare_options(["compare", "a", "b", "--plots"]) == [
        "compare", "a", "b", "--plots="]
    assert expand_bare_options(["compare", "a", "--plots", "-o", "r.md", "b"]) == [
        "compare", "a", "--plots=", "-o", "r.md", "b"]
    assert expand_bare_options(["compare", "a", "b", "--plots", "dir"]) == [
        "compare", "a", "b", "--plots", "dir"]
    assert expand_bare_options(["kernels", "--plots"]) == ["kernels", "--plots"]
    assert expand_bare_options(["compare", "--", "--plots"]) == ["compare", "--", "--plots"]


def test_default_folder_is_beside_the_report() -> None:
    assert figures_folder(None, Path("r.md")) is None
    assert figures_folder("", Path("out/report.md")) == Path("out/report-figures")
    assert figures_folder("", None) == Path("perfdiff-figures")
    assert figures_folder("elsewhere", Path("out/report.md")) == Path("elsewhere")


@needs_matplotlib
def test_bare_plots_writes_beside_the_report_and_links_each_figure(
        run_cli: Runner, pair: tuple[str, str], tmp_path: Path) -> None:
    report = tmp_path / "out" / "report.md"
    code, out, err = run_cli("compare", *pair, "-o", str(report), "--plots")
    assert out == ""
    assert code == 0, err
    folder = tmp_path / "out" / "report-figures"
    text = report.read_text(encoding="utf-8")
    links = re.findall(r"!\[([^\n]+)\]\(([^)\s]+)\)", text)
    assert {target for _, target in links} == {
        f"report-figures/{p.name}" for p in folder.glob("*.png")}
    assert {p.stem for p in folder.glob("*.svg")} >= {"what-changed", "cycles", "inventory"}
    assert all(alt.startswith(("What changed", "Cycles", "Why", "Inventory")) for alt, _ in links)
    assert len(err.strip().splitlines()) == len(links)  # one "wrote" line per figure


@needs_matplotlib
def test_plots_dir_links_relative_to_the_report(
        run_cli: Runner, pair: tuple[str, str], tmp_path: Path) -> None:
    report = tmp_path / "a" / "report.md"
    code, _, err = run_cli("compare", *pair, "--plots", str(tmp_path / "b" / "figs"),
                           "-o", str(report))
    assert code == 0, err
    assert "](../b/figs/what-changed.png)" in report.read_text(encoding="utf-8")


@needs_matplotlib
def test_html_is_one_file_with_inline_figures(
        run_cli: Runner, pair: tuple[str, str], tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    code, out, err = run_cli("compare", *pair, "--format", "html", "-o", str(page))
    assert (code, out) == (0, ""), err
    assert list(tmp_path.iterdir()) == [page]  # no figure files: they are inside
    html = page.read_text(encoding="utf-8")
    assert html.count("<svg") >= 3 and "new|kernel&lt;T&gt;" in html
