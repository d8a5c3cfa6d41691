"""Cycles found by themselves, cut by boundary marks, so CUPTI's launch API records can stop.

Why: a program given no marking option had CUPTI's RUNTIME and DRIVER activity kinds on for
its whole run, because cycles found by themselves (optimizer steps, ``prof.step()``) had no
boundary marks and kernels needed their launch API records to find their cycle. With those two
kinds on, every CUDA API call passes through CUPTI's recording path, and PyTorch makes several
per kernel. One timm ViT-S bf16 process switched between CUPTI states (H200, 2026-11-28,
``bench/record_truth/cost_probe.py``, median step): 22.2 ms before CUPTI; 40.7 ms traced with
the API kinds; 32.7 ms with the kernel kind alone; 35.6 ms in perfdiff's untraced state (API
kinds on, their call ids off); 31.2 ms with every kind off. Between processes the Python side
alone (the fake backend: hooks, cycle logs, untraced switch) stepped as fast as bare.

So each found log issues boundary marks like explicit cycles (``program_marks.py``), on a
stream of its own, and once one of them has begun ``MIN_FOUND_CYCLES`` cycles (it will be the
run's cycles) the API kinds are switched off for the rest of the run; at exit that log's marks
become every kernel's launch record (``launch_records_from_marks``). A program that never
steps keeps the API records all the way: the detected period needs launch times. So does one
that also marks its own cycles (``perfdiff.cycle()``), and one whose marks failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfdiff.collect.cycles.found_cycles import MIN_FOUND_CYCLES, FoundCycles, chosen_log
from perfdiff.collect.cycles.program_marks import launches_from_marks
from perfdiff.collect.records import RawTrace


class FoundMarks:
    """Boundary marks on the found logs, and the switch that stops launch API records."""

    # the run file's workload parameter ``launch_records`` once switched: how kernels found
    # their cycle, for whoever reads the file
    PARAM = "boundary marks (CUPTI's launch API records off after the first found cycles)"

    def __init__(self, found: FoundCycles, trace: Any, warnings: list[str]) -> None:
        self.found = found
        self.trace = trace  # a TraceBackend; ``stop_api_records()`` where it has one
        self.warnings = warnings
        self.streams: dict[int, tuple[int, ...]] = {}  # id(log) -> its marks' stream ids
        self.switched = False  # the API kinds were switched off
        self.tried = False  # attach() was called (the GPU was known)

    def attach(self, make_marker: Callable[[], Any]) -> None:
        """One marker (``.mark()``, ``.stream_ids``) per found log, from now on; a marker
        that cannot be made leaves that log unmarked (its launch records stay CUPTI's), and so
        does a log that has begun cycles already (its first ones would have no marks)."""
        self.tried = True
        for log in self.found.logs():
            if id(log) in self.streams or log.starts:
                continue
            try:
                marker = make_marker()
            except Exception as exc:
                self.warnings.append(f"cycle boundary marks unavailable for found cycles "
                                     f"({type(exc).__name__}: {exc}); launch API records kept")
                return
            log.mark = marker.mark
            self.streams[id(log)] = tuple(marker.stream_ids)

    def before_cycle(self, explicit_cycles: int) -> None:
        """Before a found cycle's start is stamped: switch the API kinds off once a marked log
        has begun ``MIN_FOUND_CYCLES`` cycles with every mark issued, and the program marks
        no cycles of its own (``explicit_cycles``: how many it began). Never raises."""
        if self.switched or explicit_cycles:
            return
        ready = any(id(log) in self.streams and log.mark_error is None and log.mark is not None
                    and len(log.starts) >= MIN_FOUND_CYCLES for log in self.found.logs())
        stop = getattr(self.trace, "stop_api_records", None)
        if not ready or stop is None:
            return
        try:
            self.switched = bool(stop())
        except Exception as exc:
            self.warnings.append(f"launch API records could not be switched off "
                                 f"({type(exc).__name__}: {exc}); they stay on")

    def launches(self, raw: RawTrace) -> dict[int, list[int] | None]:
        """Take every found log's marks out of ``raw`` (id(log) -> their GPU start times, or
        None); after the switch the chosen log's marks replace the launch records."""
        chosen = chosen_log(self.found)
        out: dict[int, list[int] | None] = {}
        for log in self.found.logs():
            ids = self.streams.get(id(log))
            if ids is None:
                continue
            out[id(log)] = launches_from_marks(raw, ids, log, self.warnings,
                                               replace=self.switched and log is chosen)
        return out


__all__ = ["FoundMarks"]
