"""Functions launched a different number of times per cycle (``analysis/launch_changes.py``)."""

from __future__ import annotations

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.sides import side_from_run_file
from perfdiff.report.markdown import render_markdown
from tests.factories import KernelSpec, make_run_file

FAST = CompareOptions(bootstrap_resamples=200)


def _compare(normal_launches: int, abnormal_launches: int):  # type: ignore[no-untyped-def]
    def specs(n: int) -> list[KernelSpec]:
        return [KernelSpec("gemm_kernel", 1.0), KernelSpec("ln_kernel", 0.1, launches=n)]

    n = side_from_run_file(make_run_file(specs(normal_launches), seed=1), source="n")
    a = side_from_run_file(make_run_file(specs(abnormal_launches), seed=2), source="a")
    return compare_tables(n.table, a.table, FAST, normal_meta=n.meta, abnormal_meta=a.meta)


def test_a_kernel_launched_twice_as_often_is_listed() -> None:
    result = _compare(2, 4)
    (change,) = result.launch_changes
    assert change.function == "ln_kernel"
    assert (change.launches_normal, change.launches_abnormal) == (2.0, 4.0)
    assert change.time_ms_abnormal > change.time_ms_normal
    text = render_markdown(result)
    assert "Launched a different number of times per cycle (1 function" in text
    assert "2.0 → 4.0 launches per cycle" in text


def test_same_launch_counts_list_nothing() -> None:
    result = _compare(3, 3)
    assert result.launch_changes == ()
    assert "Launched a different number" not in render_markdown(result)
