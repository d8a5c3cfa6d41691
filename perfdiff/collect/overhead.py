"""Every run measures its own overhead: some measured cycles run with tracing switched off.

Why: a profiler's cost depends on the program (a launch-bound loop pays CUPTI's ~2 us per
launch, a GPU-bound one almost nothing), and this VM's host speed varies between processes,
so a figure from a benchmark elsewhere says little about *this* run. With one measured cycle
in ``every`` (default 8) left untraced, the run file holds the cycle time with and without
the collector, side by side in the same process (``perfdiff.analysis.self_overhead``).

How a cycle is left untraced: just before its start is stamped, CUPTI activity is switched
off (``cuptiActivityDisable`` per kind, ~24 us each on the H100, outside the cycle) and the
cycle issues no boundary marks; just after its end is stamped, activity is switched on
again. The cycle is flagged ``warmup`` and ``traced = 0`` in the run file, so no kernel
statistic sees it. Kernels launched near a switch: a kernel launched before the switch-off
(in the previous cycle, or between cycles) was enabled when launched and is recorded in
full, with its launch cycle; kernels launched while tracing is off are not recorded at all
(they would belong to the untraced cycle, which has none by design); launches after the
switch-on are recorded as usual. Samplers that can pause do so with it (the NVML poller skips
its polls: ``pause()``/``resume()``), so their cost is in the figure too; their series have no
samples there, which no statistic needs (an untraced cycle has no kernels). PM sampling cannot
pause: CUPTI 13.4 refuses to start PM sampling again once stopped (``cuptiPmSamplingStart``
answered ERROR_UNKNOWN on the H100, 2026-11-25), so it runs through untraced cycles and its
cost is not in the figure (the report says which samplers were paused: ``params``).
Untraced cycles come in runs of two (``RUN_LENGTH``; the last two of every ``every``): a
lead-in, then a timed one. Why: a cycle boundary is seldom where the program waits for the GPU
(an optimizer step is followed by ``loss.item()``), so a GPU-bound cycle's host time is the
wait for the previous step's GPU work plus this step's launches; after a traced cycle, whose
launches took longer on the host, that wait is shorter. Timed alone, the first untraced cycle
of timm ViT-S fp32 read 40 ms against 57 ms bare (H100, 2026-11-28). The lead-in absorbs it;
the timed one follows an untraced cycle, as every step of the bare program follows an
untraced one (``perfdiff.analysis.untraced_time`` times only cycles whose predecessor was
untraced too). Both are flagged untraced; neither holds kernels.
The benchmark workloads (``Workload.untraced_cycles = False``: rmsnorm, linalg) trace every
cycle: each is a sample of a case, and the in-situ cross-check pairs every one with events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfdiff.collect.cycles import CycleLog
from perfdiff.collect.records import RawTrace
from perfdiff.collect.settings import DEFAULT_UNTRACED_EVERY
from perfdiff.schema.model import CycleTable

RUN_LENGTH = 2  # untraced cycles in a row: a lead-in, then one timed (module docstring)


@dataclass
class UntracedCycles:
    """Leaves the last ``RUN_LENGTH`` of every ``every`` measured cycles untraced (0: none);
    hooks into a CycleLog."""

    every: int
    trace: Any  # a TraceBackend with pause() / resume()
    log: CycleLog
    # the samplers started so far (the caller's own list: samplers that start later count)
    samplers: list[Any] = field(default_factory=list)
    # False: leave the next cycle traced (another log's untraced cycle is open: found_cycles)
    allowed: Callable[[], bool] = lambda: True
    positions: list[int] = field(default_factory=list)  # log positions of untraced cycles
    errors: list[str] = field(default_factory=list)
    _measured: int = 0
    _paused: bool = False
    _left: int = 0  # untraced cycles still to come in this run, after the open one
    _go_on: bool = False  # the next cycle continues the run (tracing stays off)
    _mark: Any = None
    _paused_samplers: list[Any] = field(default_factory=list)
    _ever_paused: set[str] = field(default_factory=set)
    _switch_failed: bool = False  # tracing could not be switched: no more untraced cycles

    def __post_init__(self) -> None:
        usable = self.every >= 2 and callable(getattr(self.trace, "pause", None))
        if not usable:
            self.every = 0
            return
        before, after = self.log.on_cycle_begin, self.log.on_cycle_end

        def on_begin(warmup: bool) -> None:
            if before is not None:
                before(warmup)
            self.before_begin(warmup)

        def on_end(done: int) -> None:
            self.after_end()
            if after is not None:
                after(done)

        self.log.on_cycle_begin = on_begin
        self.log.on_cycle_end = on_end

    def before_begin(self, warmup: bool) -> None:
        if self._paused and not self._go_on:  # the previous cycle ended without completing
            self._resume()
        if self._go_on:  # the timed cycle after a lead-in: tracing stays off
            self._go_on = False
            if not warmup:
                self._measured += 1
            self.positions.append(len(self.log.starts))
            return
        if warmup or self._switch_failed or not self.allowed():
            return
        self._measured += 1
        run = self.run_length()
        if self._measured % self.every != (self.every - run + 1) % self.every:
            return
        try:
            self.trace.pause()
        except Exception as exc:  # a switch that fails stops the untraced cycles, not the run
            self.errors.append(f"switching tracing off failed ({type(exc).__name__}: {exc})")
            self._switch_failed = True
            return
        self._paused = True
        self._left = run - 1
        self._mark, self.log.mark = self.log.mark, None
        self.positions.append(len(self.log.starts))
        self._paused_samplers = []
        for sampler in self.samplers:
            if not callable(getattr(sampler, "pause", None)):
                continue
            try:
                sampler.pause()
            except Exception as exc:  # that sampler keeps running: its cost stays in the figure
                self._note_once(f"pausing {getattr(sampler, 'name', 'a sampler')} for an "
                                f"untraced cycle failed ({type(exc).__name__}: {exc}); it kept "
                                "sampling there")
                continue
            self._paused_samplers.append(sampler)
            self._ever_paused.add(str(getattr(sampler, "name", "sampler")))

    def run_length(self) -> int:
        """Untraced cycles in a row: a lead-in and a timed one, where ``every`` leaves room."""
        return RUN_LENGTH if self.every >= 2 * RUN_LENGTH else 1

    @property
    def paused(self) -> bool:
        """An untraced cycle of this log is open now."""
        return self._paused

    def after_end(self) -> None:
        """A cycle ended: tracing back on, unless the run of untraced cycles goes on."""
        if not self._paused:
            return
        if self._left > 0:
            self._left -= 1
            self._go_on = True
            return
        self._resume()

    def _resume(self) -> None:
        self._paused = False
        self._go_on = False
        self._left = 0
        self.log.mark = self._mark
        for sampler in self._paused_samplers:
            try:
                sampler.resume()
            except Exception as exc:
                self._note_once(f"resuming {getattr(sampler, 'name', 'a sampler')} after an "
                                f"untraced cycle failed ({type(exc).__name__}: {exc}); its "
                                "samples after it may be missing")
        self._paused_samplers = []
        try:
            self.trace.resume()
        except Exception as exc:
            self.errors.append(f"switching tracing on again failed ({type(exc).__name__}: "
                               f"{exc}); kernels after it are missing")
            self._switch_failed = True

    def _note_once(self, error: str) -> None:
        """A sampler's failure, once: it would recur at every untraced cycle."""
        if error not in self.errors:
            self.errors.append(error)

    def params(self) -> dict[str, Any]:
        """The run file's record of what the untraced cycles switched off (workload params
        ``untraced_pause``), so the report can say what its overhead figure covers; {} when
        no cycle was left untraced."""
        if not self.positions:
            return {}
        return {"untraced_pause": ["cupti_activity", *sorted(self._ever_paused)]}

    def apply(self, table: CycleTable) -> CycleTable:
        """``table`` with ``traced`` set (and untraced cycles flagged warm-up)."""
        if not self.every:
            return table
        kept = [i for i, ok in enumerate(self.log.completed_flags) if ok]
        untraced = set(self.positions)
        traced = np.asarray([0 if i in untraced else 1 for i in kept], dtype=np.int64)
        if traced.size != table.index.size:
            return table  # a table not cut from this log (fixed windows): nothing to mark
        warmup = np.asarray(table.warmup, dtype=np.bool_) | (traced == 0)
        return dataclasses.replace(table, traced=traced, warmup=warmup)


