"""Raw trace records (what a tracing backend hands over) and their conversion to run tables.

Two forms, one meaning: the CUPTI backend hands over columns (``columns.py``: numpy rows
decoded straight from CUPTI's buffers, no object per record), fakes and tests hand over these
small tuples. :meth:`RawTrace.as_columns` joins both; everything after that (interning names,
demangling, cycle assignment, building the run tables) is vectorised and CPU-tested.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from perfdiff.collect.columns import TRANSFER_KINDS, TraceColumns, concat, from_records
from perfdiff.collect.cupti.demangle import demangle
from perfdiff.collect.cycles.cycles import assign_cycles, launch_times
from perfdiff.schema.model import CycleTable, KernelName, KernelTable, TransferTable


class KernelRecord(NamedTuple):
    """One kernel execution as traced."""

    name: str  # mangled, as CUPTI reports it
    device: int
    stream: int
    start_ns: int
    end_ns: int
    correlation_id: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


class TransferRecord(NamedTuple):
    """One memcpy or memset as traced; ``kind`` is "HtoD", "DtoH", "DtoD", ... or "memset"."""

    kind: str
    bytes: int
    device: int
    stream: int
    start_ns: int
    end_ns: int
    correlation_id: int


class ApiRecord(NamedTuple):
    """A runtime/driver API call: only what cycle assignment needs."""

    correlation_id: int
    start_ns: int


@dataclass
class RawTrace:
    """Everything a tracing backend gathered in one collection."""

    kernels: list[KernelRecord] = field(default_factory=list)
    memcpy: list[TransferRecord] = field(default_factory=list)
    memset: list[TransferRecord] = field(default_factory=list)
    api: list[ApiRecord] = field(default_factory=list)
    dropped_records: int = 0
    # (start, end, records) of each buffer the backend took in, on the trace's clock: taking
    # one in holds the interpreter, and a cycle open then is that much longer (session.py)
    handovers: list[tuple[int, int, int]] = field(default_factory=list)
    # records decoded from CUPTI's buffers (raw_intake.py); the lists above stay empty then
    columns: TraceColumns | None = None
    # CPU time spent decoding buffers between cycles (RawIntake.decode_pending), in ns
    deferred_ns: int = 0
    # CPU time spent decoding the spooled buffers when the collection stopped (spool.py), ns
    after_run_ns: int = 0
    # CPU time of the spool's writes at hand-over, interpreter lock released (spool.py), ns
    spool_write_ns: int = 0

    def add_tallies(self, other: RawTrace) -> None:
        """``other``'s dropped records, hand-overs and decode times added to these (the
        records themselves are joined by the caller: ``cupti/detached.py``). Here, beside the
        fields, so that a new tally is not left out of the join."""
        self.dropped_records += other.dropped_records
        self.handovers.extend(other.handovers)
        self.deferred_ns += other.deferred_ns
        self.after_run_ns += other.after_run_ns
        self.spool_write_ns += other.spool_write_ns

    def as_columns(self) -> TraceColumns:
        """Every record, columnar: the decoded columns, then the tuples."""
        parts = [self.columns] if self.columns is not None else []
        if self.kernels or self.memcpy or self.memset or self.api or not parts:
            # tuple-built name keys are negative, decoded ones addresses: they cannot clash
            parts.append(from_records(self.kernels, self.memcpy, self.memset, self.api))
        return concat(parts)

    def drop_streams(self, streams: set[int], *, memset: bool = True) -> int:
        """Remove kernels (and memsets) on ``streams``; how many kernels went."""
        before = len(self.kernels)
        self.kernels = [k for k in self.kernels if k.stream not in streams]
        dropped = before - len(self.kernels)
        if memset:
            self.memset = [m for m in self.memset if m.stream not in streams]
        if self.columns is not None:
            cols = self.columns
            kept = cols.without_streams(streams)
            if not memset:
                kept.memset = cols.memset
            dropped += cols.kernels.size - kept.kernels.size
            self.columns = kept
        return dropped

    def set_launch_records(self, correlation_ids: np.ndarray[tuple[int], np.dtype[np.int64]],
                           start_ns: np.ndarray[tuple[int], np.dtype[np.int64]]) -> None:
        """Replace every launch record by these (columnar)."""
        cols = self.columns if self.columns is not None else TraceColumns()
        api = np.zeros(correlation_ids.size, dtype=cols.api.dtype)
        api["correlation_id"] = correlation_ids
        api["start"] = start_ns
        cols.api = api
        self.columns = cols
        self.api = []


@dataclass
class StringTable:
    """Interns kernel names; ids index ``RunFile.strings``."""

    ids: dict[str, int] = field(default_factory=dict)
    names: list[KernelName] = field(default_factory=list)

    def intern(self, mangled: str) -> int:
        found = self.ids.get(mangled)
        if found is not None:
            return found
        new_id = len(self.names)
        self.ids[mangled] = new_id
        self.names.append(KernelName(mangled=mangled, demangled=demangle(mangled)))
        return new_id


@dataclass(frozen=True)
class Tables:
    """The run tables built from a raw trace, plus what the collector must warn about."""

    kernels: KernelTable
    memcpy: TransferTable
    memset: TransferTable
    kernels_without_launch_record: int
    # records CUPTI handed over without a whole interval (end < start: end 0), per table
    unfinished: dict[str, int] = field(default_factory=dict)


def build_tables(raw: RawTrace, cycles: CycleTable, strings: StringTable) -> Tables:
    """Sort by GPU start, intern names, assign each record to its launch cycle.

    Records that end before they start are left out and counted (``Tables.unfinished``):
    CUPTI delivers an activity still in flight at a forced flush with end 0 (seen on every
    rank of a two-GPU torchrun DDP job, memcpys, H200 2026-11-28), and a run file must not
    hold them (``schema.sense`` refuses it, so one such row lost the whole rank).
    """
    cols = raw.as_columns()
    api_ids = cols.api["correlation_id"].astype(np.int64)
    api_starts = cols.api["start"].astype(np.int64)
    unfinished: dict[str, int] = {}
    kept = {name: _finished(getattr(cols, name), name, unfinished)
            for name in ("kernels", "memcpy", "memset")}
    kernels, missing = _kernel_table(replace(cols, kernels=kept["kernels"]), cycles, strings,
                                     api_ids, api_starts)
    memcpy = _transfer_table(kept["memcpy"], cycles, api_ids, api_starts)
    memset = _transfer_table(kept["memset"], cycles, api_ids, api_starts)
    return Tables(kernels=kernels, memcpy=memcpy, memset=memset,
                  kernels_without_launch_record=missing, unfinished=unfinished)


def _finished(records: np.ndarray[Any, np.dtype[Any]], name: str,
              counts: dict[str, int]) -> np.ndarray[Any, np.dtype[Any]]:
    """The records whose end is not before their start; the others counted under ``name``."""
    ok = records["end"].astype(np.int64) >= records["start"].astype(np.int64)
    if bool(ok.all()):
        return records
    counts[name] = int(ok.size - ok.sum())
    return records[ok]


def unfinished_warning(unfinished: dict[str, int]) -> str | None:
    """One line for the records left out because CUPTI gave them no end, or None."""
    if not unfinished:
        return None
    what = ", ".join(f"{n} {kind}" for kind, n in sorted(unfinished.items()))
    return (f"{what} record(s) had no end time (still in flight when CUPTI flushed, end 0); "
            "they were left out of the run file")


def _i64(values: np.ndarray[Any, np.dtype[Any]]) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
    return np.ascontiguousarray(values, dtype=np.int64).reshape(-1)


def _kernel_table(
    cols: TraceColumns,
    cycles: CycleTable,
    strings: StringTable,
    api_ids: np.ndarray[tuple[int], np.dtype[np.int64]],
    api_starts: np.ndarray[tuple[int], np.dtype[np.int64]],
) -> tuple[KernelTable, int]:
    k = cols.kernels
    recs = k[np.lexsort((k["correlation_id"], k["end"], k["start"]))]
    start = _i64(recs["start"])
    corr = _i64(recs["correlation_id"])
    launched, missing = launch_times(corr, start, api_ids, api_starts)
    keys, inverse = np.unique(recs["name_key"], return_inverse=True)
    # intern in order of first appearance (by GPU start), as one record at a time would
    first = np.full(keys.size, recs.size, dtype=np.int64)
    np.minimum.at(first, inverse.reshape(-1), np.arange(recs.size, dtype=np.int64))
    ids = np.zeros(keys.size, dtype=np.int64)
    for slot in np.argsort(first, kind="stable").tolist():
        ids[slot] = strings.intern(cols.names.get(int(keys[slot]), ""))
    table = KernelTable(
        name_id=_i64(ids[inverse.reshape(-1)]) if recs.size else _i64(np.zeros(0)),
        device=_i64(recs["device"]),
        stream=_i64(recs["stream"]),
        start_ns=start,
        end_ns=_i64(recs["end"]),
        cycle=assign_cycles(launched, cycles),
        correlation_id=corr,
        grid_x=_i64(recs["grid_x"]),
        grid_y=_i64(recs["grid_y"]),
        grid_z=_i64(recs["grid_z"]),
        block_x=_i64(recs["block_x"]),
        block_y=_i64(recs["block_y"]),
        block_z=_i64(recs["block_z"]),
    )
    return table, missing


def _transfer_table(
    records: np.ndarray[Any, np.dtype[Any]],
    cycles: CycleTable,
    api_ids: np.ndarray[tuple[int], np.dtype[np.int64]],
    api_starts: np.ndarray[tuple[int], np.dtype[np.int64]],
) -> TransferTable:
    recs = records[np.lexsort((records["end"], records["start"]))]
    start = _i64(recs["start"])
    launched, _ = launch_times(_i64(recs["correlation_id"]), start, api_ids, api_starts)
    return TransferTable(
        kind=tuple(TRANSFER_KINDS[c] if c < len(TRANSFER_KINDS) else "unknown"
                   for c in recs["kind"].tolist()),
        bytes=_i64(recs["bytes"]),
        device=_i64(recs["device"]),
        stream=_i64(recs["stream"]),
        start_ns=start,
        end_ns=_i64(recs["end"]),
        cycle=assign_cycles(launched, cycles),
    )


__all__ = [
    "ApiRecord",
    "KernelRecord",
    "RawTrace",
    "StringTable",
    "Tables",
    "TransferRecord",
    "build_tables",
    "unfinished_warning",
]
