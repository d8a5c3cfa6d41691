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
from collections.abc import Iterator
from contextlib import AbstractContextManager
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
    # The collector's return stamp (a clock read), then its end mark (a launch, which reached
    # the GPU 30-60 us after the return on the H100).
    hook = getattr(_active, "call_returned", None)  # the collector: stamp, then end mark
    if hook is not None:
        hook()


__all__ = [
    "CycleMarker",
    "CycleRecorder",
    "NullMarker",
    "RecorderMarker",
    "active_marker",
    "call_returned",
    "cycle",
    "end_cycle",
    "mark_cycle",
    "set_active_recorder",
]
