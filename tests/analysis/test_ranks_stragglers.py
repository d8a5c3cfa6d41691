"""``perfdiff ranks``'s analysis: a planted straggler is named first with its kernels, an
unplanted job names none, and the real two-GPU DDP recordings say what was done to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfdiff.analysis.cycle_table import cycle_table
from perfdiff.analysis.ranks.entry import rank_names, ranks_of_loaded
from perfdiff.analysis.ranks.model import RanksOptions, RanksReport
from perfdiff.analysis.ranks.stragglers import find_stragglers
from perfdiff.errors import InputError, UsageError
from perfdiff.readers.dispatch import open_input
from perfdiff.schema.model import RunFile
from tests.factories import make_run_file
from tests.rank_factories import ALL_REDUCE, make_job

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _report(job: RunFile, options: RanksOptions | None = None) -> RanksReport:
    return find_stragglers(cycle_table(job), rank_of=rank_names(job), options=options)


@pytest.mark.parametrize("planted", [0, 3, 7])
def test_a_straggler_planted_in_one_rank_of_eight_is_named_first_with_its_kernel(
        planted: int) -> None:
    job = make_job(8, slower={planted: {"softmax_kernel": 1.5}}, seed=planted)
    report = _report(job)
    assert [r.rank for r in report.stragglers] == [f"rank {planted}"]
    first = report.ranks[0]
    assert first.rank == f"rank {planted}"
    assert first.kernels[0].function == "softmax_kernel"
    assert first.kernels[0].excess_ms == pytest.approx(0.15, rel=0.2)
    assert {k.function for k in first.kernels} == {"softmax_kernel"}
    # the others wait for it in the all-reduce; that wait is named, and never as its work
    assert [w.function for w in first.waits] == [ALL_REDUCE]
    assert first.wait_ms < first.others_wait_ms
    assert all(r.verdict == "no straggler" for r in report.ranks[1:])


def test_two_stragglers_come_worst_first() -> None:
    job = make_job(8, slower={2: {"gemm_kernel": 1.2}, 5: {"gemm_kernel": 1.5}}, seed=9)
    report = _report(job)
    assert [r.rank for r in report.stragglers] == ["rank 5", "rank 2"]


@pytest.mark.parametrize("seed", range(5))
def test_an_unplanted_job_names_no_straggler(seed: int) -> None:
    report = _report(make_job(8, seed=seed, noise=0.05))
    assert report.stragglers == ()
    assert {r.verdict for r in report.ranks} == {"no straggler"}


def test_a_rank_that_is_slower_but_also_waits_longer_is_not_named() -> None:
    """More work but also more waiting: the others do not wait for it (e.g. its collective is
    slow for another reason); it is reported as such, not as the straggler."""
    slow_and_waiting = make_job(4, slower={1: {"gemm_kernel": 1.5}}, seed=3)
    table = cycle_table(slow_and_waiting)
    waiting = table["function"] == ALL_REDUCE
    table.loc[waiting & (table["pid"] == 4001), "time_ms"] += 5.0
    report = find_stragglers(table, rank_of=rank_names(slow_and_waiting))
    assert report.stragglers == ()
    assert next(r for r in report.ranks if r.rank == "rank 1").verdict == "slower, waits too"


def test_one_process_is_refused_in_one_line() -> None:
    with pytest.raises(InputError, match="perfdiff compare"):
        _report(make_run_file())


def test_options_refuse_nonsense() -> None:
    with pytest.raises(UsageError):
        RanksOptions(alpha=0.0)
    with pytest.raises(UsageError):
        RanksOptions(n_batches=1)


def test_ddp_recording_with_gpu1_contended_names_rank_1_and_its_gemms() -> None:
    """fixtures/ddp-contended-gpu1: a matrix-product process shared GPU 1 for the whole run
    (fixtures/README.md); rank 1's GEMMs doubled while rank 0 waited in the all-reduce."""
    report = ranks_of_loaded(open_input(FIXTURES / "ddp-contended-gpu1.json.gz"))
    assert [r.rank for r in report.stragglers] == ["rank 1"]
    rank1 = report.ranks[0]
    assert rank1.devices == ("GPU 1",)
    assert rank1.excess_work_pct > 30.0
    names = [k.function for k in rank1.kernels]
    assert "cutlass_80_simt_sgemm" in names[0]
    assert any("xmma_gemm" in n for n in names[:2])
    assert all("nccl" not in n.lower() for n in names)
    assert rank1.waits and "AllReduce" in rank1.waits[0].function
    assert report.ranks[1].wait_ms > 10 * rank1.wait_ms


def test_ddp_recording_without_contention_names_no_straggler() -> None:
    report = ranks_of_loaded(open_input(FIXTURES / "ddp-normal.json.gz"))
    assert report.n_ranks == 2 and report.n_cycles == 40
    assert report.stragglers == ()
    assert all(abs(r.excess_work_pct) < 1.0 for r in report.ranks)
