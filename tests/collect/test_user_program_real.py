"""Merging and run-level statistics on real GPU recordings (fixtures/, skipped when absent).

The A/A set (ten gpt-infer recordings of one GPU) merged five and five must be compared on
run-level means; two real recordings posing as ranks 0 and 1 of a job, one of them recorded
with a contending process, must make the per-device summary single out GPU 1. (No collective
kernels or rank synchronisation here: the 2-GPU DDP pair is recorded by
scripts/gpu/user_programs.sh.)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.sides import side_from_run_file
from perfdiff.collect.merge import merge_run_files
from perfdiff.report.markdown import render_markdown
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
AA = sorted((FIXTURES / "aa").glob("gpt-infer-aa-*.json.gz"))
FAST = CompareOptions(bootstrap_resamples=300)


def _as_rank(run_file: RunFile, rank: int) -> RunFile:
    runs = tuple(dataclasses.replace(r, rank=rank) for r in run_file.runs)
    return dataclasses.replace(run_file, runs=runs)


@pytest.mark.skipif(len(AA) < 10, reason="fixtures/aa/ (10 A/A recordings) not recorded")
def test_five_real_runs_a_side_are_compared_run_by_run() -> None:
    sides = []
    for part in (AA[:5], AA[5:10]):
        merged = merge_run_files([load_run_file(p) for p in part], [p.name for p in part])
        assert [r.index for r in merged.runs] == [0, 1, 2, 3, 4]
        sides.append(side_from_run_file(merged, source="merged"))
    c = compare_tables(sides[0].table, sides[1].table, FAST,
                       normal_meta=sides[0].meta, abnormal_meta=sides[1].meta)
    assert c.test_unit == "runs"
    kernel_rows = [r for r in c.rows if r.func_type == "kernel"]
    assert kernel_rows and all((r.n_normal, r.n_abnormal) == (5, 5) for r in kernel_rows)
    assert "run-level means" in render_markdown(c)


PAIR = [FIXTURES / f"gpt-infer-{name}.json.gz" for name in ("normal", "contended")]


@pytest.mark.skipif(len(AA) < 2 or not all(p.exists() for p in PAIR),
                    reason="gpt-infer fixtures not recorded")
def test_real_recordings_as_two_ranks_single_out_the_contended_gpu() -> None:
    normal = merge_run_files([_as_rank(load_run_file(AA[0]), 0),
                              _as_rank(load_run_file(PAIR[0]), 1)])
    # force: the ranks pose as one job although one was recorded contended (-p contend)
    abnormal = merge_run_files([_as_rank(load_run_file(AA[1]), 0),
                                _as_rank(load_run_file(PAIR[1]), 1)], force=True)
    sides = side_from_run_file(normal, source="n"), side_from_run_file(abnormal, source="a")
    c = compare_tables(sides[0].table, sides[1].table, FAST,
                       normal_meta=sides[0].meta, abnormal_meta=sides[1].meta)
    verdicts = {d.device: d.verdict for d in c.devices}
    assert verdicts["GPU 1"] == "slower"
    assert verdicts["GPU 0"] != "slower"
    assert c.findings and c.findings[0].device == "GPU 1"
