"""The one run-file builder: a stopped recording -> a :class:`RunFile` of one run.

Why one: built-in workloads (``session.py``) and user programs (``inject/child.py``) each
had their own copy of this assembly, and they drifted (issue 28): the noisy-neighbour stream
exclusion and the missing-demangler warning existed in one only, the two listed their
sources and PM metrics differently, and their warnings came in different orders. Each
launcher now gathers what only it knows (its cycles, its status, its workload description)
and hands it here; every check and warning about the records themselves is made here, once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfdiff import __version__
from perfdiff.collect.cupti.demangle import demangler_available
from perfdiff.collect.cupti.handovers import handover_warning
from perfdiff.collect.cupti.pm_sampling import pm_coverage_warnings
from perfdiff.collect.cupti.stream_overlap import clip_early_starts, drop_overlapping
from perfdiff.collect.cycles.overhead import UntracedCycles, intake_params, with_hold
from perfdiff.collect.records import RawTrace, StringTable, build_tables, unfinished_warning
from perfdiff.schema.model import (
    Collection,
    CycleTable,
    Environment,
    MetricSeries,
    Run,
    RunFile,
    Status,
    Workload,
)
from perfdiff.schema.versions import CURRENT_VERSION


@dataclass(frozen=True)
class Recording:
    """What a launcher recorded: the trace's records, its cycles (before the untraced switch
    and the hold column are applied here) and the samplers' series. ``trace_name`` None: no
    trace ever ran (a process that left no shard, seen from the parent)."""

    raw: RawTrace
    cycles: CycleTable
    metrics: Sequence[MetricSeries]
    trace_name: str | None
    untraced: UntracedCycles | None = None


@dataclass(frozen=True)
class RunIdentity:
    """Who recorded: the run's index in its file, its torchrun rank and exit code, and its
    process (None: this one; the parent names a child that left no shard)."""

    index: int = 0
    rank: int | None = None
    exit_code: int | None = None
    pid: int | None = None


def build_run_file(
    recording: Recording,
    *,
    environment: Environment,
    workload: Workload,
    status: Status,
    warnings: list[str],
    sample_interval_ns: int,
    identity: RunIdentity | None = None,
    exclude_streams: tuple[int, ...] = (),
) -> RunFile:
    """The run file of ``recording``; ``warnings`` (the launcher's so far) is extended with
    what the records say, and the file carries them once each, in order."""
    raw = recording.raw
    cycles = recording.cycles
    untraced = recording.untraced
    if untraced is not None:
        cycles = untraced.apply(cycles)
    cycles = with_hold(cycles, raw.handovers)
    if exclude_streams:
        _drop_neighbour_kernels(raw, exclude_streams, warnings)
    strings = StringTable()
    tables = build_tables(raw, cycles, strings)
    tables, early = clip_early_starts(tables)
    if early is not None:
        warnings.append(early)
    tables, cycles, overlap = drop_overlapping(tables, cycles)
    if overlap is not None:
        warnings.append(overlap)
    warnings.extend(_record_warnings(raw, strings, tables.kernels_without_launch_record))
    unfinished = unfinished_warning(tables.unfinished)
    if unfinished is not None:
        warnings.append(unfinished)
    metrics = tuple(recording.metrics)
    warnings.extend(pm_coverage_warnings(list(metrics), cycles))
    handover = handover_warning(raw.handovers, cycles)
    if handover is not None:
        warnings.append(handover)
    who = identity or RunIdentity()
    run = Run(
        index=who.index, pid=os.getpid() if who.pid is None else who.pid, rank=who.rank,
        exit_code=who.exit_code,
        cycles=cycles, kernels=tables.kernels, memcpy=tables.memcpy, memset=tables.memset,
        metrics=metrics, dropped_records=raw.dropped_records,
    )
    params: dict[str, Any] = {**workload.params,
                              **(untraced.params() if untraced is not None else {}),
                              **intake_params(raw)}
    return RunFile(
        schema_version=CURRENT_VERSION,
        tool_version=__version__,
        status=status,
        environment=environment,
        collection=Collection(
            metrics=tuple(dict.fromkeys(m.name for m in metrics if m.source == "pm_sampling")),
            sample_interval_ns=sample_interval_ns,
            sources=_sources(recording.trace_name, metrics),
            warnings=tuple(dict.fromkeys(warnings)),
        ),
        workload=Workload(name=workload.name, params=params, command=workload.command),
        strings=tuple(strings.names),
        runs=(run,),
        created_unix_s=round(time.time(), 3),
    )


def empty_recording() -> Recording:
    """A recording with nothing in it: what is known of a process that left no shard."""
    empty = np.zeros(0, dtype=np.int64)
    cycles = CycleTable(index=empty, start_ns=empty, end_ns=empty, label=(),
                        warmup=np.zeros(0, dtype=np.bool_))
    return Recording(raw=RawTrace(), cycles=cycles, metrics=(), trace_name=None)


def _sources(trace_name: str | None, metrics: tuple[MetricSeries, ...]) -> tuple[str, ...]:
    """The trace, then the samplers that delivered series, sorted: the order they started in
    is no property of the run."""
    traced = () if trace_name is None else (trace_name,)
    return (*traced, *sorted({m.source for m in metrics}))


def _record_warnings(raw: RawTrace, strings: StringTable, without_launch: int) -> list[str]:
    """What the records themselves say was missing or lost."""
    out = []
    if without_launch:
        out.append(f"{without_launch} kernels had no launch API record; they were assigned "
                   "to cycles by GPU start time")
    if raw.dropped_records:
        out.append(f"CUPTI dropped {raw.dropped_records} activity records")
    if strings.names and not demangler_available():
        out.append("no C++ demangler (libstdc++) found; kernel names kept mangled")
    return out


def _drop_neighbour_kernels(raw: RawTrace, streams: tuple[int, ...],
                            warnings: list[str]) -> None:
    """Leave out an in-process neighbour's kernels (``--contend-mode stream``), and say so."""
    dropped = raw.drop_streams(set(streams), memset=False)
    ids = ", ".join(str(s) for s in streams)
    warnings.append(f"{dropped} kernels of the --contend neighbour (CUPTI stream {ids}) were "
                    "left out of the run file")


__all__ = ["Recording", "RunIdentity", "build_run_file", "empty_recording"]
