"""Cycles found by themselves, for a user program given no marking option.

Why: a program nobody edited (HF ``Trainer``, Lightning, a ``generate`` loop) already says where
its iterations are, in what it calls. In order of preference:

1. **optimizer steps**: a program that steps ``torch.optim`` optimizers does so once per
   training iteration. torch's global step hooks (``register_optimizer_step_post_hook``) see
   every step of every optimizer without touching the program. A new cycle starts right after
   each step of the *first* optimizer that stepped (a GAN's second optimizer steps inside the
   same iteration), so a cycle is the data loading, forward, backward and step of one
   iteration. The time before the first step and after the last are not cycles.
2. **torch.profiler steps**: ``prof.step()`` ends one step and starts the next; ``profile.step``
   is wrapped to start a new cycle after each call.
3. **the program's outermost repeating Python call**, found while it runs by sampling its
   stack (found_function.py): each outermost call of it is one cycle, as with
   ``--cycle-function``, so some can be left untraced.
4. **the period of the launch sequence**, detected after the run
   (:func:`perfdiff.schema.periods.detect_period`), with a warning that says what was found
   and how to pin the cycles down.
5. Otherwise one warning and no cycles.

Each way records into its own :class:`CycleLog` (on the trace's clock, with the samplers'
start hook before each stamp, like explicit marks); :func:`choose_cycles` picks one at exit.
Labels name the way (``optimizer step``, ``profiler step``, ``detected period``; a found
function's calls are labelled as ``--cycle-function``'s, ``function MODULE:QUALNAME``), never a
count that differs between runs, so two runs cut the same way stay comparable (and two runs
that found different functions, or one found and one pinned to the same function, are told
apart or matched by the label, as the cycles they hold are).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import numpy as np

from perfdiff.collect.cycles.cycles import CycleLog, launch_times
from perfdiff.collect.cycles.import_hooks import when_imported
from perfdiff.collect.records import RawTrace
from perfdiff.schema.model import CycleTable
from perfdiff.schema.periods import Period, cycle_bounds_ns, detect_period

OPTIMIZER_LABEL = "optimizer step"
PROFILER_LABEL = "profiler step"
PERIOD_LABEL = "detected period"
MIN_FOUND_CYCLES = 2  # fewer steps than this is not a loop (a single fine-tuning step)


@dataclass
class FoundCycles:
    """Records optimizer steps and profiler steps as they happen, and the calls of the found
    function (found_function.py fills ``function_log``)."""

    clock_ns: Callable[[], int]
    before_cycle: Callable[[], None] = lambda: None
    # the first cycles of each log, flagged warm-up as they begin (as ``flag_warmup`` flags
    # them after the run), so that no untraced cycle or traced stretch is spent on them
    warmup: int = 0
    optimizer_log: CycleLog = field(init=False)
    profiler_log: CycleLog = field(init=False)
    function_log: CycleLog = field(init=False)
    function_name: str = ""  # MODULE:QUALNAME of the found function, once watched
    function_problem: str = ""  # why no function was found (for the period's warning)
    # functions found first and then left for the call around them (found_function.py)
    function_moved_from: list[str] = field(default_factory=list)
    # called once the function log's cycles were left out: its untraced switch restarts
    on_function_moved: Callable[[], None] | None = None
    stepped: bool = False  # an optimizer or profiler stepped: their cycles win
    optimizer_name: str = ""
    optimizers_seen: int = 0
    _first: Any = None  # weak reference to the first optimizer that stepped
    _seen_ids: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.optimizer_log = CycleLog(clock_ns=self.clock_ns)
        self.profiler_log = CycleLog(clock_ns=self.clock_ns)
        self.function_log = CycleLog(clock_ns=self.clock_ns)

    def logs(self) -> tuple[CycleLog, CycleLog, CycleLog]:
        """The three found logs, in the order a run's cycles are chosen from them
        (``chosen_log``)."""
        return (self.optimizer_log, self.profiler_log, self.function_log)

    def install(self) -> None:
        """Hook torch.optim and torch.profiler now, or as soon as the program imports them."""
        when_imported({"torch.optim.optimizer": self.hook_optimizers,
                       "torch.profiler.profiler": self.hook_profiler})

    def hook_optimizers(self, module: ModuleType) -> None:
        register = getattr(module, "register_optimizer_step_post_hook", None)
        if register is not None:
            register(self.after_optimizer_step)

    def hook_profiler(self, module: ModuleType) -> None:
        klass = getattr(module, "profile", None)
        step = getattr(klass, "step", None)
        if klass is None or step is None or getattr(step, "_perfdiff_wrapped", False):
            return
        found = self

        @functools.wraps(step)
        def stepped(*args: Any, **kwargs: Any) -> Any:
            result = step(*args, **kwargs)
            found.new_cycle(found.profiler_log, PROFILER_LABEL)
            return result

        stepped._perfdiff_wrapped = True  # type: ignore[attr-defined]
        klass.step = stepped

    def after_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """torch's global post-step hook: a new cycle after each step of the first optimizer."""
        with self._lock:
            ident = id(optimizer)
            if ident not in self._seen_ids:
                self._seen_ids.add(ident)
                self.optimizers_seen += 1
            first = self._first() if self._first is not None else None
            if first is None and self._first is None:
                try:
                    self._first = weakref.ref(optimizer)
                except TypeError:
                    self._first = lambda: optimizer
                self.optimizer_name = type(optimizer).__name__
                first = optimizer
            if first is not optimizer:
                return
        self.new_cycle(self.optimizer_log, OPTIMIZER_LABEL)

    def new_cycle(self, log: CycleLog, label: str) -> None:
        """End the open cycle of ``log`` and start the next (never raises into the program)."""
        if log is not self.function_log:
            self.stepped = True  # before ``before_cycle``: it lets the found function go
        try:
            self.before_cycle()
            # Why flagged now: the untraced schedule skips warm-up cycles; unflagged, its first
            # traced stretch (6 cycles) was spent on the 5 warm-ups, and a detached run of
            # timm ViT-S kept 2 traced cycles of 59 for its kernels (H100, 2026-12-07)
            log.begin_cycle(label, log.next_index < self.warmup)
        except Exception:
            return

    def move_function(self, spec: str) -> None:
        """The found function ``spec`` was not the program's loop (found_function.py): the
        cycles cut at its calls are left out, and the function log starts again, for the
        call around it. Never raises into the program."""
        try:
            self.function_log.leave_out_all()
        finally:
            self.function_moved_from.append(spec)
            self.function_name = ""
            if self.on_function_moved is not None:
                self.on_function_moved()

    def describe_optimizer(self) -> str:
        others = self.optimizers_seen - 1
        extra = f", the first of {self.optimizers_seen} optimizers stepped" if others else ""
        return f"optimizer step ({self.optimizer_name}{extra})"


