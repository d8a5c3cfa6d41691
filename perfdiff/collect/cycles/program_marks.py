"""Cycle boundary marks instead of launch records, for both launchers: a user program
(``perfdiff collect -- CMD``) and a built-in workload (``session.py``), which had its own copy
of :func:`launches_from_marks`.

Why: assigning kernels to cycles needs each kernel's launch time. Launch API records give it
but double the records CUPTI writes and interleave them with the kernels, so a buffer no
longer decodes as one run (``decode.py``: ~1.6 us per launch instead of ~20 ns); the
built-in workloads replaced them by two tiny marks per cycle (``boundary_marks.py``). A user
program gets the same once torch has initialised CUDA (the marks are torch fills): from
then on every cycle begin and end issues a mark. Kernels launched before the first mark lie
before the first marked cycle. With ``--cycle-range`` / ``--cycle-function`` no launch API
records are recorded (``inject/child.py``: ``open_trace``; the recorder core, ``recorder.py``,
attaches the marker); ``--cycle-ms`` windows and cycles
found by themselves (no marking option) have no marks to go by and keep CUPTI's launch
records, which then win over the marks.
"""

from __future__ import annotations

from perfdiff.collect.cupti.clock_check import clock_rate_warning
from perfdiff.collect.cycles.boundary_marks import attach_launch_records, take_marks
from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.records import RawTrace


def launches_from_marks(raw: RawTrace, stream_ids: tuple[int, ...] | None, log: CycleLog,
                        warnings: list[str], *, replace: bool = False) -> list[int] | None:
    """Launch records from the marks (removed from ``raw``); the marks' GPU start times in
    issue order when every issued mark was recorded, else None (and a warning). Where CUPTI
    recorded launch API records (cycles found by themselves need them: found_cycles.py),
    those are kept and the marks only give the cycle table's mark columns, unless ``replace``:
    CUPTI's records stopped part-way (found_marks.py), so the marks replace them."""
    if stream_ids is None:
        return None
    has_launch_records = not replace and (
        bool(raw.api) or (raw.columns is not None and raw.columns.api.size > 0))
    mark_ids, mark_gpu_ns = take_marks(raw, stream_ids)
    if not log.mark_ns:
        return None  # no cycle of this log was marked (cycles found otherwise, or none)
    if log.mark_error is not None:
        if not has_launch_records:
            warnings.append(f"a cycle boundary mark failed ({log.mark_error}); kernels were "
                            "assigned to cycles by GPU start time")
        return None
    if len(mark_ids) != len(log.mark_ns):
        if not has_launch_records:
            warnings.append(f"cycle boundary marks: {len(log.mark_ns)} issued but "
                            f"{len(mark_ids)} recorded; kernels were assigned to cycles by GPU "
                            "start time")
        return None
    if not has_launch_records:  # launch records recorded by CUPTI are kept where there are
        problem = attach_launch_records(raw, mark_ids, log.mark_ns)
        if problem is not None:
            warnings.append(problem)
            return None
    if len(log.mark_wall_ns) == len(mark_gpu_ns):
        clock = clock_rate_warning(log.mark_wall_ns, mark_gpu_ns)
        if clock is not None:
            warnings.append(clock)
    return mark_gpu_ns


__all__ = ["launches_from_marks"]
