"""Raw trace records (what a tracing backend hands over) and their conversion to run tables.

Why a plain intermediate form: the CUPTI backend is the only code that sees CUPTI's record
objects; it copies the few fields perfdiff keeps into these tuples. Everything after that
(interning names, demangling, cycle assignment, building the columnar tables) is ordinary
Python that CPU tests drive with fake records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from perfdiff.collect.cycles import assign_cycles, launch_times
from perfdiff.collect.demangle import demangle
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


def build_tables(raw: RawTrace, cycles: CycleTable, strings: StringTable) -> Tables:
    """Sort by GPU start, intern names, assign each record to its launch cycle."""
    api_ids = np.asarray([a.correlation_id for a in raw.api], dtype=np.int64)
    api_starts = np.asarray([a.start_ns for a in raw.api], dtype=np.int64)
    kernels, missing = _kernel_table(raw.kernels, cycles, strings, api_ids, api_starts)
    memcpy = _transfer_table(raw.memcpy, cycles, api_ids, api_starts)
    memset = _transfer_table(raw.memset, cycles, api_ids, api_starts)
    return Tables(kernels=kernels, memcpy=memcpy, memset=memset,
                  kernels_without_launch_record=missing)


def _ints(values: list[int]) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
    return np.asarray(values, dtype=np.int64).reshape(-1)


def _kernel_table(
    records: list[KernelRecord],
    cycles: CycleTable,
    strings: StringTable,
    api_ids: np.ndarray[tuple[int], np.dtype[np.int64]],
    api_starts: np.ndarray[tuple[int], np.dtype[np.int64]],
) -> tuple[KernelTable, int]:
    recs = sorted(records, key=lambda r: (r.start_ns, r.end_ns, r.correlation_id))
    start = _ints([r.start_ns for r in recs])
    corr = _ints([r.correlation_id for r in recs])
    launched, missing = launch_times(corr, start, api_ids, api_starts)
    table = KernelTable(
        name_id=_ints([strings.intern(r.name) for r in recs]),
        device=_ints([r.device for r in recs]),
        stream=_ints([r.stream for r in recs]),
        start_ns=start,
        end_ns=_ints([r.end_ns for r in recs]),
        cycle=assign_cycles(launched, cycles),
        correlation_id=corr,
        grid_x=_ints([r.grid[0] for r in recs]),
        grid_y=_ints([r.grid[1] for r in recs]),
        grid_z=_ints([r.grid[2] for r in recs]),
        block_x=_ints([r.block[0] for r in recs]),
        block_y=_ints([r.block[1] for r in recs]),
        block_z=_ints([r.block[2] for r in recs]),
    )
    return table, missing


def _transfer_table(
    records: list[TransferRecord],
    cycles: CycleTable,
    api_ids: np.ndarray[tuple[int], np.dtype[np.int64]],
    api_starts: np.ndarray[tuple[int], np.dtype[np.int64]],
) -> TransferTable:
    recs = sorted(records, key=lambda r: (r.start_ns, r.end_ns))
    start = _ints([r.start_ns for r in recs])
    launched, _ = launch_times(_ints([r.correlation_id for r in recs]), start, api_ids, api_starts)
    return TransferTable(
        kind=tuple(r.kind for r in recs),
        bytes=_ints([r.bytes for r in recs]),
        device=_ints([r.device for r in recs]),
        stream=_ints([r.stream for r in recs]),
        start_ns=start,
        end_ns=_ints([r.end_ns for r in recs]),
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
]
