"""Cycle markers: how a program tells perfdiff where one iteration (cycle) begins and ends.

Why one mechanism for everyone: built-in workloads and user programs (``perfdiff collect --
python train.py``) mark cycles the same way, ``with perfdiff.cycle(label=..., warmup=...):``
around each iteration. Cycles that share a label form a *case* (e.g. one input shape of a
benchmark). When no collector is active the markers cost one attribute read and do nothing,
so user code can keep them in production.

This module imports nothing heavy (no torch, no CUPTI): the collector installs a recorder
with :func:`set_active_recorder`; everything else only talks to the :class:`CycleMarker`
protocol.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol


class CycleMarker(Protocol):
    """Anything that can open a cycle: the collector's recorder, or a no-op in tests."""

    def cycle(self, label: str = "", *, warmup: bool = False) -> AbstractContextManager[None]:
        """Context manager around one iteration; ``label`` groups cycles into cases."""
        ...


class CycleRecorder(Protocol):
    """What the collector installs: explicit begin/end, so that ``mark_cycle`` also works."""

    def begin_cycle(self, label: str, warmup: bool) -> None:
        """Start a cycle now (ends the open one first, if any)."""
        ...

    def end_cycle(self, *, completed: bool = True) -> None:
        """End the open cycle now; no-op when none is open. ``completed=False`` marks a
        cycle cut short by an exception or Ctrl-C: it is left out of the run file, since a
        partial iteration would distort every statistic of its case."""
        ...


class NullMarker:
    """A marker that records nothing (used when no collector is active, and in tests)."""

    def cycle(self, label: str = "", *, warmup: bool = False) -> AbstractContextManager[None]:
        return contextlib.nullcontext()


class RecorderMarker:
    """Adapts a :class:`CycleRecorder` to the :class:`CycleMarker` protocol."""

    def __init__(self, recorder: CycleRecorder) -> None:
        self._recorder = recorder

    @contextlib.contextmanager
    def cycle(self, label: str = "", *, warmup: bool = False) -> Iterator[None]:
        self._recorder.begin_cycle(label, warmup)
        _timer_started(label, warmup)
        try:
            yield
        except BaseException:
            # Cut short (exception or Ctrl-C): close it as not completed, then let the
            # exception reach the collector, which writes the partial run file.
            self._recorder.end_cycle(completed=False)
            raise
        self._recorder.end_cycle()


_active: CycleRecorder | None = None


def set_active_recorder(recorder: CycleRecorder | None) -> CycleRecorder | None:
    """Install (or remove, with None) the process-wide recorder; returns the previous one."""
    global _active
    previous = _active
    _active = recorder
    return previous


def active_marker() -> CycleMarker:
    """The marker for the current process: the collector's, or a no-op one."""
    recorder = _active
    return NullMarker() if recorder is None else RecorderMarker(recorder)


def cycle(label: str = "", *, warmup: bool = False) -> AbstractContextManager[None]:
    """``with perfdiff.cycle():`` around one iteration of a user program."""
    return active_marker().cycle(label, warmup=warmup)


def mark_cycle(label: str = "", *, warmup: bool = False) -> None:
    """Start a new cycle without a ``with`` block (ends the previous one): for loops whose
    body cannot be indented, e.g. a callback called once per training step."""
    recorder = _active
    if recorder is not None:
        recorder.begin_cycle(label, warmup)
        _timer_started(label, warmup)


def end_cycle() -> None:
    """End the cycle opened by :func:`mark_cycle` (the next ``mark_cycle`` also ends it)."""
    recorder = _active
    if recorder is not None:
        recorder.end_cycle()


