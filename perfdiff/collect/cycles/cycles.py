"""Cycle boundaries on the host, and assigning each kernel to the cycle it was launched in.

Why by launch time: kernels run asynchronously, so a kernel launched in cycle 7 may still run
after the host has entered cycle 8. Its *launch* — the runtime/driver API call that CUPTI
records with the same ``correlation_id`` as the kernel — happens on the host inside cycle 7.
So a kernel belongs to the cycle whose host interval ``[start, end)`` holds the start of its
launch API call. Where no launch record exists (API tracing unavailable, or a kernel launched
by a library through a path CUPTI does not report), the kernel's own GPU start time is used
instead and the collector records a warning.

Both the cycle boundaries and the API records are on CUPTI's timestamp clock
(``cupti.get_timestamp()``), so no clock conversion is needed here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from perfdiff.schema.model import CycleTable, IntArray


@dataclass
class CycleLog:
    """The collector's :class:`perfdiff.markers.CycleRecorder`: appends cycle boundaries.

    ``clock_ns`` is the tracing backend's clock; ``on_cycle_end`` is called after each cycle
    (the progress display hooks in there, outside the measured interval).

    Boundary marks (boundary_marks.py), in this exact order per cycle:

    1. ``begin_cycle``: the start is stamped, then the start mark is issued;
    2. the workload's body runs; a workload that times a call (rmsnorm, linalg) calls
       :meth:`call_returned` (``perfdiff.markers.call_returned()``) as soon as the call has
       returned to Python, *before* its ``torch.cuda.synchronize()``: the return is stamped
       (``returns``, the run file's ``return_ns``) and the end mark is issued there, where a
       CUDA end event would be recorded;
    3. ``end_cycle``: the end mark is issued now unless step 2 issued it (so after whatever
       the body did last, a synchronize included), then the end is stamped.

    Either way the end mark *stands for* the cycle's end stamp (``mark_ns``), so a launch
    after it counts as outside the cycle: with step 2 that is a launch made between the call's
    return and the cycle's end (the workloads make none there). A failing mark stops marking
    (the session then falls back to GPU start times), it never stops the workload.
    """

    clock_ns: Callable[[], int]
    on_cycle_end: Callable[[int], None] | None = None
    on_cycle_begin: Callable[[bool], None] | None = None  # (warmup), before the timestamp
    mark: Callable[[], None] | None = None
    # host time at which each issued mark was issued, on a clock known to count nanoseconds
    # (perf_counter, not CUPTI's: see clock_check.py for why)
    wall_ns: Callable[[], int] = field(default=lambda: time.perf_counter_ns())
    mark_ns: list[int] = field(default_factory=list)  # the time each issued mark stands for
    # per issued mark: (position of its cycle in ``starts``, True for an end mark)
    mark_slots: list[tuple[int, bool]] = field(default_factory=list)
    mark_wall_ns: list[int] = field(default_factory=list)
    mark_error: str | None = None
    # position in ``starts`` -> when that cycle's timed call returned (cycles without one: absent)
    returns: dict[int, int] = field(default_factory=dict)
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    warmups: list[bool] = field(default_factory=list)
    completed_flags: list[bool] = field(default_factory=list)
    # cycles that ended normally, counted as they end: summing the flags at every boundary
    # cost O(cycles) each time (a 20,000-step NVTX run: ~30 us a boundary, growing)
    _completed: int = 0
    _open: bool = False
    _end_marked: bool = False
    # the next cycles that may begin and end in the express lane: stamped and appended, no
    # hook, no mark. Granted by whoever owns the hooks and knows they have nothing to do in
    # them (overhead.UntracedCycles, inside a run of untraced cycles), which catches up on
    # the ``express_begun`` cycles' bookkeeping at its next hook. Why: with
    # NVTX ranges every call between the program's push and the start stamp, and between the
    # end stamp and its pop, is time its own step timer holds and no cycle does: ~9 us a step
    # on a 0.24 ms CUDA-graph replay read 3-6 % (H100, 2026-12-07; bench/nvtx_boundary)
    express: int = 0
    express_begun: int = 0
    _express_open: bool = False

    def begin_cycle(self, label: str, warmup: bool, at: int | None = None) -> None:
        """``at``: the start as the caller stamped it, on ``clock_ns``, before its own
        bookkeeping (an NVTX push: nvtx_cycles.py); used in the express lane only, where no
        hook has to run before the stamp. Elsewhere the start is stamped after the hooks."""
        if self.express and not (warmup or self._open) and self.mark is None:
            self.express -= 1
            self.express_begun += 1
            # a stamp read before another thread's boundary took the lock is not used
            if at is None or (self.ends and at < self.ends[-1]):
                at = self.clock_ns()
            self.starts.append(at)
            self.labels.append(label)
            self.warmups.append(False)
            self._open = self._express_open = True
            return
        if self._open:
            self.end_cycle()
        if self.on_cycle_begin is not None:
            self.on_cycle_begin(warmup)
        # the stamp first, the bookkeeping after it: inside the cycle, not in the program's
        # step before it (an NVTX range's push: bench/nvtx_boundary)
        self.starts.append(self.clock_ns())
        self.labels.append(label)
        self.warmups.append(warmup)
        self._open = True
        self._end_marked = False
        if self._mark(is_end=False):
            self.mark_ns.append(self.starts[-1])

    def leave_express(self) -> int:
        """The lane closed: how many cycles began in it since the last call (the last that
        many of ``starts``). A cycle of it still open ends through the hooks, as any other."""
        begun, self.express_begun, self.express = self.express_begun, 0, 0
        self._express_open = False
        return begun

    def call_returned(self) -> None:
        """The timed call has returned: stamp it on the trace's clock, then issue the cycle's
        end mark (each once per cycle). The stamp first, before any bookkeeping: a clock read
        costs under a microsecond, the mark's launch about 30 us of host time (H100), and on a
        slow host every Python step between the return and its stamp lengthens the call."""
        slot = len(self.starts) - 1
        if not self._open or slot in self.returns:
            return
        self.returns[slot] = self.clock_ns()
        if not self._end_marked:
            self._end_marked = self._mark(is_end=True)

    def end_cycle(self, *, completed: bool = True) -> None:
        if self._express_open:
            # the bookkeeping before the stamp, so that after it there is only the append:
            # whatever follows the end stamp is in the program's step and in no cycle
            self._open = self._express_open = False
            self.completed_flags.append(completed)
            self._completed += completed
            if not completed:
                self.express = 0  # the lane's owner decides again at its next hook
            self.ends.append(self.clock_ns())
            return
        if not self._open:
            return
        issued = self._end_marked or self._mark(is_end=True)
        self.ends.append(self.clock_ns())
        if issued:
            self.mark_ns.append(self.ends[-1])
        self.completed_flags.append(completed)
        self._completed += completed
        self._open = False
        self._end_marked = False
        if completed and self.on_cycle_end is not None:
            self.on_cycle_end(self._completed)

    def _mark(self, *, is_end: bool) -> bool:
        if self.mark is None or self.mark_error is not None:
            return False
        try:
            self.mark()
        except Exception as exc:
            self.mark_error = f"{type(exc).__name__}: {exc}"
            return False
        self.mark_wall_ns.append(self.wall_ns())
        self.mark_slots.append((len(self.starts) - 1, is_end))
        return True

    def leave_out_all(self) -> None:
        """End the open cycle (cut short) and leave every cycle so far out of the table, as
        cut short: they were cut at the wrong call (found_function.py moved up). Their marks
        stay issued and matched (``mark_slots``), so the marks of later cycles still line up."""
        self.end_cycle(completed=False)
        self.completed_flags = [False] * len(self.completed_flags)
        self._completed = 0

    def close_open(self) -> None:
        """End a cycle left open, as cut short, without issuing a mark: tracing has stopped
        by now, so a mark would never be recorded and the marks would stop matching."""
        if self._open:
            mark, self.mark = self.mark, None
            try:
                self.end_cycle(completed=False)
            finally:
                self.mark = mark

    @property
    def completed(self) -> int:
        """Number of cycles that ended normally."""
        return self._completed

    @property
    def next_index(self) -> int:
        """The table index of the next cycle begun, if it and the one open now complete: the
        position warm-up flags count by (``flag_warmup``)."""
        return self._completed + self._open

    def table(self, mark_gpu_ns: Sequence[int] | None = None) -> CycleTable:
        """The cycles that ended normally, renumbered 0..n-1.

        A cycle still open (an interrupt outside the marker) or cut short is left out: its
        kernels get cycle -1 ("outside any cycle") instead of distorting its case.
        ``mark_gpu_ns``: the GPU start time of each issued mark, in issue order (from the
        marks' own records); it fills ``mark_start_ns`` / ``mark_end_ns`` (-1 where a cycle
        has no such mark). None, or a count that does not match the marks issued: no columns.
        """
        self.close_open()
        keep = [i for i, ok in enumerate(self.completed_flags) if ok]
        mark_start = mark_end = None
        if mark_gpu_ns is not None and len(mark_gpu_ns) == len(self.mark_slots):
            gpu_start = np.full(len(self.starts), -1, dtype=np.int64)
            gpu_end = np.full(len(self.starts), -1, dtype=np.int64)
            for (cycle, is_end), t in zip(self.mark_slots, mark_gpu_ns, strict=True):
                (gpu_end if is_end else gpu_start)[cycle] = int(t)
            mark_start, mark_end = gpu_start[keep], gpu_end[keep]
        returns = np.asarray([self.returns.get(i, -1) for i in keep], dtype=np.int64)
        return CycleTable(
            index=np.arange(len(keep), dtype=np.int64),
            start_ns=np.asarray([self.starts[i] for i in keep], dtype=np.int64),
            end_ns=np.asarray([self.ends[i] for i in keep], dtype=np.int64),
            label=tuple(self.labels[i] for i in keep),
            warmup=np.asarray([self.warmups[i] for i in keep], dtype=np.bool_),
            mark_start_ns=mark_start,
            mark_end_ns=mark_end,
            return_ns=returns if (returns >= 0).any() else None,
        )


def assign_cycles(timestamps_ns: IntArray, cycles: CycleTable) -> IntArray:
    """Cycle index whose ``[start, end)`` holds each timestamp, or -1 when none does.

    Cycles never overlap (a new one ends the previous), so a binary search on the starts
    finds the only candidate; O((n + m) log m).
    """
    ts = np.asarray(timestamps_ns, dtype=np.int64)
    if cycles.start_ns.size == 0 or ts.size == 0:
        return np.full(ts.shape, -1, dtype=np.int64)
    order = np.argsort(cycles.start_ns, kind="stable")
    starts = cycles.start_ns[order]
    ends = cycles.end_ns[order]
    pos = np.searchsorted(starts, ts, side="right") - 1
    valid = pos >= 0
    clipped = np.clip(pos, 0, None)
    inside = valid & (ts < ends[clipped])
    result: IntArray = np.where(inside, cycles.index[order][clipped], -1).astype(np.int64)
    return result


def launch_times(
    correlation_ids: IntArray,
    fallback_ns: IntArray,
    api_correlation_ids: IntArray,
    api_start_ns: IntArray,
) -> tuple[IntArray, int]:
    """Launch time of each record: its API call's start, else ``fallback_ns`` (GPU start).

    Returns the times and how many records had to use the fallback (for the warning).
    """
    corr = np.asarray(correlation_ids, dtype=np.int64)
    out = np.asarray(fallback_ns, dtype=np.int64).copy()
    if corr.size == 0:
        return out, 0
    if api_correlation_ids.size == 0:
        return out, int(corr.size)
    order = np.argsort(api_correlation_ids, kind="stable")
    sorted_ids = api_correlation_ids[order]
    sorted_starts = api_start_ns[order]
    pos = np.searchsorted(sorted_ids, corr)
    clipped = np.clip(pos, 0, sorted_ids.size - 1)
    found = (pos < sorted_ids.size) & (sorted_ids[clipped] == corr) & (corr != 0)
    out[found] = sorted_starts[clipped[found]]
    return out, int((~found).sum())


__all__ = ["CycleLog", "assign_cycles", "launch_times"]