def intake_params(raw: RawTrace) -> dict[str, Any]:
    """The run file's record of the decoding done between cycles (workload params
    ``intake_between_cycles_ms``, CPU ms over the whole run), which no cycle's time holds:
    the report adds it to the overhead note (``analysis/self_overhead.py``); and the decode of
    the spooled buffers after the run (``intake_after_run_ms``). {} when neither."""
    out: dict[str, Any] = {}
    if raw.deferred_ns:
        out["intake_between_cycles_ms"] = round(raw.deferred_ns / 1e6, 3)
    if raw.after_run_ns:  # the spool's decode at stop (spool.py): after every cycle
        out["intake_after_run_ms"] = round(raw.after_run_ns / 1e6, 3)
    if raw.spool_write_ns:  # CUPTI's thread, interpreter lock released: no cycle's hold
        out["intake_spool_write_ms"] = round(raw.spool_write_ns / 1e6, 3)
    return out


def with_hold(table: CycleTable, handovers: list[tuple[int, int, int]]) -> CycleTable:
    """``table`` with ``hold_ns``: the collector's interpreter hold (buffer hand-overs,
    ``(start, start + hold, records)``) inside each cycle, clipped to the cycle."""
    n = table.index.size
    if n == 0:
        return table
    hold = np.zeros(n, dtype=np.int64)
    starts = np.asarray(table.start_ns, dtype=np.int64)
    ends = np.asarray(table.end_ns, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    for begin, end, _ in handovers:
        pos = int(np.searchsorted(starts[order], begin, side="right")) - 1
        for row in order[max(pos, 0):]:
            if starts[row] >= end:
                break
            overlap = min(end, ends[row]) - max(begin, starts[row])
            if overlap > 0:
                hold[row] += overlap
    return dataclasses.replace(table, hold_ns=hold)


__all__ = ["DEFAULT_UNTRACED_EVERY", "RUN_LENGTH", "UntracedCycles", "with_hold"]
