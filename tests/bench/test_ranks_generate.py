"""bench/ranks/generate.py: the generated job keeps the recording's kernel mix and jitter, runs
in lock-step as a DDP job does (the others wait in the all-reduce for a slow rank), and every
shard it writes is a valid run; ``perfdiff ranks`` names a straggler planted in it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.ranks.generate import COLLECTIVE, GEMM, generate, source_steps
from perfdiff.engine.run import ranks_of_path
from perfdiff.schema.io import load_run_file
from perfdiff.schema.shards import load_shard, read_manifest

SOURCE = Path(__file__).resolve().parents[2] / "fixtures" / "trainer-gpt2.json.gz"


def _job(out: Path, *, ranks: int, slow_factor: float = 1.0, slow_ranks: frozenset[int] =
         frozenset(), seed: int = 3, launches: int = 50_000, micro: int = 4) -> Path:
    generate(out, source_path=str(SOURCE), ranks=ranks, launches=launches, micro=micro,
             slow_factor=slow_factor, slow_ranks=set(slow_ranks), seed=seed)
    return out


def test_generated_ranks_keep_the_mix_the_durations_and_run_in_lock_step(tmp_path: Path) -> None:
    source = load_run_file(SOURCE)
    assert len(source_steps(source.runs[0])) == 44
    sharded = read_manifest(_job(tmp_path / "job", ranks=2, slow_factor=1.5,
                                 slow_ranks=frozenset({1})))
    files = [load_shard(sharded, e) for e in sharded.entries]  # validated
    loaded = [f.runs[0] for f in files]
    assert [r.rank for r in loaded] == [0, 1] and [r.pid for r in loaded] == [100000, 100001]
    collective = len(source.strings)
    assert files[0].strings[collective] == COLLECTIVE
    src = source.runs[0].kernels
    measured = np.isin(src.cycle, source.runs[0].cycles.index[~source.runs[0].cycles.warmup])
    k0 = loaded[0].kernels
    work0 = k0.name_id != collective
    mix_source = np.bincount(src.name_id[measured], minlength=len(source.strings))
    mix_rank = np.bincount(k0.name_id[work0], minlength=len(source.strings))
    np.testing.assert_allclose(mix_rank / mix_rank.sum(), mix_source / mix_source.sum(),
                               atol=0.002)
    assert abs(k0.name_id.size - 50_000) < 4 * 1106
    # lock-step: the same launches, cycle by cycle, on both ranks; one all-reduce per cycle
    k1 = loaded[1].kernels
    np.testing.assert_array_equal(k0.name_id, k1.name_id)
    np.testing.assert_array_equal(k0.cycle, k1.cycle)
    assert (k0.name_id == collective).sum() == loaded[0].cycles.index.size
    # every duration of rank 0's work is a recorded one, drawn per rank (jitter differs)
    recorded = set((src.end_ns - src.start_ns)[measured].tolist())
    d0, d1 = k0.end_ns - k0.start_ns, k1.end_ns - k1.start_ns
    assert set(d0[work0].tolist()) <= recorded
    gemm = np.append(np.asarray([bool(GEMM.search(s.demangled)) for s in source.strings]),
                     False)[k0.name_id]
    assert gemm.any() and not np.array_equal(d0[~gemm & work0], d1[~gemm & work0])
    assert 1.35 < d1[gemm].mean() / d0[gemm].mean() < 1.65
    # rank 0 waits for rank 1 in the all-reduce; every cycle ends at the same time on both
    wait0, wait1 = d0[~work0], d1[~work0]
    assert (wait0 > wait1).all()
    np.testing.assert_array_equal(loaded[0].cycles.end_ns, loaded[1].cycles.end_ns)
    busy_excess = (np.bincount(k1.cycle[work0], d1[work0]) - np.bincount(k0.cycle[work0],
                                                                        d0[work0]))
    np.testing.assert_allclose(wait0 - wait1, busy_excess, atol=1)


@pytest.mark.parametrize("planted", [2, 5])
def test_a_straggler_planted_in_one_generated_rank_of_eight_is_named_first(
        tmp_path: Path, planted: int) -> None:
    job = _job(tmp_path / "job", ranks=8, slow_factor=1.5, slow_ranks=frozenset({planted}),
               seed=planted, launches=100_000, micro=8)
    report = ranks_of_path(job)
    assert [r.rank for r in report.stragglers] == [f"rank {planted}"]
    first = report.ranks[0]
    assert first.rank == f"rank {planted}" and first.excess_work_pct > 5.0
    names = [k.function for k in first.kernels]
    assert names and all(GEMM.search(n) for n in names)  # the slowed GEMMs, nothing else
    assert sum(k.share_of_excess_pct for k in first.kernels) > 95.0
    assert [w.function for w in first.waits] == [COLLECTIVE.demangled]
    assert all(r.verdict == "no straggler" for r in report.ranks[1:])


@pytest.mark.parametrize("seed", [1, 4])
def test_an_unplanted_generated_job_names_no_straggler(tmp_path: Path, seed: int) -> None:
    report = ranks_of_path(_job(tmp_path / "job", ranks=8, seed=seed, launches=100_000,
                                micro=8))
    assert report.stragglers == ()
    assert {r.verdict for r in report.ranks} == {"no straggler"}
