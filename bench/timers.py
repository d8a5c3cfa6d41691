"""CUDA event pairs around the very calls a collection measures (the in-situ cross-check).

Why here and not in ``perfdiff.markers``: only the cross-check (``bench/bench_crosscheck.py
--in-situ``) times calls this way; the product needs no hook for it. The timer rides on the
public recorder API instead: :class:`TimedWorkload` wraps a workload so that, while it runs, the
collector's recorder is wrapped by a :class:`TimedRecorder` that tells the timer where each
cycle's call starts and returns, in the order the old in-product hook did (the start event
after the collector's start mark; the end event before the collector's return stamp and end
mark).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from perfdiff.markers import CycleRecorder, RecorderMarker, set_active_recorder


class CallTimer(Protocol):
    """An observer of every cycle's call, beside the collector's recorder."""

    def call_started(self, label: str, warmup: bool) -> None:
        """A cycle has just opened (after the collector's start mark): the call follows."""
        ...

    def call_returned(self) -> None:
        """The cycle's call has returned (before the collector stamps it and marks the end)."""
        ...


class TimingEvent(Protocol):
    """What :class:`EventPairTimer` needs of an event (``torch.cuda.Event(enable_timing=True)``)."""

    def record(self) -> None: ...

    def elapsed_time(self, end_event: TimingEvent) -> float: ...


@dataclass
class TimedCall:
    """One cycle's event pair; ``returned`` False when the cycle made no
    ``perfdiff.markers.call_returned()`` (its end event was made but never recorded)."""

    label: str
    warmup: bool
    start: TimingEvent
    end: TimingEvent
    returned: bool = False

    def elapsed_ms(self) -> float:
        """Start to end in ms (NaN without a return); the GPU must have passed the end event."""
        return float(self.start.elapsed_time(self.end)) if self.returned else math.nan


class EventPairTimer:
    """A :class:`CallTimer` that records an event at each call's start and return.

    ``new_event`` makes one event (CUDA in practice; a fake on CPU in tests). The pairs stay in
    memory, one per cycle in cycle order (``calls``), not in the run file.
    """

    def __init__(self, new_event: Callable[[], TimingEvent]) -> None:
        self._new_event = new_event
        self.calls: list[TimedCall] = []

    def call_started(self, label: str, warmup: bool) -> None:
        # As a user times a call: both event objects made first, ``start.record()``, the
        # call, ``end.record()``. Measured on the H100, 2026-11-24 (bench/README.md, in-situ):
        # an extra record of the end event before the start shifted GPU-bound cases by ~1.3 us.
        start, end = self._new_event(), self._new_event()
        start.record()
        self.calls.append(TimedCall(label, warmup, start, end))

    def call_returned(self) -> None:
        calls = self.calls
        if calls and not calls[-1].returned:
            last = calls[-1]
            last.returned = True
            last.end.record()  # last: the collector's return stamp follows it at once


class TimedRecorder:
    """A :class:`perfdiff.markers.CycleRecorder` that tells a timer about each call."""

    def __init__(self, inner: CycleRecorder, timer: CallTimer) -> None:
        self._inner = inner
        self._timer = timer

    def begin_cycle(self, label: str, warmup: bool) -> None:
        self._inner.begin_cycle(label, warmup)
        self._timer.call_started(label, warmup)

    def end_cycle(self, *, completed: bool = True) -> None:
        self._inner.end_cycle(completed=completed)

    def call_returned(self) -> None:
        # the end event first, where a user's ``end.record()`` would be; then the collector's
        # stamp and end mark (its issue cost then lies in neither window)
        self._timer.call_returned()
        hook = getattr(self._inner, "call_returned", None)
        if hook is not None:
            hook()


class TimedWorkload:
    """A workload whose cycles are also timed by ``timer`` while a collector records them.

    Everything but :meth:`run` is the wrapped workload's. Without an active recorder (no
    collector) nothing is timed, as before.
    """

    def __init__(self, workload: Any, timer: CallTimer) -> None:
        self._workload = workload
        self._timer = timer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._workload, name)

    def run(self, marker: Any, plan: Any) -> None:
        inner = set_active_recorder(None)
        if inner is None:
            self._workload.run(marker, plan)
            return
        timed = TimedRecorder(inner, self._timer)
        set_active_recorder(timed)
        try:
            self._workload.run(RecorderMarker(timed), plan)
        finally:
            set_active_recorder(inner)
