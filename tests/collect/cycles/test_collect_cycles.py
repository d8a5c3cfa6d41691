"""Cycle assignment: each record goes to the cycle whose host interval holds its launch."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from perfdiff.collect.cycles.cycles import CycleLog, assign_cycles, launch_times
from perfdiff.schema.model import CycleTable


def _table(bounds: list[tuple[int, int]]) -> CycleTable:
    n = len(bounds)
    return CycleTable(
        index=np.arange(n, dtype=np.int64),
        start_ns=np.array([b[0] for b in bounds], dtype=np.int64),
        end_ns=np.array([b[1] for b in bounds], dtype=np.int64),
        label=("",) * n,
        warmup=np.zeros(n, dtype=np.bool_),
    )


@st.composite
def cycles_and_times(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[int]]:
    gaps = draw(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 100)), max_size=20))
    bounds, t = [], 0
    for gap, length in gaps:
        t += gap
        bounds.append((t, t + length))
        t += length
    times = draw(st.lists(st.integers(-10, t + 10), max_size=50))
    return bounds, times


@given(cycles_and_times())
def test_assign_cycles_matches_a_linear_scan(case: tuple[list[tuple[int, int]], list[int]]) -> None:
    bounds, times = case
    expected = []
    for t in times:
        hits = [i for i, (a, b) in enumerate(bounds) if a <= t < b]
        expected.append(hits[0] if hits else -1)
    got = assign_cycles(np.array(times, dtype=np.int64), _table(bounds))
    assert got.tolist() == expected


def test_cycle_end_is_exclusive_and_start_inclusive() -> None:
    got = assign_cycles(np.array([0, 9, 10, 15, 20], dtype=np.int64), _table([(0, 10), (10, 20)]))
    assert got.tolist() == [0, 0, 1, 1, -1]


def test_launch_times_use_the_api_record_else_the_fallback() -> None:
    corr = np.array([5, 6, 7, 0], dtype=np.int64)
    fallback = np.array([500, 600, 700, 800], dtype=np.int64)
    api_ids = np.array([7, 5], dtype=np.int64)
    api_starts = np.array([70, 50], dtype=np.int64)
    times, missing = launch_times(corr, fallback, api_ids, api_starts)
    assert times.tolist() == [50, 600, 70, 800]
    assert missing == 2  # id 6 has no API record; id 0 means "no correlation"


def test_cycle_log_drops_cycles_cut_short_and_renumbers() -> None:
    clock = iter(range(100, 10_000, 10))
    ended: list[int] = []
    log = CycleLog(clock_ns=lambda: next(clock), on_cycle_end=ended.append)
    log.begin_cycle("a", True)
    log.end_cycle()
    log.begin_cycle("a", False)
    log.end_cycle(completed=False)
    log.begin_cycle("b", False)
    log.begin_cycle("b", False)  # begin without end closes the previous one (mark_cycle)
    table = log.table()  # the open cycle is cut short by the table being taken
    assert table.index.tolist() == [0, 1]
    assert table.label == ("a", "b")
    assert table.warmup.tolist() == [True, False]
    assert ended == [1, 2]
    assert (table.end_ns > table.start_ns).all()


class _NoIteration(list[bool]):
    """A flag list that may be appended to but not walked (what a boundary must not do)."""

    def __iter__(self) -> Iterator[bool]:
        raise AssertionError("a cycle boundary walked every earlier cycle")


def test_a_boundary_costs_the_same_after_many_cycles() -> None:
    """Ending a cycle counted the completed ones by summing a flag per earlier cycle: O(n) a
    boundary, ~95 us after 20,000 NVTX steps on the CPU (bench/nvtx_boundary), in the
    program's step outside every cycle. Now a counter."""
    ticks = iter(range(0, 10**9, 10))
    seen: list[int] = []
    log = CycleLog(clock_ns=lambda: next(ticks), on_cycle_end=seen.append)
    log.completed_flags = _NoIteration()
    for _ in range(5):
        log.begin_cycle("", False)
        log.end_cycle()
    log.begin_cycle("", False)
    log.end_cycle(completed=False)
    assert seen == [1, 2, 3, 4, 5] and log.completed == 5
