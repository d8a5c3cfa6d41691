"""Impossible kernel records (overlapping on one stream) are dropped and counted, never kept;
early starts of the next launch (programmatic dependent launch) are clipped and counted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.collect.cupti.stream_overlap import (
    TOLERANCE_NS,
    clip_early_starts,
    drop_overlapping,
    overlapping,
)
from perfdiff.collect.records import Tables
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import CycleTable, KernelTable, TransferTable

FIXTURE = Path(__file__).parents[3] / "fixtures/cuda_graph/graph-bf16-pause-bug.json.gz"


def _kernels(start: list[int], end: list[int], stream: list[int], cycle: list[int]) -> KernelTable:
    n = len(start)
    z = np.zeros(n, dtype=np.int64)
    return KernelTable(name_id=z, device=z, stream=np.asarray(stream, dtype=np.int64),
                       start_ns=np.asarray(start, dtype=np.int64),
                       end_ns=np.asarray(end, dtype=np.int64),
                       cycle=np.asarray(cycle, dtype=np.int64), correlation_id=z,
                       grid_x=z, grid_y=z, grid_z=z, block_x=z, block_y=z, block_z=z)


def _cycles(n: int) -> CycleTable:
    idx = np.arange(n, dtype=np.int64)
    return CycleTable(index=idx, start_ns=idx * 100_000, end_ns=(idx + 1) * 100_000,
                      label=("c",) * n, warmup=np.zeros(n, dtype=np.bool_))


def _tables(k: KernelTable) -> Tables:
    e = np.zeros(0, dtype=np.int64)
    t = TransferTable(kind=(), bytes=e, device=e, stream=e, start_ns=e, end_ns=e, cycle=e)
    return Tables(kernels=k, memcpy=t, memset=t, kernels_without_launch_record=0)


def test_serial_kernels_and_other_streams_are_kept() -> None:
    k = _kernels([0, 10_000, 5_000, 20_000], [9_000, 19_000, 30_000, 29_500],
                 [1, 1, 2, 1], [0, 0, 0, 0])
    assert not overlapping(k).any()


def test_a_kernel_ending_after_its_successor_started_is_dropped_with_its_cycle() -> None:
    # cycle 1: a graph replay whose records end a replay later (the H100 pattern)
    k = _kernels([0, 10_000, 100_000, 110_000, 400_000], [9_000, 19_000, 390_000, 395_000, 409_000],
                 [7] * 5, [0, 0, 1, 1, 2])
    tables, cycles, warning = drop_overlapping(_tables(k), _cycles(3))
    assert tables.kernels.cycle.tolist() == [0, 0, 2]
    assert cycles.warmup.tolist() == [False, True, False]
    assert warning is not None and "1 measured cycle(s)" in warning and "cycle 1" in warning
    assert not overlapping(tables.kernels).any()


def test_touching_kernels_within_tolerance_are_kept() -> None:
    k = _kernels([0, 10_000 - TOLERANCE_NS + 1], [10_000, 20_000], [1, 1], [0, 0])
    assert not overlapping(k).any()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**5), st.integers(0, 2),
                          st.integers(-1, 4)), min_size=0, max_size=40))
def test_what_is_written_never_overlaps(rows: list[tuple[int, int, int, int]]) -> None:
    k = _kernels([r[0] for r in rows], [r[0] + r[1] for r in rows], [r[2] for r in rows],
                 [r[3] for r in rows])
    tables, cycles, warning = drop_overlapping(_tables(k), _cycles(5))
    assert not overlapping(tables.kernels).any()
    assert (warning is None) == (tables.kernels.cycle.size == len(rows))
    assert not np.isin(tables.kernels.cycle, np.flatnonzero(cycles.warmup)).any()


def test_the_real_h100_graph_recording_loses_exactly_the_replays_before_a_pause() -> None:
    """fixtures/cuda_graph: recorded before the flush-on-pause fix; every replay traced just
    before an untraced cycle has its 32 kernels ending one replay later."""
    run = load_run_file(FIXTURE).runs[0]
    cycles = run.cycles
    tables, fixed, warning = drop_overlapping(_tables(run.kernels), cycles)
    assert warning is not None
    untraced = np.flatnonzero(np.asarray(cycles.traced) == 0)
    dropped = np.flatnonzero(fixed.warmup & ~cycles.warmup)
    assert dropped.size >= 3 and set(dropped + 1) <= set(untraced)
    k = tables.kernels
    busy = np.bincount(k.cycle[k.cycle >= 0], weights=(k.end_ns - k.start_ns)[k.cycle >= 0],
                       minlength=cycles.index.size)
    length = cycles.end_ns - cycles.start_ns
    assert (busy <= length).all()


def _launched(start: list[int], end: list[int], corr: list[int]) -> KernelTable:
    k = _kernels(start, end, [7] * len(start), [0] * len(start))
    return KernelTable(**{**{f: getattr(k, f) for f in k.__dataclass_fields__},
                          "correlation_id": np.asarray(corr, dtype=np.int64)})


def test_an_early_start_of_the_next_launch_is_clipped_not_dropped() -> None:
    """cuDNN's layout kernel then the convolution it feeds (programmatic dependent launch, H200
    ResNet-50): the convolution starts 5 us before the layout kernel ends. Dropped, such pairs
    left every measured cycle of that program out; clipped, both kernels stay."""
    k = _launched([0, 18_000, 60_000], [23_000, 50_000, 70_000], [10, 11, 12])
    tables, note = clip_early_starts(_tables(k))
    assert tables.kernels.start_ns.tolist() == [0, 23_000, 60_000]
    assert tables.kernels.end_ns.tolist() == [23_000, 50_000, 70_000]
    assert note is not None and note.startswith("1 kernel(s) started up to 5,000 ns")
    kept, cycles, warning = drop_overlapping(tables, _cycles(1))
    assert warning is None and kept.kernels.start_ns.size == 3 and not cycles.warmup.any()


@pytest.mark.parametrize(("start", "end", "corr"), [
    ([0, 18_000], [23_000, 50_000], [10, 10]),  # one launch: a graph replay ending late
    ([0, 18_000], [23_000, 21_000], [10, 11]),  # the later one ends first: inside it
    ([0, 18_000], [23_000, 50_000], [11, 10]),  # started later but launched earlier
    ([0, 1_000], [200_000, 250_000], [10, 11]),  # 199 us: beyond any early start seen
    ([0, 18_000], [23_000, 50_000], [0, 11]),  # no correlation id to order the launches
])
def test_other_overlaps_are_not_clipped_and_still_dropped(start: list[int], end: list[int],
                                                          corr: list[int]) -> None:
    tables, note = clip_early_starts(_tables(_launched(start, end, corr)))
    assert note is None
    assert overlapping(tables.kernels).any()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**5), st.integers(0, 2),
                          st.integers(-1, 40)), min_size=0, max_size=40))
def test_clipping_only_moves_starts_forward_within_the_kernel(
        rows: list[tuple[int, int, int, int]]) -> None:
    k = _kernels([r[0] for r in rows], [r[0] + r[1] for r in rows], [r[2] for r in rows],
                 [0] * len(rows))
    k = KernelTable(**{**{f: getattr(k, f) for f in k.__dataclass_fields__},
                       "correlation_id": np.asarray([r[3] for r in rows], dtype=np.int64)})
    tables, note = clip_early_starts(_tables(k))
    c = tables.kernels
    assert (c.end_ns == k.end_ns).all() and (c.start_ns >= k.start_ns).all()
    assert (c.start_ns <= c.end_ns).all()
    assert (note is None) == bool((c.start_ns == k.start_ns).all())
    kept, _, _ = drop_overlapping(tables, _cycles(5))
    assert not overlapping(kept.kernels).any()


def test_the_h100_graph_replays_that_end_late_are_not_clipped() -> None:
    """The pause-bug replays are one launch each (one correlation id): still dropped."""
    run = load_run_file(FIXTURE).runs[0]
    tables, note = clip_early_starts(_tables(run.kernels))
    assert note is None
    assert (tables.kernels.start_ns == run.kernels.start_ns).all()