def call_returned() -> None:
    """Inside a cycle that times one call: the call has just returned to Python.

    Call it before any ``torch.cuda.synchronize()`` that ends the cycle. The collector stamps
    the return and issues the cycle's end boundary mark here, where a CUDA end event would be
    recorded, so that ``perfdiff bench --measure call`` measures the window CUDA events
    around the call would. A no-op without a collector (or with a recorder that has no use
    for it).
    """
    # The in-situ cross-check's end event first, where a user's ``end.record()`` would be;
    # then the collector's return stamp (a clock read); the end mark last (a launch, which
    # reached the GPU 30-60 us after the return on the H100: after the event, it stays out
    # of both windows).
    timer = _call_timer
    if timer is not None and _active is not None:
        timer.call_returned()
    hook = getattr(_active, "call_returned", None)  # the collector: stamp, then end mark
    if hook is not None:
        hook()


class CallTimer(Protocol):
    """An opt-in observer of every cycle's call, beside the collector's recorder.

    Why: the in-situ cross-check (``bench/bench_crosscheck.py --in-situ``) records a CUDA
    event pair around the very calls perfdiff measures, in the same process and under the
    same tracing, so that the two measurements of one call can be compared cycle by cycle.
    Installed with :func:`set_call_timer`; nothing installs one in a normal collection.
    """

    def call_started(self, label: str, warmup: bool) -> None:
        """A cycle has just opened (after the collector stamped it and issued its start
        mark): the call is about to be made."""
        ...

    def call_returned(self) -> None:
        """The cycle's call has returned (before the collector issues its end mark)."""
        ...


class TimingEvent(Protocol):
    """What :class:`EventPairTimer` needs of an event (``torch.cuda.Event(enable_timing=True)``)."""

    def record(self) -> None: ...

    def elapsed_time(self, end_event: TimingEvent) -> float: ...


@dataclass
class TimedCall:
    """One cycle's event pair; ``returned`` False when the cycle made no
    :func:`call_returned` (its end event was made but never recorded)."""

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

    ``new_event`` makes one event (CUDA-only in practice; a fake on CPU in tests). The pairs
    stay in memory, one per cycle in cycle order (``calls``), not in the run file: they are
    the cross-check's reference, not something a run file's reader needs.
    """

    def __init__(self, new_event: Callable[[], TimingEvent]) -> None:
        self._new_event = new_event
        self.calls: list[TimedCall] = []

    def call_started(self, label: str, warmup: bool) -> None:
        # As a user times a call: both event objects made first, ``start.record()``, the
        # call, ``end.record()`` (torch creates each CUDA event at its first record, as in
        # user code and triton's do_bench). Measured on the H100, 2026-11-24
        # (docs/howto/benchmarks.md, "In-situ results"): an extra record of the end event
        # before the start shifted GPU-bound cases by ~1.3 us, and did not change when a
        # host-bound call's end event reached the GPU.
        start, end = self._new_event(), self._new_event()
        start.record()
        self.calls.append(TimedCall(label, warmup, start, end))

    def call_returned(self) -> None:
        calls = self.calls
        if calls and not calls[-1].returned:
            last = calls[-1]
            last.returned = True
            last.end.record()  # last: the collector's return stamp follows it at once


_call_timer: CallTimer | None = None


def set_call_timer(timer: CallTimer | None) -> CallTimer | None:
    """Install (or remove, with None) the process-wide call timer; returns the previous one.

    It is told about cycles opened through the active recorder only (none without a
    collector), right after the recorder, so its events follow the collector's marks.
    """
    global _call_timer
    previous = _call_timer
    _call_timer = timer
    return previous


def _timer_started(label: str, warmup: bool) -> None:
    timer = _call_timer
    if timer is not None:
        timer.call_started(label, warmup)


__all__ = [
    "CallTimer",
    "CycleMarker",
    "CycleRecorder",
    "EventPairTimer",
    "NullMarker",
    "RecorderMarker",
    "TimedCall",
    "TimingEvent",
    "active_marker",
    "call_returned",
    "cycle",
    "end_cycle",
    "mark_cycle",
    "set_active_recorder",
    "set_call_timer",
]