@dataclass(frozen=True)
class Chosen:
    """The cycles a run gets, how they were cut (for ``workload.params``), and warnings."""

    table: CycleTable
    cycles_from: str
    warnings: tuple[str, ...] = ()
    period: Period | None = None
    log: CycleLog | None = None  # the log the table was cut from (None: detected after the run)


def chosen_log(found: FoundCycles) -> CycleLog | None:
    """The found log a run's cycles come from: optimizer steps, else profiler steps, else the
    found function's calls (each needs ``MIN_FOUND_CYCLES`` completed cycles), else None (the
    detected period). One rule for ``choose_cycles`` and for the marks that must know
    beforehand (found_marks.py)."""
    for log in found.logs():
        if log.table().index.size >= MIN_FOUND_CYCLES:
            return log
    return None


def choose_cycles(found: FoundCycles, raw: RawTrace, warmup: int, pid: int,
                  mark_gpu_ns: Mapping[int, list[int] | None] | None = None) -> Chosen:
    """Optimizer steps, else profiler steps, else the found function's calls, else the
    detected period, else no cycles.

    ``mark_gpu_ns``: id(log) -> the GPU start times of that log's boundary marks
    (found_marks.py), for the table's mark columns."""
    log = chosen_log(found)
    if log is not None:
        table = log.table((mark_gpu_ns or {}).get(id(log)))
        if log is found.function_log:
            return Chosen(flag_warmup(table, warmup), function_cycles_from(found.function_name),
                          (function_warning(found.function_name, pid,
                                            found.function_moved_from),), log=log)
        how = (found.describe_optimizer() if log is found.optimizer_log
               else "torch.profiler prof.step()")
        return Chosen(flag_warmup(table, warmup), how, log=log)
    period, table = period_cycles(raw)
    if period.found:
        how = ("; pin cycles with --cycle-function MODULE:QUALNAME (the function called once "
               "per iteration), --cycle-range NAME, or perfdiff.cycle()")
        unfound = (f" (no repeating Python call found while it ran: "
                   f"{found.function_problem})" if found.function_problem else "")
        warning = (f"pid {pid} marked no cycles and stepped no optimizer: cycles are the "
                   f"{period.describe()}{unfound}{how}")
        return Chosen(flag_warmup(table, warmup),
                      f"detected period of {period.period_launches} launches",
                      (warning,), period)
    warning = (f"pid {pid} marked no cycles: no optimizer step, no prof.step() and "
               f"{period.describe()}; wrap each iteration in perfdiff.cycle(), or pass "
               "--cycle-function MODULE:QUALNAME, --cycle-range NAME or --cycle-ms MS")
    return Chosen(table, "none", (warning,), period)


