"""GPU activity of an export as integer columns: kernels, memcpy, memset, and launch times.

Why its own module: this is the one place rows leave SQL. Only the columns perfdiff uses are
selected, a chunk of rows at a time into numpy (a million kernels never exist as Python
tuples all at once), and each value is checked to be an integer where the schema says so: a
NULL or a real number where a time or an id belongs is refused in one line, never truncated.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from perfdiff.errors import InputError
from perfdiff.readers.nsys.database import Export
from perfdiff.readers.nsys.tables import (
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    PID_MASK,
    PID_SHIFT,
    RUNTIME_TABLE,
    STRINGS_TABLE,
)
from perfdiff.schema.model import IntArray

_CHUNK = 65536  # rows converted at a time
_PID = f"((globalPid >> {PID_SHIFT}) & {PID_MASK})"
_COMMON = ("start", "end", "deviceId", "streamId", "correlationId", _PID)


@dataclass(frozen=True)
class Activity:
    """Rows of one activity table; ``extra`` holds the table's own columns, by name."""

    table: str
    start: IntArray
    end: IntArray
    device: IntArray
    stream: IntArray
    correlation: IntArray
    pid: IntArray
    extra: dict[str, IntArray]

    @property
    def size(self) -> int:
        return int(self.start.shape[0])


def int_rows(export: Export, table: str, expressions: tuple[str, ...],
             where: str = "", params: tuple[object, ...] = ()) -> np.ndarray:
    """``SELECT expressions FROM table`` as an (n, k) int64 array, read in chunks.

    Raises one line at the first NULL or non-integer value (sqlite keeps whatever was
    written, whatever the column's declared type)."""
    sql = f"SELECT {', '.join(expressions)} FROM {table} {where}"
    chunks: list[np.ndarray] = []
    try:
        cursor = export.connection.execute(sql, params)
        done = 0
        while batch := cursor.fetchmany(_CHUNK):
            array = np.asarray(batch)
            if array.dtype.kind not in "iu":
                _refuse_values(export, table, expressions, batch, done)
            chunks.append(array.astype(np.int64, copy=False))
            done += len(batch)
    except (ValueError, OverflowError):
        raise InputError(f"{export.where()}: table {table} holds an integer out of range; "
                         "the file is damaged; export the report again") from None
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{export.where()}: table {table} cannot be read ({exc}); the "
                         "file is damaged or truncated; export the report again") from None
    if not chunks:
        return np.zeros((0, len(expressions)), dtype=np.int64)
    return np.concatenate(chunks)


def _refuse_values(export: Export, table: str, expressions: tuple[str, ...],
                   batch: list[tuple[object, ...]], done: int) -> None:
    """One line naming the first bad value and its row (counted from 0 in the order SQLite
    returns the selected rows)."""
    for number, row in enumerate(batch, start=done):
        for name, value in zip(expressions, row, strict=True):
            if not isinstance(value, int) or isinstance(value, bool) \
                    or not -(1 << 63) <= value < 1 << 63:
                raise InputError(
                    f"{export.where()}: table {table} row {number} has {name} = "
                    f"{repr(value)[:40]} where a 64-bit integer belongs; the file is damaged "
                    "or was edited; export the report again")
    raise InputError(f"{export.where()}: table {table} has values that are not integers; "
                     "export the report again")


def read_activity(export: Export, table: str, extra: tuple[str, ...]) -> Activity:
    """The rows of ``table`` (empty when the export has no such table)."""
    if not export.has(table):
        empty = np.zeros(0, dtype=np.int64)
        return Activity(table, empty, empty, empty, empty, empty, empty,
                        {name: empty for name in extra})
    export.require(table, ("start", "end", "deviceId", "streamId", "correlationId",
                           "globalPid", *extra))
    rows = int_rows(export, table, (*_COMMON, *extra))
    columns = [np.ascontiguousarray(rows[:, i]) for i in range(rows.shape[1])]
    start, end, device, stream, correlation, pid = columns[:6]
    activity = Activity(table, start, end, device, stream, correlation, pid,
                        extra={name: columns[6 + i] for i, name in enumerate(extra)})
    bad = np.flatnonzero(activity.end < activity.start)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{export.where()}: {table} row {i} ends before it starts (start "
                         f"{int(activity.start[i])}, end {int(activity.end[i])} ns); the file "
                         "is damaged; export the report again")
    return activity


