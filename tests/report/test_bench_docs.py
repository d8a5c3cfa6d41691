"""docs/howto/benchmarks.md shows the tables ``perfdiff bench`` prints for the fixtures: if the
fixtures, the statistics or the layout change, this test fails until the page is regenerated
(run the two commands in the page and paste their output). The A/A counts and the "same verdict
against the re-run" claim in the page's text are checked the same way, so a re-recording that
changes them cannot leave the prose behind."""

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

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "howto" / "benchmarks.md"


def _run(name: str) -> BenchRun:
    path = ROOT / "fixtures" / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    return bench_run(load_run_file(path), f"fixtures/{name}")


def _table_lines(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith(("|", "torch."))]


def test_rmsnorm_tables_in_the_page_are_the_fixture_output() -> None:
    run = select_measure(_run("rmsnorm-h100.json.gz"), "kernels")
    expected = _table_lines(render_markdown(bench_view(run, None, None, BenchRules())))
    page = PAGE.read_text(encoding="utf-8").splitlines()
    assert len(expected) > 80
    missing = [line for line in expected if line not in page]
    assert not missing, missing[:3]


def test_linalg_table_in_the_page_is_the_fixture_output() -> None:
    before = _run("linalg-h100-magma.json.gz")
    after = _run("linalg-h100-cusolver.json.gz")
    changes = compare_cases(before, after)
    text = render_markdown(bench_view(before, after, changes, BenchRules()))
    page = PAGE.read_text(encoding="utf-8")
    assert all(line in page.splitlines() for line in _table_lines(text))
    assert text.splitlines()[-1] in page  # "40 cases compared: ..."


def _bullet(page: str, start: str) -> str:
    """The page's bullet that begins with ``start``, reflowed onto one line."""
    flat = " ".join(page.split())
    begin = flat.index(start)
    end = flat.find(" - **", begin + len(start))
    return flat[begin:] if end < 0 else flat[begin:end]


def _counts_phrase(before: BenchRun, after: BenchRun) -> str:
    verdicts = Counter(c.verdict for c in compare_cases(before, after))
    return (f"{verdicts['regressed']} regressed, {verdicts['faster']} faster, "
            f"{verdicts['no change']} no change")


def test_aa_counts_in_the_page_are_the_fixture_output() -> None:
    page = PAGE.read_text(encoding="utf-8")
    rmsnorm = _counts_phrase(_run("rmsnorm-h100.json.gz"), _run("rmsnorm-h100-rerun.json.gz"))
    assert rmsnorm in _bullet(page, "- **A/A, RMSNorm**"), rmsnorm
    linalg = _counts_phrase(_run("linalg-h100-cusolver.json.gz"),
                            _run("linalg-h100-cusolver-rerun.json.gz"))
    assert linalg in _bullet(page, "- **A/A, linalg**"), linalg


def test_magma_vs_cusolver_verdicts_repeat_against_the_rerun_as_the_page_says() -> None:
    magma = _run("linalg-h100-magma.json.gz")
    first = {c.label: c.verdict for c in compare_cases(magma, _run("linalg-h100-cusolver.json.gz"))}
    rerun = {c.label: c.verdict
             for c in compare_cases(magma, _run("linalg-h100-cusolver-rerun.json.gz"))}
    assert len(first) == 40
    assert first == rerun
    assert "gives the same verdict on all 40 rows" in " ".join(
        PAGE.read_text(encoding="utf-8").split())
