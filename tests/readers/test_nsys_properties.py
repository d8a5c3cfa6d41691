"""Property tests of the Nsight Systems reader: small parsers never raise, and a real export
with one value replaced by anything SQLite can hold gives a run file or one line, never a
traceback or a silently wrong number.

Why mutate a real export: the reader's contract is about files nobody here wrote; the
mutations (a time, an id, a device, a name id, a copy kind set to another integer, a real,
text, a blob, or NULL where the schema allows it) are what a damaged or hand-edited export
can hold.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from perfdiff.errors import PerfdiffError
from perfdiff.readers.nsys import read_nsys
from perfdiff.readers.nsys.machine import _cuda, _driver
from perfdiff.readers.nsys.metrics import metric_unit
from perfdiff.readers.nsys.tables import METRIC_UNITS

FIXTURE = (Path(__file__).resolve().parents[2] / "fixtures" / "nsys"
           / "pipit-cloverleaf-cuda-nsys2024.5.sqlite")

# Metric names as nsys writes them, seen in public scripts and guides that query GPU_METRICS
# (the bracket is the unit): every one must get a unit, the percentages "pct".
PUBLIC_METRIC_NAMES = {
    "SMs Active [Throughput %]": "pct",
    "GPC Clock Frequency [MHz]": "MHz",
    "SM Issue": "",
}


def test_metric_units_of_public_names() -> None:
    for name, unit in PUBLIC_METRIC_NAMES.items():
        assert metric_unit(name) == unit
    assert set(METRIC_UNITS.values()) <= {"pct", "MHz", "GHz", "bytes", "W"}


@given(st.text(max_size=60))
@example("²")  # a digit to str.isdigit, not to int()
def test_small_parsers_never_raise(text: str) -> None:
    assert isinstance(metric_unit(text), str)
    _driver(text)
    _cuda(text)


@given(st.text(max_size=40))
def test_bracketed_percent_is_pct(name: str) -> None:
    assert metric_unit(f"{name} [Throughput %]") == "pct"


COLUMNS = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ("start", "end", "deviceId", "streamId", "correlationId",
                                   "globalPid", "demangledName", "gridX", "blockX"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end", "bytes", "copyKind", "deviceId"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "correlationId", "globalTid"),
    "TARGET_INFO_GPU": ("id", "smCount", "name"),
    "StringIds": ("value",),
}
VALUES = st.one_of(st.integers(min_value=-(2**63), max_value=2**63 - 1),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                   st.binary(max_size=8), st.none())


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from(sorted(COLUMNS)), data=st.data(), value=VALUES,
       row=st.integers(min_value=1, max_value=40))
def test_mutated_export_reads_or_says_one_line(tmp_path: Path, table: str, data: st.DataObject,
                                               value: object, row: int) -> None:
    column = data.draw(st.sampled_from(COLUMNS[table]))
    copy = tmp_path / "mutated.sqlite"
    shutil.copyfile(FIXTURE, copy)
    with sqlite3.connect(copy) as db:
        try:
            db.execute(f'UPDATE {table} SET "{column}" = ? WHERE rowid = ?', (value, row))
        except sqlite3.IntegrityError:
            return  # NOT NULL: SQLite itself refuses to write it
    try:
        run_file = read_nsys(copy)
    except PerfdiffError as exc:
        assert "\n" not in str(exc)
        return
    for run in run_file.runs:  # what is read passed the sense rules: times in order
        assert (run.kernels.end_ns >= run.kernels.start_ns).all()
        assert np.isin(run.kernels.device, [d.index for d in run_file.environment.devices]).all()


SPANS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**4)), min_size=1,
                 max_size=30)


@given(spans=SPANS, times=st.lists(st.integers(-10, 2 * 10**6), max_size=50))
@example(spans=[(5, 0), (5, 0)], times=[5])  # two empty ranges at one time
def test_ranges_become_disjoint_cycles_and_launches_land_inside(
        spans: list[tuple[int, int]], times: list[int]) -> None:
    from perfdiff.readers.nsys.activity import NO_LAUNCH
    from perfdiff.readers.nsys.cycles import assign, range_cycles

    starts = np.asarray([s for s, _ in spans], dtype=np.int64)
    ends = starts + np.asarray([d for _, d in spans], dtype=np.int64)
    cycles = range_cycles(starts, ends, "r", [])
    assert (np.diff(cycles.start) > 0).all() and (cycles.start[1:] >= cycles.end[:-1]).all()
    launch = np.asarray([*times, NO_LAUNCH], dtype=np.int64)
    index = assign(cycles, launch)
    assert index[-1] == -1  # a record without a launch is in no cycle
    for t, i in zip(launch.tolist(), index.tolist(), strict=True):
        inside = [j for j in range(cycles.start.size)
                  if cycles.start[j] <= t < cycles.end[j]]
        assert (inside == [i]) if i >= 0 else not inside or t == NO_LAUNCH
