"""`perfdiff ranks` on a real two-GPU DDP job written by `perfdiff collect --shards`.

Why: issue 26 asks that a straggler planted in one rank of a real two-GPU DDP recording be
named first with the kernels that make it slow, and that a job without one names none. The
fixtures were recorded on the lent two-GPU machine (fixtures/README.md, "DDP shards"): rank 1
of the slowed job ran 250 extra 4096x4096 bf16 matrix products (and a tanh) before each
forward, so its excess is one nvjet GEMM and one elementwise kernel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from perfdiff.engine.run import ranks_of_path

SHARDS = Path(__file__).resolve().parents[2] / "fixtures" / "ddp-shards"


def test_the_slowed_rank_is_named_first_with_its_planted_kernels() -> None:
    report = ranks_of_path(SHARDS / "slow-rank1")
    assert [r.rank for r in report.stragglers] == ["rank 1"]
    first = report.ranks[0]
    assert first.rank == "rank 1" and first.verdict == "straggler"
    assert first.excess_work_ms > 30.0 and first.q_value < 0.05
    names = [k.function for k in first.kernels]
    assert names[0].startswith("nvjet_")  # the planted GEMM, ~99 % of the excess
    assert any("tanh" in n for n in names[:3])
    assert any("ncclDevKernel" in k.function for k in first.waits)  # rank 0 waits for it


def test_the_normal_job_names_no_straggler() -> None:
    report = ranks_of_path(SHARDS / "normal")
    assert report.n_ranks == 2
    assert report.stragglers == ()
