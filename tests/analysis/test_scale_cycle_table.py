"""The fast cycle table equals the straightforward one it replaced, row for row, bit for bit.

Why: cycle_table.py and kernel_metrics.py were rewritten for the scale benchmark (numpy group
keys, one pandas group-sum, shared sample-window lookups). The reference is the old pandas code,
kept verbatim in tests/reference_cycle_table.py. Inputs: the test factory's run files and random
runs built here (overlapping and unsorted kernels, several devices, kernels outside cycles,
shuffled cycles with warm-ups, NaN and unsorted metric samples, NVML points, transfers).
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.analysis import kernel_metrics
from perfdiff.analysis.cycle_table import cycle_table
from perfdiff.analysis.kernel_metrics import kernel_metric_means, launch_means
from perfdiff.errors import InputError
from perfdiff.schema import (
    CycleTable,
    KernelName,
    KernelTable,
    MetricSeries,
    Run,
    RunFile,
    TransferTable,
    empty_transfer_table,
)
from tests import reference_cycle_table as reference
from tests.factories import ODD_NAMES, KernelSpec, make_run_file


def _same(run_file: RunFile) -> None:
    fast = cycle_table(run_file)
    slow = reference.cycle_table(run_file)
    assert list(fast.columns) == list(slow.columns)
    assert fast.index.equals(slow.index)
    for name in fast.columns:
        got, want = fast[name], slow[name]
        if want.dtype.kind in "OUT" or isinstance(want.dtype, pd.StringDtype):
            # the reference's string columns come out as object or str depending on which
            # frames it concatenated; the statistics normalise them, so only the text counts
            assert list(got.astype(object)) == list(want.astype(object)), name
            continue
        assert got.dtype == want.dtype, name
        got_values, want_values = got.to_numpy(), want.to_numpy()
        if want.dtype.kind == "f":  # bit for bit, NaN where NaN (its sign bit aside)
            assert np.array_equal(np.isnan(got_values), np.isnan(want_values)), name
            got_values = np.where(np.isnan(got_values), 0.0, got_values)
            want_values = np.where(np.isnan(want_values), 0.0, want_values)
        assert got_values.tobytes() == want_values.tobytes(), name


@pytest.mark.parametrize("options", [
    {},
    {"n_runs": 3, "n_devices": 2, "nan_metric_fraction": 0.2},
    {"nvml_clock_mhz": 1980.0, "memcpy_per_cycle": 2, "memset_per_cycle": 1},
    {"n_warmup": 0, "n_cycles": 3, "idle_ms": 0.0},
])
def test_factory_runs(options: dict[str, Any]) -> None:
    _same(make_run_file(**options))


def test_odd_names_and_many_launches() -> None:
    kernels = [KernelSpec(name, 0.05 * (i + 1), {"tensor_pct": 10.0 * i}, launches=1 + i)
               for i, name in enumerate(ODD_NAMES)]
    _same(make_run_file(kernels, n_cycles=30, n_devices=2, nvml_clock_mhz=1500.0))


def _ints(values: Any) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.asarray(values, dtype=np.int64)


@st.composite
def random_runs(draw: st.DrawFn) -> RunFile:
    """Small runs with everything that can go wrong in grouping, overlap and sample lookup."""
    n_names = draw(st.integers(1, 4))
    n_cycles = draw(st.integers(1, 5))
    cycle_ids = draw(st.permutations(list(range(n_cycles))))
    warmup = draw(st.lists(st.booleans(), min_size=n_cycles, max_size=n_cycles))
    cycle_start = [c * 1000 for c in cycle_ids]
    n = draw(st.integers(0, 30))
    devices = st.integers(0, 2)
    launch = st.tuples(st.integers(0, n_names - 1), devices, st.integers(-1, n_cycles - 1),
                       st.integers(0, 1200 * n_cycles), st.integers(0, 400))
    launches = draw(st.lists(launch, min_size=n, max_size=n))
    start = _ints([x[3] for x in launches])
    zeros = np.zeros(n, dtype=np.int64)
    kernels = KernelTable(
        name_id=_ints([x[0] for x in launches]), device=_ints([x[1] for x in launches]),
        stream=zeros, start_ns=start, end_ns=start + _ints([x[4] for x in launches]),
        cycle=_ints([x[2] for x in launches]), correlation_id=zeros, grid_x=zeros,
        grid_y=zeros, grid_z=zeros, block_x=zeros, block_y=zeros, block_z=zeros,
    )
    metrics = []
    for i in range(draw(st.integers(0, 3))):
        m = draw(st.integers(0, 12))
        ts = _ints(draw(st.lists(st.integers(0, 1200 * n_cycles), min_size=m, max_size=m)))
        values = np.asarray(draw(st.lists(
            st.one_of(st.just(float("nan")), st.floats(0, 100)), min_size=m, max_size=m)))
        point = draw(st.booleans())
        metrics.append(MetricSeries(
            f"m{i % 2}", "pct", "nvml" if point else "pm_sampling", draw(devices), ts, values,
            None if point else draw(st.sampled_from([None, 50, 200])),
        ))
        if draw(st.booleans()) and not point:  # a second metric of the same pass
            metrics.append(MetricSeries(f"m{i}b", "pct", "pm_sampling", metrics[-1].device,
                                        ts, values[::-1].copy(), metrics[-1].interval_ns))
    t = draw(st.integers(0, 6))
    memcpy = TransferTable(
        kind=tuple(draw(st.sampled_from(["HtoD", "DtoH", "memset"])) for _ in range(t)),
        bytes=np.ones(t, dtype=np.int64), device=_ints([draw(devices) for _ in range(t)]),
        stream=np.zeros(t, dtype=np.int64), start_ns=np.zeros(t, dtype=np.int64),
        end_ns=_ints([draw(st.integers(0, 50)) for _ in range(t)]),
        cycle=_ints([draw(st.integers(-1, n_cycles - 1)) for _ in range(t)]),
    )
    run = Run(
        index=0, pid=7, rank=None, exit_code=0,
        cycles=CycleTable(index=_ints(cycle_ids), start_ns=_ints(cycle_start),
                          end_ns=_ints(cycle_start) + 1000, label=tuple(f"c{c % 2}" for c in
                                                                        cycle_ids),
                          warmup=np.asarray(warmup, dtype=bool)),
        kernels=kernels, memcpy=memcpy, memset=empty_transfer_table(), metrics=tuple(metrics),
    )
    base = make_run_file(n_cycles=2)
    strings = tuple(KernelName(f"_Z{i}", f"k{i}|`{i}`") for i in range(n_names))
    return RunFile(
        schema_version=base.schema_version, tool_version=base.tool_version,
        status=base.status, environment=base.environment, collection=base.collection,
        workload=base.workload, strings=strings, runs=(run,),
    )


@settings(max_examples=150, deadline=None)
@given(random_runs())
def test_random_runs(run_file: RunFile) -> None:
    _same(run_file)


@settings(max_examples=100, deadline=None)
@given(random_runs())
def test_launch_means_match_one_series_at_a_time(run_file: RunFile) -> None:
    run = run_file.runs[0]
    k = run.kernels
    together = launch_means(k.start_ns, k.end_ns, k.device, run.metrics)
    for series, means in zip(run.metrics, together, strict=True):
        expected = reference.kernel_metric_means(run, series)
        assert means.tobytes() == expected.tobytes()
        assert kernel_metric_means(run, series).tobytes() == expected.tobytes()


@settings(max_examples=100, deadline=None)
@given(random_runs())
def test_launch_means_of_launches_in_time_order(run_file: RunFile) -> None:
    """Launches in time order (the usual case) take the cumulative-count path of
    kernel_metrics, in blocks of any size; the means stay those of the reference, bit for
    bit."""
    run = run_file.runs[0]
    k = run.kernels
    order = np.argsort(k.start_ns, kind="stable")
    ordered = KernelTable(**{f: None if getattr(k, f) is None else getattr(k, f)[order]
                             for f in KernelTable.__dataclass_fields__})
    run = Run(**{**run.__dict__, "kernels": ordered})
    for block in (2, 7, 1 << 15):  # launches split into blocks, or all in one
        with patch.object(kernel_metrics, "BLOCK", block):
            together = launch_means(ordered.start_ns, ordered.end_ns, ordered.device,
                                    run.metrics)
        for series, means in zip(run.metrics, together, strict=True):
            assert means.tobytes() == reference.kernel_metric_means(run, series).tobytes()


def test_joint_weights_are_the_frame_of_columns() -> None:
    """The one-block frame of the weighted sums equals the dict-of-columns frame it
    replaced, column for column, bit for bit (NaN where a launch has no value)."""
    from perfdiff.analysis.cycle_table import _joint_weights, _weights

    rng = np.random.default_rng(3)
    dur = rng.uniform(0.0, 5.0, 50)
    means = [rng.uniform(0.0, 100.0, 50) for _ in range(3)]
    means[1][::4] = np.nan
    ons = [np.isfinite(m) & (rng.uniform(size=50) > 0.2) for m in means]
    joint = [(0, ons[0]), (2, ons[2])]
    want = pd.DataFrame({name: column for i, on in joint for name, column in (
        (f"w{i}", np.where(on, dur, np.nan)), (f"wv{i}", np.where(on, dur * means[i], np.nan)))})
    got = _joint_weights(dur, means, joint)
    assert list(got.columns) == list(want.columns)
    assert got.to_numpy().tobytes() == want.to_numpy().tobytes()
    one = _weights(dur, means[1], ons[1])
    assert one.to_numpy().tobytes() == pd.DataFrame(
        {"w": dur[ons[1]], "wv": dur[ons[1]] * means[1][ons[1]]}).to_numpy().tobytes()


def test_repeated_cycle_index_is_one_line() -> None:
    run_file = make_run_file(n_cycles=3, n_warmup=0)
    run = run_file.runs[0]
    cycles = CycleTable(index=_ints([0, 1, 1]), start_ns=run.cycles.start_ns,
                        end_ns=run.cycles.end_ns, label=run.cycles.label,
                        warmup=run.cycles.warmup)
    damaged = RunFile(**{**run_file.__dict__, "runs": (Run(**{**run.__dict__,
                                                              "cycles": cycles}),)})
    with pytest.raises(InputError, match="cycle index 1 appears more than once"):
        cycle_table(damaged)
