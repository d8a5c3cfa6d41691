"""Cycle boundaries on the correlation-id axis: launch records without API tracing.

Why: a kernel belongs to the cycle it was *launched* in (see ``cycles.py``). CUPTI's launch
API records (runtime + driver) tell when each launch happened, but recording them cost about
2 % of gpt-infer's cycle time on the H100 (bench/README.md, "perfdiff-noapi"), most of
perfdiff's overhead. Every CUPTI record carries a ``correlation_id`` that CUPTI takes from one
process-wide counter at each API call, so ids grow in launch order. If at every cycle
boundary we launch one tiny GPU operation of our own on a private stream, its record's id
splits the id axis at that boundary: a kernel whose id lies between the marks issued at the
start and at the end of cycle k was launched inside cycle k. Two marks per cycle replace one
API record per launch.

The marks are 1-byte fills on a private non-blocking stream (no ordering with the workload's
streams), recognised afterwards by that stream's CUPTI id and removed from the run file; their
GPU start times stay, as the cycle columns ``mark_start_ns`` / ``mark_end_ns`` (schema 1.1).
:func:`launch_records_from_marks` turns them back into the launch records that
``records.build_tables`` already understands, so cycle assignment is unchanged. If the marks
cannot be matched (a mark failed, records were dropped), the session says so and falls back
to GPU start times.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perfdiff.collect.records import ApiRecord, RawTrace


class TorchBoundaryMarker:  # pragma: no cover - GPU only
    """Issues the marks: ``mark()`` launches a 1-byte fill on a private CUDA stream."""

    def __init__(self, torch: Any, device_index: int) -> None:
        self._torch = torch
        self._stream = torch.cuda.Stream(device=torch.device("cuda", device_index))
        self._flag = torch.zeros(1, dtype=torch.uint8, device=torch.device("cuda", device_index))
        self.stream_ids = cupti_stream_ids(int(self._stream.cuda_stream))
        if not self.stream_ids:
            raise RuntimeError("CUPTI has no id for the boundary-mark stream")

    def mark(self) -> None:
        with self._torch.cuda.stream(self._stream):
            self._flag.fill_(1)


def cupti_stream_ids(handle: int) -> tuple[int, ...]:  # pragma: no cover - GPU only
    """CUPTI's id of a CUDA stream, as kernel and memset records carry it (() if unknown)."""
    try:
        from cupti import cupti
    except ImportError:
        return ()
    try:
        return (int(cupti.get_stream_id_ex(0, handle, 0)),)
    except Exception:
        return ()


def take_marks(raw: RawTrace, stream_ids: Sequence[int]) -> tuple[list[int], list[int]]:
    """Remove the marks' own records from ``raw``; return (correlation ids, GPU start times),
    both in launch order (sorted by correlation id).

    Why the GPU times are kept: a mark runs as soon as it is issued (its stream is idle), so
    its GPU start is when the host issued it, on the GPU's clock: the end mark of a timed
    call is the GPU-side twin of a CUDA end event (``perfdiff bench --measure call``), and
    the marks together show whether CUPTI's timestamps count nanoseconds (clock_check.py).
    """
    streams = set(stream_ids)
    cols = raw.as_columns()
    ids = np.asarray(sorted(streams), dtype=np.uint32)
    marks = [table[np.isin(table["stream"], ids)] for table in (cols.kernels, cols.memset)]
    corr = np.concatenate([m["correlation_id"].astype(np.int64) for m in marks])
    start = np.concatenate([m["start"].astype(np.int64) for m in marks])
    raw.drop_streams(streams)
    order = np.lexsort((start, corr))
    return corr[order].tolist(), start[order].tolist()


def take_mark_records(raw: RawTrace, stream_ids: Sequence[int]) -> list[int]:
    """Remove the marks' own records from ``raw``; return their correlation ids, sorted."""
    return take_marks(raw, stream_ids)[0]


def launch_records_from_marks(
    record_ids: Sequence[int], mark_ids: Sequence[int], mark_ns: Sequence[int]
) -> list[ApiRecord]:
    """A launch record per id: the host time of the last mark issued before that launch.

    ``mark_ids[i]`` is the correlation id of the i-th mark and ``mark_ns[i]`` the host time
    it stands for (a cycle's start for the mark issued just after the start was stamped, a
    cycle's end for the one issued just before the end was stamped). A launch between a
    cycle's start mark and its end mark so gets that cycle's start time (inside the cycle); a
    launch between cycles gets the previous end time (outside every cycle); one before the
    first mark gets a time before the first cycle. Ids of 0 (no correlation) get no record.
    """
    ids, stamped = launch_columns_from_marks(np.asarray(record_ids, dtype=np.int64), mark_ids,
                                             mark_ns)
    return [ApiRecord(int(i), int(t)) for i, t in zip(ids, stamped, strict=True)]


def launch_columns_from_marks(
    ids: np.ndarray[tuple[int], np.dtype[np.int64]], mark_ids: Sequence[int],
    mark_ns: Sequence[int],
) -> tuple[np.ndarray[tuple[int], np.dtype[np.int64]],
           np.ndarray[tuple[int], np.dtype[np.int64]]]:
    """:func:`launch_records_from_marks` as two columns (correlation ids, launch times)."""
    if len(mark_ids) != len(mark_ns):
        raise ValueError(f"{len(mark_ids)} mark records for {len(mark_ns)} marks")
    empty = np.zeros(0, dtype=np.int64)
    if ids.size == 0 or not mark_ids:
        return empty, empty
    marks = np.asarray(mark_ids, dtype=np.int64)
    times = np.asarray(mark_ns, dtype=np.int64)
    if np.any(np.diff(marks) <= 0) or np.any(np.diff(times) < 0):
        raise ValueError("marks are not in launch order")
    ids = ids[ids != 0]
    pos = np.searchsorted(marks, ids, side="right") - 1
    stamped = np.where(pos >= 0, times[np.clip(pos, 0, None)], times[0] - 1)
    return ids, stamped.astype(np.int64)


def attach_launch_records(raw: RawTrace, mark_ids: list[int], mark_ns: list[int]) -> str | None:
    """Give ``raw`` launch records derived from the marks; a warning if they do not match."""
    if len(mark_ids) != len(mark_ns):
        return (f"cycle boundary marks: {len(mark_ns)} issued but {len(mark_ids)} recorded; "
                "kernels were assigned to cycles by GPU start time")
    cols = raw.as_columns()
    ids = np.concatenate([t["correlation_id"].astype(np.int64)
                          for t in (cols.kernels, cols.memcpy, cols.memset)])
    try:
        corr, start = launch_columns_from_marks(ids, mark_ids, mark_ns)
    except ValueError as exc:
        return f"cycle boundary marks unusable ({exc}); kernels assigned by GPU start time"
    raw.set_launch_records(corr, start)
    return None


__all__ = ["TorchBoundaryMarker", "attach_launch_records", "cupti_stream_ids",
           "launch_records_from_marks", "take_mark_records", "take_marks"]
