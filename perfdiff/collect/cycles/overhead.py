"""Every run measures its own overhead: some measured cycles run with tracing switched off.

Why: a profiler's cost depends on the program (a launch-bound loop pays CUPTI's ~2 us per
launch, a GPU-bound one almost nothing), and this VM's host speed varies between processes,
so a figure from a benchmark elsewhere says little about *this* run. With some measured cycles
left untraced, the run file holds the cycle time with and without the collector, side by side
in the same process (``perfdiff.analysis.self_overhead``).

How a cycle is left untraced: just before its start is stamped, CUPTI activity is switched off
(``cuptiActivityDisable`` per kind, ~24 us each on the H100, outside the cycle) and the cycle
issues no boundary marks; once its run of untraced cycles is over, activity is switched on
again just before the next cycle's start is stamped (not at the untraced cycle's end, which
with NVTX ranges is still inside the program's step: ``after_end``). The cycle is flagged
``warmup`` and ``traced = 0`` in the run file, so no kernel statistic sees it.
Kernels launched near a switch: a kernel launched before the switch-off
(in the previous cycle, or between cycles) was enabled when launched and is recorded in
full, with its launch cycle; kernels launched while tracing is off are not recorded at all
(they would belong to the untraced cycle, which has none by design); launches after the
switch-on are recorded as usual. Samplers that can pause do so with it (the NVML poller skips
its polls: ``pause()``/``resume()``), so their cost is in the figure too; their series have no
samples there, which no statistic needs (an untraced cycle has no kernels). PM sampling cannot
pause: CUPTI 13.4 refuses to start PM sampling again once stopped (``cuptiPmSamplingStart``
answered ERROR_UNKNOWN on the H100, 2026-11-25), so it runs through untraced cycles and its
cost is not in the figure (the report says which samplers were paused: ``params``).
Untraced cycles come in runs of at least two (``RUN_LENGTH``; the default schedule's at least
four, ``COST_RUN_LENGTH`` says why): a lead-in, then timed ones.
Why: a cycle boundary is seldom where the program waits for the GPU (an optimizer step is
followed by ``loss.item()``), so a GPU-bound cycle's host time is the wait for the previous
step's GPU work plus this step's launches; after a traced cycle, whose launches took longer on
the host, that wait is shorter. Timed alone, the first untraced cycle of timm ViT-S fp32 read
40 ms against 57 ms bare (H100, 2026-11-28). The lead-in absorbs it; each timed one follows an
untraced cycle, as every step of the bare program follows an untraced one
(``perfdiff.analysis.untraced_time`` times only cycles whose predecessor was untraced too).
All are flagged untraced; none holds kernels. How many traced cycles come between the runs,
and how long each run is, is the schedule's choice (``untraced_schedule.py``): by default the
share of traced cycles that keeps the whole run within the cost target, from the durations of
this process's own traced and timed untraced cycles and of its switches, which this class
times and reports to it; ``--untraced-every N`` the last two of every N, whatever it costs.
The benchmark workloads (``Workload.untraced_cycles = False``: rmsnorm, linalg) trace every
cycle: each is a sample of a case, and the in-situ cross-check pairs every one with events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.untraced_schedule import RUN_LENGTH, Schedule, make_schedule
from perfdiff.collect.records import RawTrace
from perfdiff.collect.settings import DEFAULT_COST_TARGET, DEFAULT_UNTRACED_EVERY
from perfdiff.schema.model import CycleTable


@dataclass
class UntracedCycles:
    """Leaves measured cycles untraced as its schedule says (``untraced_schedule.py``):
    ``every`` None, the share that meets ``cost_target``; N >= 2, the last ``RUN_LENGTH`` of
    every N; 0, none. Hooks into a CycleLog."""

    every: int | None
    trace: Any  # a TraceBackend with pause() / resume()
    log: CycleLog
    # the samplers started so far (the caller's own list: samplers that start later count)
    samplers: list[Any] = field(default_factory=list)
    # False: leave the next cycle traced (another log's untraced cycle is open: found_cycles)
    allowed: Callable[[], bool] = lambda: True
    cost_target: float = DEFAULT_COST_TARGET
    # why every cycle is traced where ``every`` is 0 (the run file says it): the launcher
    # knows; "" for the option itself
    off_reason: str = ""
    lockstep: bool = False  # one rank of a job whose ranks step together (make_schedule)
    # whether the log's other hooks have nothing to do now (the recorder's: every sampler
    # started), so that the untraced cycles of a run may take the log's express lane
    express_ok: Callable[[], bool] = lambda: False
    positions: list[int] = field(default_factory=list)  # log positions of untraced cycles
    errors: list[str] = field(default_factory=list)
    schedule: Schedule | None = None
    _measured: int = 0  # measured cycles the schedule was asked about
    _run: int = 0  # untraced measured cycles in a row, up to the open one
    _stretch: int = 0  # traced measured cycles in a row, up to the open one
    _paused: bool = False
    _next: bool | None = None  # the next measured cycle's mode, asked when an untraced one ended
    _asked: bool = False  # the open cycle's mode came from the schedule (it is told its time)
    _timed: bool = False  # the open cycle is untraced after an untraced one
    _off_ns: int = 0  # what switching tracing off took, until it is switched on again
    _mark: Any = None
    _paused_samplers: list[Any] = field(default_factory=list)
    _ever_paused: set[str] = field(default_factory=set)
    _switch_failed: bool = False  # tracing could not be switched: no more untraced cycles
    # measured cycles left traced unasked because a sampler was decoding at their start (the
    # run file says how many: a GPT-2 generate run whose PM decode ran at nearly every boundary
    # had 1 of 10 measured cycles asked, and its report blamed the run's length)
    _kept_busy: int = 0
    # the trace detaches CUPTI in its pause (``detaches_cupti``, fixed for the run): samplers
    # are then paused and waited for, else held (``_samplers_busy``, ``_pause_samplers``)
    _detaches: bool = False
    # a detached run's end at the latest (trace clock, ns): when the paused samplers' buffers
    # would fill (``pause_limit_ns``); None: no sampler bounds it
    _deadline: int | None = None
    # untraced runs ended early so that a paused sampler's buffer would not overflow
    _ended_for_samplers: int = 0

    def __post_init__(self) -> None:
        self._detaches = bool(getattr(self.trace, "detaches_cupti", False))
        usable = callable(getattr(self.trace, "pause", None))
        self.schedule = (make_schedule(self.every, self.cost_target, self.lockstep)
                         if usable else None)
        if self.every != 0 and not usable:
            self.off_reason = "the tracing backend cannot switch off"
        self.off_reason = self.off_reason or "--untraced-every 0"
        if self.schedule is None:
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
        if self.log.express_begun:
            self._catch_up()
        # tracing back on: the run of untraced cycles is over (or its cycle ended incomplete)
        if self._paused and self._next is not True:
            self._resume()
        decided, self._next = self._next, None
        self._asked = False
        if decided is None:
            if warmup or self._switch_failed or not self.allowed() or self.schedule is None:
                return
            if self._samplers_busy():
                self._kept_busy += 1
                return
            decided = self._ask()
        self._asked = not warmup
        if not decided:
            self._run, self._stretch, self._timed = 0, self._stretch + 1, False
            return
        self._timed = self._paused  # an untraced cycle after an untraced one
        if self._paused:
            self.positions.append(len(self.log.starts))
        elif not self._pause():
            self._run, self._stretch = 0, self._stretch + 1
            return
        self._run, self._stretch = self._run + 1, 0

    def _ask(self) -> bool:
        """The schedule's answer for the next measured cycle (asked once per cycle)."""
        assert self.schedule is not None
        self._measured += 1
        return self.schedule.untraced(self._measured, self._run, self._stretch)

    def _pause(self) -> bool:
        """The samplers, then tracing, off before an untraced run; False if it failed.

        Samplers first: a sampler's thread stamps its samples on the trace's clock, and a
        trace that detaches CUPTI (``cupti/detached.py``) must not have another thread
        calling into CUPTI while it does (pytorch/kineto#686 crashed so)."""
        began = self.log.clock_ns()
        self._pause_samplers()
        try:
            self.trace.pause()
        except Exception as exc:  # a switch that fails stops the untraced cycles, not the run
            self.errors.append(f"switching tracing off failed ({type(exc).__name__}: {exc})")
            self._switch_failed = True
            self._resume_samplers()
            return False
        self._paused = True
        self._mark, self.log.mark = self.log.mark, None
        self.positions.append(len(self.log.starts))
        self._off_ns = self.log.clock_ns() - began
        self._deadline = self._samplers_deadline(began)
        return True

    def _samplers_deadline(self, began: int) -> int | None:
        """Where the trace detaches CUPTI, the samplers are paused, not held, and a paused PM
        sampler decodes nothing until tracing is back: the run must end before its hardware
        buffer fills (``PmSampler.pause_limit_ns``). Why: a GPT-2 ``generate`` run of ~20
        cycles of 330 ms held PM's decode for ~6.6 s, past the ~6.4 s the buffer holds at
        40 us, and 213,000 samples were lost (H100, 2026-12-07). Attached, a held sampler
        decodes by itself near that limit (``PmSampler.hold``): no deadline."""
        if not self._detaches:
            return None
        limits = []
        for sampler in self._paused_samplers:
            limit = getattr(sampler, "pause_limit_ns", None)
            if callable(limit):
                try:
                    value = limit()
                except Exception:  # a sampler that cannot say bounds nothing
                    continue
                if value is not None:
                    limits.append(int(value))
        return began + min(limits) if limits else None

    def _last_ns(self) -> int:
        """The last cycle's length: what the next untraced one is expected to take."""
        return self.log.ends[-1] - self.log.starts[-1]

    def _run_ends_for_samplers(self) -> bool:
        """The next untraced cycle, as long as the last one, would end past the deadline: the
        run ends here (counted), so that the samplers decode before their buffer fills."""
        if self._deadline is None or not self.log.ends:
            return False
        if self.log.clock_ns() + self._last_ns() <= self._deadline:
            return False
        self._ended_for_samplers += 1
        return True

    def _samplers_busy(self) -> bool:
        """A sampler is inside work it cannot drop (PM's decode) and the trace detaches CUPTI
        in untraced runs: the cycle stays traced and the schedule is asked again at the next
        one, since no thread may call into CUPTI while it finalizes (``_pause``). A trace that
        stays attached does not wait: the decode runs on in its own thread, with the
        interpreter released (bench/README.md, "PM decode and NVML": 0 gaps above 1 ms in the
        program's thread), and no new one starts until tracing is back (``_pause_samplers``).
        Why not wait there too: on a GPT-2 ``generate`` run the decode ran at most
        boundaries, and 20 cycles had no untraced one at all (H100, 2026-12-07)."""
        if not self._detaches:
            return False
        for sampler in self.samplers:
            busy = getattr(sampler, "busy", None)
            if callable(busy) and busy():
                return True
        return False

    def _pause_samplers(self) -> None:
        self._paused_samplers = []
        for sampler in self.samplers:
            if not callable(getattr(sampler, "pause", None)):
                continue
            try:
                # ``hold``: the same pause without waiting for work under way (_samplers_busy)
                (sampler.pause if self._detaches else getattr(sampler, "hold", sampler.pause))()
            except Exception as exc:  # that sampler keeps running: its cost stays in the figure
                self._note_once(f"pausing {getattr(sampler, 'name', 'a sampler')} for an "
                                f"untraced cycle failed ({type(exc).__name__}: {exc}); it kept "
                                "sampling there")
                continue
            self._paused_samplers.append(sampler)
            self._ever_paused.add(str(getattr(sampler, "paused_as", None)
                                      or getattr(sampler, "name", "sampler")))

    def release(self) -> None:
        """This log's cycles are no longer the run's (a found function's, once an optimizer or
        profiler steps: found_cycles.py): tracing back on now if it is off for this log, and
        no untraced cycle from it again, so that the winning log's cycles are traced as their
        own schedule says. An open cycle of this log is then partly traced: never chosen."""
        self._catch_up()
        self._next = None
        self.allowed = lambda: False
        if self._paused:
            self._resume()

    def restart(self) -> None:
        """The log's cycles so far were dropped (a found function moved up to the call around
        it: found_function.py): tracing back on if it is off, and a fresh schedule, so that
        neither the budget nor the medians of the dropped cycles (a different call, a
        different length) decide the new ones."""
        self._catch_up()
        if self._paused:
            self._resume()
        self.schedule = (make_schedule(self.every, self.cost_target, self.lockstep)
                         if self.schedule is not None else None)
        self._measured = self._run = self._stretch = 0
        self._next = None
        self._asked = self._timed = False

    @property
    def paused(self) -> bool:
        """An untraced cycle of this log is open now."""
        return self._paused

    def after_end(self) -> None:
        """A cycle ended: its time to the schedule, and, after an untraced one, the next
        measured cycle's mode. Tracing goes back on just before that cycle's start is stamped
        (``before_begin``), not here: with NVTX ranges, ``--cycle-function`` or
        ``perfdiff.cycle()`` the end of a cycle is still inside the program's step, whose own
        timer would then hold the switch (CUPTI's ~260 call ids enabled again) in the step of
        a timed cycle, the one set against it. Found cycles end where the next begins: the
        same either way. Kernels the program launches between the two are not recorded; they
        lie outside every cycle."""
        if self._asked and self.schedule is not None and self.log.ends:
            duration = self.log.ends[-1] - self.log.starts[-1]
            self.schedule.observe(duration, untraced=self._paused, timed=self._timed)
        self._asked = False
        if self._paused:
            if self._run_ends_for_samplers():
                self._next = False
                return
            self._next = self._ask()
            if self._next and self.express_ok():
                self._grant_express()

    def _grant_express(self) -> None:
        """The next cycle is untraced, as is every one the schedule is sure of after it: they
        take the log's express lane (``CycleLog.express``), no hook between the program's
        range and the stamps, and their bookkeeping is caught up at the next hook
        (``_catch_up``) in the order it would have had."""
        assert self.schedule is not None
        lane = 1 + self.schedule.sure_untraced(self._measured + 1, self._run + 1)
        if self._deadline is not None and self.log.ends:
            # no further than the deadline: the lane has no hook to end the run at it
            lane = min(lane, max(1, (self._deadline - self.log.clock_ns())
                                 // max(self._last_ns(), 1)))
        self.log.express = lane

    def _catch_up(self) -> None:
        """What ``before_begin`` and ``after_end`` would have done for the cycles of the
        express lane, in order: each one untraced and timed, its time to the schedule and the
        next one's mode asked. The asks answer as the grant was sure they would; the last one
        is the mode of the cycle about to begin. A lane cycle still open ends through the
        hooks (``after_end``)."""
        log, schedule = self.log, self.schedule
        begun = log.leave_express()
        first = len(log.starts) - begun
        for i in range(first, first + begun):
            self._next, self._asked, self._timed = None, True, True
            self.positions.append(i)
            self._run, self._stretch = self._run + 1, 0
            if i >= len(log.ends) or not log.completed_flags[i]:
                continue  # still open, or cut short: the next begin switches tracing on
            if schedule is not None:
                schedule.observe(log.ends[i] - log.starts[i], untraced=True, timed=True)
            self._asked = False
            self._next = self._ask()
        if begun and self._next and self._paused and self._run_ends_for_samplers():
            self._next = False  # the lane stopped at the deadline (_grant_express)

    def _resume(self) -> None:
        """Tracing, then the samplers, on again (the reverse of ``_pause``)."""
        began = self.log.clock_ns()
        self._paused = False
        self._deadline = None
        self.log.mark = self._mark
        try:
            self.trace.resume()
        except Exception as exc:
            self.errors.append(f"switching tracing on again failed ({type(exc).__name__}: "
                               f"{exc}); kernels after it are missing")
            self._switch_failed = True
        self._resume_samplers()
        if self.schedule is not None:
            self.schedule.observe_switch(self._off_ns + self.log.clock_ns() - began)

    def _resume_samplers(self) -> None:
        for sampler in self._paused_samplers:
            try:
                sampler.resume()
            except Exception as exc:
                self._note_once(f"resuming {getattr(sampler, 'name', 'a sampler')} after an "
                                f"untraced cycle failed ({type(exc).__name__}: {exc}); its "
                                "samples after it may be missing")
        self._paused_samplers = []

    def _note_once(self, error: str) -> None:
        """A sampler's failure, once: it would recur at every untraced cycle."""
        if error not in self.errors:
            self.errors.append(error)

    def params(self) -> dict[str, Any]:
        """The run file's record of the split (workload params ``untraced_schedule``: how it
        was chosen and what it measured, or why every cycle was traced) and of what the
        untraced cycles switched off (``untraced_pause``), so that the report can say what
        the collector cost this run, or why it cannot; {} for a log that saw no measured
        cycle, asked or kept traced during a decode (cycles found after the run come from no
        log)."""
        self._catch_up()
        if self.schedule is None:
            return {"untraced_schedule": {"chosen_by": f"off: {self.off_reason}"}}
        schedule = self.schedule.params()
        if self._kept_busy:
            schedule["traced_while_sampler_busy"] = self._kept_busy
        elif not schedule.get("measured_cycles"):
            return {}
        if self._ended_for_samplers:
            schedule["runs_ended_for_sampler_buffers"] = self._ended_for_samplers
        if not self.positions:
            return {"untraced_schedule": schedule}
        # a trace that detached CUPTI in them (--detach-untraced: cupti/detached.py) says so
        detached = ["cupti_detached"] if getattr(self.trace, "detaches", 0) else []
        return {"untraced_pause": ["cupti_activity", *detached, *sorted(self._ever_paused)],
                "untraced_schedule": schedule}

    def apply(self, table: CycleTable) -> CycleTable:
        """``table`` with ``traced`` set (and untraced cycles flagged warm-up)."""
        self._catch_up()
        if self.schedule is None:
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