KERNEL_EXTRA = ("demangledName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")


def read_kernels(export: Export) -> Activity:
    return read_activity(export, KERNEL_TABLE, KERNEL_EXTRA)


def read_memcpy(export: Export) -> Activity:
    return read_activity(export, MEMCPY_TABLE, ("bytes", "copyKind"))


def read_memset(export: Export) -> Activity:
    return read_activity(export, MEMSET_TABLE, ("bytes",))


def kernel_names(export: Export, kernels: Activity) -> dict[int, tuple[str, str]]:
    """StringIds id of each demangled name -> (mangled, demangled) text.

    The mangled name is the one CUPTI reported (``mangledName``, absent in a few exports:
    then the demangled one); every id a kernel names must exist in StringIds."""
    if kernels.size == 0:
        return {}
    has_mangled = "mangledName" in export.columns.get(KERNEL_TABLE, frozenset())
    mangled_of: dict[int, int] = {}
    if has_mangled:
        pairs = export.rows(f"SELECT demangledName, MIN(mangledName) FROM {KERNEL_TABLE} "
                            "GROUP BY demangledName")
        mangled_of = {int(d): int(m) for d, m in pairs if isinstance(m, int)}
    ids = sorted({int(i) for i in np.unique(kernels.extra["demangledName"])}
                 | set(mangled_of.values()))
    text: dict[int, str] = {}
    for start in range(0, len(ids), 900):  # under SQLite's bound-parameter limit
        part = ids[start:start + 900]
        marks = ", ".join("?" * len(part))
        for key, value in export.rows(
                f"SELECT id, value FROM {STRINGS_TABLE} WHERE id IN ({marks})", part):
            if not isinstance(value, str):
                raise InputError(f"{export.where()}: {STRINGS_TABLE} id {key} holds "
                                 f"{value!r} where a kernel name belongs; the file is "
                                 "damaged; export the report again")
            text[int(key)] = value
    names: dict[int, tuple[str, str]] = {}
    for demangled_id in np.unique(kernels.extra["demangledName"]).tolist():
        demangled = text.get(demangled_id)
        if demangled is None:
            raise InputError(f"{export.where()}: a kernel's demangledName {demangled_id} is "
                             f"not in {STRINGS_TABLE}; the file is damaged; export the "
                             "report again")
        mangled = text.get(mangled_of.get(demangled_id, -1), demangled)
        names[demangled_id] = (mangled, demangled)
    return names


_NO_LAUNCH = np.iinfo(np.int64).min


def launch_times(export: Export, activities: list[Activity]) -> list[IntArray]:
    """Host time of the CUDA API call that launched each row (``_NO_LAUNCH`` where the
    export has no such call), matched by (process, correlationId) as CUPTI pairs them."""
    if not export.has(RUNTIME_TABLE) or not any(a.size for a in activities):
        return [np.full(a.size, _NO_LAUNCH, dtype=np.int64) for a in activities]
    export.require(RUNTIME_TABLE, ("start", "correlationId", "globalTid"))
    wanted = " UNION ".join(f"SELECT correlationId FROM {a.table}" for a in activities
                            if a.size)
    rows = int_rows(export, RUNTIME_TABLE,
                    ("start", "correlationId", f"((globalTid >> {PID_SHIFT}) & {PID_MASK})"),
                    f"WHERE correlationId IN ({wanted})")
    key = (rows[:, 2] << 32) | (rows[:, 1] & 0xFFFFFFFF)
    order = np.lexsort((rows[:, 0], key))  # of two calls with one key, the earlier first
    key, start = key[order], rows[order, 0]
    out = []
    for activity in activities:
        wanted_key = (activity.pid << 32) | (activity.correlation & 0xFFFFFFFF)
        pos = np.clip(np.searchsorted(key, wanted_key), 0, max(key.shape[0] - 1, 0))
        found = key.shape[0] > 0
        hit = (key[pos] == wanted_key) if found else np.zeros(activity.size, dtype=bool)
        out.append(np.where(hit, start[pos] if found else 0, _NO_LAUNCH).astype(np.int64))
    return out


NO_LAUNCH = _NO_LAUNCH