def function_cycles_from(spec: str) -> str:
    """The run file's ``cycles_from`` for found-function cycles (names the way and the
    function, never a count)."""
    return f"function {spec} (found by sampling the Python stack)"


def function_warning(spec: str, pid: int, moved_from: Sequence[str] = ()) -> str:
    """What the run says about cycles cut at a found function, how it got there (found first
    inside a long first call of it, then moved up), and how to pin it."""
    moved = "".join(f"; {old} was found first, inside the first call of {spec}, and its "
                    "cycles were left out when that call returned" for old in moved_from)
    return (f"cycles: each call of {spec} (found by sampling the Python stack of pid {pid}"
            f"{moved}); pin it with --cycle-function {spec}")


def flag_warmup(table: CycleTable, warmup: int) -> CycleTable:
    """The first ``warmup`` cycles flagged warm-up (found cycles have no flags of their own)."""
    return replace(table, warmup=table.index < warmup)


def launch_sequence(raw: RawTrace) -> tuple[np.ndarray, np.ndarray]:
    """(name id, launch time) of every kernel in launch order; ids are local to this call."""
    cols = raw.as_columns()  # columnar (raw intake) and tuple records alike
    ids: dict[str, int] = {}
    key_ids = {key: ids.setdefault(name, len(ids)) for key, name in cols.names.items()}
    names = np.asarray([key_ids.get(k, -1) for k in cols.kernels["name_key"].tolist()],
                       dtype=np.int64)
    corr = cols.kernels["correlation_id"].astype(np.int64)
    start = cols.kernels["start"].astype(np.int64)
    api_ids = cols.api["correlation_id"].astype(np.int64)
    api_starts = cols.api["start"].astype(np.int64)
    times, _ = launch_times(corr, start, api_ids, api_starts)
    order = np.lexsort((corr, times))
    return names[order], times[order]


def period_cycles(raw: RawTrace) -> tuple[Period, CycleTable]:
    """The detected period of the run's kernel launches as a cycle table (empty if none)."""
    names, times = launch_sequence(raw)
    period = detect_period(names, times)
    starts, ends = cycle_bounds_ns(period, times)
    # two launches stamped at the same instant at a boundary would make an empty cycle
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    n = int(starts.size)
    table = CycleTable(index=np.arange(n, dtype=np.int64), start_ns=starts, end_ns=ends,
                       label=(PERIOD_LABEL,) * n, warmup=np.zeros(n, dtype=np.bool_))
    return period, table


__all__ = ["MIN_FOUND_CYCLES", "OPTIMIZER_LABEL", "PERIOD_LABEL",
           "PROFILER_LABEL", "Chosen", "FoundCycles", "choose_cycles", "chosen_log",
           "flag_warmup", "function_cycles_from", "function_warning", "launch_sequence",
           "period_cycles"]
