"""Real A/A machinery (splits, side assembly, run-to-run spread) on simulated recordings.

Why simulated: the real recordings (fixtures/aa/) may be absent; the machinery that compares
them in every split must be right before they arrive. The last test runs on the real ones when
they are there, and fails on any false verdict (issue 6: the H100 A/A runs raise none).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.validate.realaa import (
    as_side,
    compare_splits,
    cycle_spread,
    halves,
    load_aa_tables,
    pairs,
    run_spread,
    summarise,
)
from bench.validate.simulate import Scenario, kernel_names, simulate_side, to_table
from perfdiff.analysis.model import CompareOptions

AA_FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "aa"


def _recordings(n: int, offset_pct: float, seed: int = 0) -> list[pd.DataFrame]:
    """``n`` one-run recordings, each another process (own pid), as ``cycle_table`` gives them."""
    scenario = Scenario(n_kernels=5, n_cycles=80, run_offset_pct=offset_pct, metrics=())
    seqs = np.random.SeedSequence(seed).spawn(n)
    return [
        to_table(simulate_side(scenario, np.random.default_rng(s)), scenario, pid=1000 + i)
        for i, s in enumerate(seqs)
    ]


def test_pairs_and_halves_cover_every_split_once() -> None:
    assert len(pairs(10)) == 45
    split = halves(10)
    assert len(split) == 126  # C(10, 5) / 2
    assert all(0 in a and len(a) == len(b) == 5 and not set(a) & set(b) for a, b in split)
    assert len({frozenset(a) for a, _ in split}) == 126


def test_as_side_gives_distinct_runs_and_one_pid() -> None:
    tables = _recordings(3, 0.0)
    side = as_side(tables, first_run=1)
    assert side["run"].nunique() == 3
    assert set(side["pid"]) == {0}
    assert len(side) == sum(len(t) for t in tables)


def test_run_spread_sees_the_run_offsets() -> None:
    quiet = run_spread(_recordings(8, 0.0))
    noisy = run_spread(_recordings(8, 3.0))
    top = kernel_names(5)[0]
    quiet_top = next(s for s in quiet if s.function == top)
    noisy_top = next(s for s in noisy if s.function == top)
    assert quiet_top.between_cv_pct < 1.0
    assert noisy_top.between_cv_pct > 1.5
    assert quiet_top.within_cv_pct == pytest.approx(noisy_top.within_cv_pct, rel=0.5)
    between, within = cycle_spread(_recordings(8, 3.0))
    assert between > 0.5 and within > 0.5


def test_splits_of_simulated_aa_recordings_raise_no_verdict() -> None:
    tables = _recordings(4, 0.5, seed=3)
    options = CompareOptions(bootstrap_resamples=200)
    one = summarise("1 vs 1", compare_splits(tables, pairs(4), options), options.alpha)
    two = summarise("2 vs 2", compare_splits(tables, halves(4), options), options.alpha)
    assert (one.n_splits, one.test_unit) == (6, "batch means")
    assert (two.n_splits, two.test_unit) == (3, "runs")
    assert one.loud_reports == 0 and two.loud_reports == 0


@pytest.mark.skipif(not AA_FOLDER.is_dir(), reason="fixtures/aa/ not recorded yet")
def test_real_aa_recordings_raise_no_false_verdict() -> None:
    tables = [t for _, t in load_aa_tables(AA_FOLDER)]
    if len(tables) < 2:
        pytest.skip("fewer than 2 A/A recordings in fixtures/aa/")
    options = CompareOptions(bootstrap_resamples=200)
    n = len(tables)
    # Recordings one after another are the likeliest to drift apart; the full 45 + 126 splits
    # run in `python -m bench.validate --real-aa fixtures/aa` (minutes, not seconds).
    adjacent = [((i,), (i + 1,)) for i in range(n - 1)]
    first_vs_last = [(tuple(range(n // 2)), tuple(range(n // 2, 2 * (n // 2))))]
    for label, splits in (("adjacent pairs", adjacent), ("first vs last half", first_vs_last)):
        summary = summarise(label, compare_splits(tables, splits, options), 0.05)
        assert summary.row_verdicts == 0, summary
        assert summary.cycle_verdicts == 0, summary
