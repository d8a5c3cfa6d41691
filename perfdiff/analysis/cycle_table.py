"""Run file -> cycle table (one row per run, pid, device, cycle, function, metric).

Why these choices:
- A kernel belongs to the cycle that launched it (``KernelTable.cycle``): GPU work runs
  asynchronously behind the CPU, so cutting by wall-clock windows would split one step's kernels
  over two cycles. Its whole duration counts in that cycle.
- GPU idle is the cycle's time minus the union of its kernels' intervals on the device (never
  below 0): overlapping kernels on several streams must not count twice.
- Memcpy (by direction) and memset are pseudo-functions, so a copy that grew is visible.
- Warm-up cycles are dropped here, once, so no statistic can see them.
- Replicate runs (same rank, new process) share one ``pid`` value so they pool as runs; ranks
  of one job keep theirs.
- Everything is grouped on integer ids (interned names) in numpy, with one pandas group-sum per
  table where a sum is needed (pandas sums with Kahan compensation; numpy's plain sums would
  round differently). No Python loop per launch and no DataFrame per launch: a million launches
  build in a few tenths of a second (bench/README.md, scale benchmark). The result is identical,
  row for row and bit for bit, to the straightforward pandas version this replaced
  (tests/reference_cycle_table.py, checked by tests/analysis/test_scale_cycle_table.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.clock_reasons import run_for_statistics
from perfdiff.analysis.kernel_metrics import launch_means
from perfdiff.errors import InputError
from perfdiff.schema.model import BoolArray, FloatArray, IntArray, Run, RunFile, TransferTable

# Integer keys packed from several columns must stay below this (int64, with headroom).
_KEY_LIMIT = 2**62


def cycle_table(run_file: RunFile) -> pd.DataFrame:
    """The cycle table of every run in ``run_file`` (warm-up cycles excluded)."""
    names = np.asarray(
        [s.demangled or s.mangled for s in run_file.strings] + [C.IDLE_FUNCTION], dtype=object
    )
    # Replicate runs are separate processes (new pids) of the same role: a run's pid column is
    # the pid of the first run with its rank, so replicates pool and ranks stay apart.
    role_pid: dict[int | None, int] = {}
    for run in run_file.runs:
        role_pid.setdefault(run.rank, run.pid)
    parts = [_run_table(run, names, role_pid[run.rank]) for run in run_file.runs]
    parts = [p for p in parts if len(p)]
    if not parts:
        return C.empty_cycle_table()
    table = pd.concat(parts, ignore_index=True)
    return table


@dataclass(frozen=True)
class _Cycles:
    """The measured (non-warm-up) cycles of a run, in file order, and a lookup by index."""

    index: IntArray
    cycle_ms: FloatArray
    anchor: np.ndarray
    sorted_index: IntArray  # index, ascending
    sorted_position: IntArray  # where each of sorted_index sits in file order

    @classmethod
    def of(cls, run: Run) -> _Cycles:
        cyc = run.cycles
        keep = ~cyc.warmup
        index = cyc.index[keep]
        order = np.argsort(index, kind="stable")
        sorted_index = index[order]
        if sorted_index.shape[0] > 1 and bool((sorted_index[1:] == sorted_index[:-1]).any()):
            twice = int(sorted_index[1:][sorted_index[1:] == sorted_index[:-1]][0])
            raise InputError(
                f"run {run.index}: cycle index {twice} appears more than once in the cycles "
                "table; the run file is damaged, re-record it"
            )
        return cls(
            index=index,
            cycle_ms=(cyc.end_ns[keep] - cyc.start_ns[keep]) / 1e6,
            anchor=np.asarray(cyc.label, dtype=object)[keep],
            sorted_index=sorted_index,
            sorted_position=order,
        )

    def rank(self, cycle: IntArray) -> IntArray:
        """Rank of each (measured) cycle index among the measured cycles, ascending."""
        first = int(self.sorted_index[0])
        if int(self.sorted_index[-1]) - first == self.sorted_index.shape[0] - 1:
            return cycle - first  # consecutive indices, the usual case
        return np.searchsorted(self.sorted_index, cycle)

    def position(self, cycle: IntArray) -> IntArray:
        """Row of each (measured) cycle index in the cycles table (file order)."""
        return self.sorted_position[self.rank(cycle)]


@dataclass(frozen=True)
class _Rows:
    """Rows of the cycle table under construction, as parallel columns."""

    dev: IntArray
    cycle: IntArray
    function: np.ndarray
    func_type: np.ndarray
    time_ms: FloatArray
    launches: FloatArray
    metric: np.ndarray
    metric_mean: FloatArray

    @staticmethod
    def concat(parts: list[_Rows]) -> _Rows:
        return _Rows(
            *(
                np.concatenate([getattr(p, name) for p in parts])
                for name in _Rows.__dataclass_fields__
            )
        )


def _run_table(run: Run, names: np.ndarray, pid: int) -> pd.DataFrame:
    run = run_for_statistics(run)  # a clock-reason bitmask becomes a share of time
    cycles = _Cycles.of(run)
    if cycles.index.shape[0] == 0:
        return C.empty_cycle_table()
    k = run.kernels
    in_cycle = np.isin(k.cycle, cycles.index)
    launches = _Launches.of(run, in_cycle, cycles)
    kernel_rows, kernel_metric_means, metric_names = _kernel_rows(run, launches, cycles, names)
    idle = _idle_rows(launches, cycles, names[-1])
    transfers = [
        _transfer_rows(run.memcpy, cycles.index, prefix="Memcpy ", func_type="memcpy"),
        _transfer_rows(run.memset, cycles.index, prefix="", func_type="memset"),
    ]
    other = _Rows.concat([idle, *[_transfer_as_rows(t) for t in transfers if len(t)]])
    if kernel_rows.dev.shape[0] + other.dev.shape[0] == 0:
        return C.empty_cycle_table()  # nothing ran on any device in the measured cycles
    blocks = []
    metric_devices: set[int] = set()
    for (device, name), metric_mean in zip(metric_names, kernel_metric_means, strict=True):
        metric_devices.add(device)
        on_device = np.flatnonzero(kernel_rows.dev == device)
        blocks.append(
            _select(kernel_rows, on_device, metric=name, metric_mean=metric_mean[on_device])
        )
    no_metric = np.flatnonzero(~np.isin(kernel_rows.dev, sorted(metric_devices)))
    blocks.append(_select(kernel_rows, no_metric, metric="", metric_mean=None))
    blocks.append(other)
    rows = _Rows.concat(blocks)
    at = cycles.position(rows.cycle)
    cycle_ms = cycles.cycle_ms[at]
    return pd.DataFrame(
        {
            C.RUN: run.index,
            C.PID: pid,
            C.DEVICE: _device_labels(rows.dev),
            C.CYCLE: rows.cycle.astype(np.int64),
            C.CYCLE_MS: cycle_ms,
            C.ANCHOR: cycles.anchor[at],
            C.FUNCTION: rows.function,
            C.FUNC_TYPE: rows.func_type,
            C.METRIC: rows.metric,
            C.TIME_MS: rows.time_ms,
            C.CYCLE_SHARE_PCT: 100.0 * rows.time_ms / cycle_ms,
            C.METRIC_MEAN: rows.metric_mean,
            C.LAUNCHES: rows.launches.astype(np.float64),
        }
    )


def _select(rows: _Rows, at: IntArray, *, metric: str,
            metric_mean: FloatArray | None) -> _Rows:
    """Rows ``at`` of ``rows``, labelled with one metric and its metric mean μ (None: NaN)."""
    n = at.shape[0]
    return _Rows(
        dev=rows.dev[at],
        cycle=rows.cycle[at],
        function=rows.function[at],
        func_type=rows.func_type[at],
        time_ms=rows.time_ms[at],
        launches=rows.launches[at],
        metric=_constant(metric, n),
        metric_mean=np.full(n, np.nan) if metric_mean is None else metric_mean,
    )


def _constant(text: str, n: int) -> np.ndarray:
    out = np.empty(n, dtype=object)
    out[:] = text
    return out


def _device_labels(dev: IntArray) -> np.ndarray:
    """``"GPU 3"`` for device 3, built once per distinct device."""
    if dev.shape[0] == 0:
        return np.empty(0, dtype=object)
    devices, code = np.unique(dev, return_inverse=True)
    labels = np.asarray([f"GPU {int(d)}" for d in devices], dtype=object)
    return labels[code]


@dataclass(frozen=True)
class _Launches:
    """The kernel launches of the measured cycles, with their devices and cycles as codes."""

    devices: IntArray  # every device the run's kernels ran on, ascending
    dev: IntArray
    dev_code: IntArray  # position of dev in devices
    cycle: IntArray
    cycle_rank: IntArray  # rank among the measured cycles
    fid: IntArray
    start: IntArray
    end: IntArray

    @classmethod
    def of(cls, run: Run, in_cycle: BoolArray, cycles: _Cycles) -> _Launches:
        k = run.kernels
        devices, all_codes = _codes(k.device)
        cycle = k.cycle[in_cycle]
        return cls(
            devices=devices,
            dev=k.device[in_cycle],
            dev_code=all_codes[in_cycle],
            cycle=cycle,
            cycle_rank=cycles.rank(cycle) if cycle.shape[0] else cycle,
            fid=k.name_id[in_cycle],
            start=k.start_ns[in_cycle],
            end=k.end_ns[in_cycle],
        )


def _codes(values: IntArray) -> tuple[IntArray, IntArray]:
    """The distinct values, ascending, and each value's position among them.

    Device indices are few and small: a count per value finds them without sorting a million.
    """
    if values.shape[0] == 0:
        return values[:0], values[:0]
    low, high = int(values.min()), int(values.max())
    if low == high:
        return values[:1].copy(), np.zeros(values.shape[0], dtype=np.int64)
    if high - low < 4096:
        present = np.flatnonzero(np.bincount(values - low, minlength=high - low + 1)) + low
        return present, np.searchsorted(present, values)
    distinct, code = np.unique(values, return_inverse=True)
    return distinct, code.reshape(-1)


def _kernel_rows(
    run: Run, launches: _Launches, cycles: _Cycles, names: np.ndarray
) -> tuple[_Rows, list[FloatArray], list[tuple[int, str]]]:
    """One row per (device, cycle, function) that ran, sorted; and μ per metric series.

    Time and launch count per group, and per metric series the time-weighted mean over the
    group's launches that have a value: sum(duration x launch mean) / sum(duration).

    The sums are pandas group-sums over exactly the rows, in exactly the order, that the
    reference version summed: pandas picks its algorithm from the data (``reduceat`` when the
    groups come sorted and hold no NaN, compensated summation otherwise), and the results
    differ in the last bit between the two. See :func:`_weighted_sums`.
    """
    metric_names = [(s.device, s.name) for s in run.metrics]
    if launches.dev.shape[0] == 0:
        return _empty_rows(), [np.zeros(0)] * len(metric_names), metric_names
    dur_ns = launches.end - launches.start
    n_cycles = int(launches.cycle_rank.max()) + 1
    n_fid = names.shape[0]
    if launches.devices.shape[0] * n_cycles * n_fid >= _KEY_LIMIT:
        raise InputError(  # not reachable with measured cycles and interned names in practice
            f"run {run.index}: too many (device, cycle, function) combinations to group"
        )
    key = (launches.dev_code * n_cycles + launches.cycle_rank) * n_fid + launches.fid
    grouped = pd.Series(dur_ns / 1e6).groupby(key, sort=True)
    time_ms = grouped.sum()
    group_key = time_ms.index.to_numpy()
    g_fid = group_key % n_fid
    g_dev_code, g_cycle_rank = np.divmod(group_key // n_fid, n_cycles)
    n = group_key.shape[0]
    rows = _Rows(
        dev=launches.devices[g_dev_code],
        cycle=cycles.sorted_index[g_cycle_rank],
        function=names[g_fid],
        func_type=_constant("kernel", n),
        time_ms=np.asarray(time_ms.to_numpy(), dtype=np.float64),
        launches=grouped.size().to_numpy().astype(np.float64),
        metric=_constant("", n),
        metric_mean=np.full(n, np.nan),
    )
    means = launch_means(launches.start, launches.end, launches.dev, run.metrics)
    metric_means = _weighted_sums(run, launches, key, group_key, dur_ns.astype(np.float64), means)
    return rows, metric_means, metric_names


def _weighted_sums(
    run: Run,
    launches: _Launches,
    key: IntArray,
    group_key: IntArray,
    dur: FloatArray,
    series_means: list[FloatArray],
) -> list[FloatArray]:
    """μ per group for each metric series: sum(dur x mean) / sum(dur) over launches with a mean.

    The reference summed, per series, only the launches with a value. Where those launches'
    keys come in order, pandas sums them with ``reduceat``: that is done here the same way, per
    series. Otherwise pandas uses its compensated sum, which skips NaN exactly as if the row
    were absent: those series are summed together in one group-by, NaN where a launch has no
    value, instead of one group-by each.
    """
    n = group_key.shape[0]
    metric_means: list[FloatArray] = [np.full(n, np.nan) for _ in series_means]
    joint: list[tuple[int, BoolArray]] = []
    for i, (series, means) in enumerate(zip(run.metrics, series_means, strict=True)):
        on = (launches.dev == series.device) & np.isfinite(means)
        on_key = key[on]
        if on_key.shape[0] < 2 or bool((on_key[1:] >= on_key[:-1]).all()):
            sums = _weights(dur, means, on).groupby(on_key, sort=True).sum()
            _divide_into(metric_means[i], group_key, sums.index.to_numpy(), sums["wv"], sums["w"])
        else:
            joint.append((i, on))
    if joint:
        sums = _joint_weights(dur, series_means, joint).groupby(key, sort=True).sum()
        for i, _ in joint:
            _divide_into(metric_means[i], group_key, sums.index.to_numpy(), sums[f"wv{i}"],
                         sums[f"w{i}"])
    return metric_means


def _weights(dur: FloatArray, means: FloatArray, on: BoolArray) -> pd.DataFrame:
    """Columns ``w`` = dur[on] and ``wv`` = dur[on] x means[on], built in the one block the
    frame keeps: ``pd.DataFrame({"w": ..., "wv": ...})`` held each column twice, and this
    was the peak of ``compare`` on a million launches (bench/README.md, issue 25)."""
    block = np.empty((2, int(np.count_nonzero(on))), dtype=np.float64)
    np.compress(on, dur, out=block[0])
    np.compress(on, means, out=block[1])
    block[1] *= block[0]  # means x dur: the same product as dur x means
    return pd.DataFrame(block.T, columns=["w", "wv"], copy=False)


def _joint_weights(dur: FloatArray, series_means: list[FloatArray],
                   joint: list[tuple[int, BoolArray]]) -> pd.DataFrame:
    """Per series ``i`` of ``joint`` (with its launches that have a value, ``on``), columns
    ``w{i}`` = dur and ``wv{i}`` = dur x mean, NaN where not ``on``: what
    ``pd.DataFrame({f"w{i}": np.where(on, dur, nan), ...})`` gives, built in the one block the
    frame keeps instead of column by column and then copied into it (that copy, six columns of
    a million launches, was the peak of ``compare``: bench/README.md, issue 25)."""
    block = np.empty((2 * len(joint), dur.shape[0]), dtype=np.float64)
    names: list[str] = []
    for j, (i, on) in enumerate(joint):
        off = ~on
        weight, weighted = block[2 * j], block[2 * j + 1]
        np.copyto(weight, dur)
        weight[off] = np.nan
        np.multiply(dur, series_means[i], out=weighted)
        weighted[off] = np.nan
        names += [f"w{i}", f"wv{i}"]
    return pd.DataFrame(block.T, columns=names, copy=False)


def _divide_into(
    out: FloatArray, group_key: IntArray, at_key: IntArray, num: pd.Series, den: pd.Series
) -> None:
    with np.errstate(invalid="ignore", divide="ignore"):
        out[np.searchsorted(group_key, at_key)] = num.to_numpy() / den.to_numpy()


def _empty_rows() -> _Rows:
    nothing = np.zeros(0)
    return _Rows(
        dev=np.zeros(0, dtype=np.int64),
        cycle=np.zeros(0, dtype=np.int64),
        function=np.empty(0, dtype=object),
        func_type=np.empty(0, dtype=object),
        time_ms=nothing,
        launches=nothing,
        metric=np.empty(0, dtype=object),
        metric_mean=nothing,
    )


def _idle_rows(launches: _Launches, cycles: _Cycles, idle_name: str) -> _Rows:
    """Cycle time with no kernel running, per device that ran kernels in this run."""
    devices = launches.devices
    n_cycles = cycles.index.shape[0]
    n = devices.shape[0] * n_cycles
    union_ms = np.zeros((devices.shape[0], n_cycles), dtype=np.float64)
    if launches.dev.shape[0]:
        pair = launches.dev_code * n_cycles + launches.cycle_rank
        start, end = launches.start, launches.end
        order = _stable_order(pair, start)
        if order is not None:
            pair, start, end = pair[order], start[order], end[order]
        sums = _union_ms(pair, start, end)
        dev_at, rank_at = np.divmod(sums.index.to_numpy(), n_cycles)
        union_ms[dev_at, cycles.sorted_position[rank_at]] = sums.to_numpy()
    cycle_ms = np.tile(cycles.cycle_ms, devices.shape[0])
    idle_ms = np.maximum(0.0, cycle_ms - union_ms.reshape(-1))
    return _Rows(
        dev=np.repeat(devices, n_cycles),
        cycle=np.tile(cycles.index, devices.shape[0]),
        function=_constant(idle_name, n),
        func_type=_constant("idle", n),
        time_ms=idle_ms,
        launches=np.full(n, np.nan),
        metric=_constant("", n),
        metric_mean=np.full(n, np.nan),
    )


def _stable_order(pair: IntArray, start: IntArray) -> IntArray | None:
    """Stable sort by (pair, start); None when already in that order (the usual case)."""
    if pair.shape[0] < 2:
        return None
    pair_step = pair[1:] - pair[:-1]
    if bool((pair_step >= 0).all()) and bool(((pair_step > 0) | (start[1:] >= start[:-1])).all()):
        return None
    return np.lexsort((start, pair))


def _union_ms(pair: IntArray, start: IntArray, end: IntArray) -> pd.Series:
    """Per (device, cycle) ``pair`` (sorted, then by start): the union of the intervals, ms.

    Each kernel adds the part of it after the furthest end seen so far in its group.
    """
    new_group = np.empty(pair.shape[0], dtype=bool)
    new_group[0] = True
    np.not_equal(pair[1:], pair[:-1], out=new_group[1:])
    group = np.cumsum(new_group) - 1
    furthest = _grouped_cummax(end, group)
    prev_end = np.empty(pair.shape[0], dtype=np.float64)
    prev_end[1:] = furthest[:-1]
    prev_end[new_group] = np.nan
    reach = np.fmax(start.astype(np.float64), prev_end)
    union = np.maximum(0.0, end.astype(np.float64) - reach) / 1e6
    return pd.Series(union).groupby(pair, sort=True).sum()


def _grouped_cummax(values: IntArray, group: IntArray) -> IntArray:
    """Running maximum of ``values`` restarting at each group (``group`` non-decreasing).

    Each group is lifted above every value of the groups before it, so one running maximum
    over the whole array never carries across a group boundary.
    """
    low = int(values.min())
    span = int(values.max()) - low + 1
    if (int(group[-1]) + 1) * span < _KEY_LIMIT:
        lift = group * span
        return np.maximum.accumulate(values - low + lift) - lift + low
    out: IntArray = pd.Series(values).groupby(group, sort=False).cummax().to_numpy()
    return out


def _transfer_rows(
    table: TransferTable, cycle_index: IntArray, *, prefix: str, func_type: str
) -> pd.DataFrame:
    keep = np.isin(table.cycle, cycle_index)
    if not keep.any():
        return pd.DataFrame()
    kinds = np.asarray(table.kind, dtype=object)[keep]
    frame = pd.DataFrame(
        {
            "dev": table.device[keep],
            C.CYCLE: table.cycle[keep],
            C.FUNCTION: [f"{prefix}{kind}" if kind != "memset" else "Memset" for kind in kinds],
            C.TIME_MS: (table.end_ns - table.start_ns)[keep] / 1e6,
        }
    )
    out = (
        frame.groupby(["dev", C.CYCLE, C.FUNCTION])[C.TIME_MS]
        .agg(["sum", "size"])
        .rename(columns={"sum": C.TIME_MS, "size": C.LAUNCHES})
        .reset_index()
    )
    out[C.FUNC_TYPE] = func_type
    return out


def _transfer_as_rows(frame: pd.DataFrame) -> _Rows:
    n = len(frame)
    return _Rows(
        dev=frame["dev"].to_numpy(dtype=np.int64),
        cycle=frame[C.CYCLE].to_numpy(dtype=np.int64),
        function=frame[C.FUNCTION].to_numpy(dtype=object),
        func_type=frame[C.FUNC_TYPE].to_numpy(dtype=object),
        time_ms=frame[C.TIME_MS].to_numpy(dtype=np.float64),
        launches=frame[C.LAUNCHES].to_numpy(dtype=np.float64),
        metric=_constant("", n),
        metric_mean=np.full(n, np.nan),
    )
