"""The collector inside the user's process: started by ``boot/sitecustomize.py``.

Lifecycle: :func:`activate` decides whether this process records (see :func:`should_record`),
arranges for activity tracing to start when the program initialises CUDA (before its first
kernel, and not earlier: CUPTI started before CUDA refuses PM sampling, deferred_trace.py),
installs the cycle recorder behind ``perfdiff.cycle()`` / ``mark_cycle()`` and, with
``--cycle-range``, the NVTX wrappers. The recording itself (cycle log, marks, samplers,
untraced cycles, the run file) is the recorder core's (``recorder.py``), shared with built-in
workloads; this module is the launcher around it. PM sampling and NVML need to know the
program's GPU, which is only known once the program has initialised CUDA
(:func:`program_gpu`), so the core starts NVML (and the cycle marks) at the first cycle mark
after that, PM sampling at the first measured cycle's mark (after the warm-up), each before
that cycle's start is stamped, so their set-up cost falls outside it.

Samplers stop at the earliest point of the interpreter's exit: a ``threading`` exit hook, which
runs before *every* ``atexit`` handler (torch's, and the weakref hook that frees cupti-python's
PM sampling object). atexit is last-in first-out and the collector starts before the program
imports anything, so an ``atexit`` handler of ours would run after all of those; stopping PM
sampling that late used a freed object and crashed the child (SIGSEGV) at exit. They stop on
the main thread, after a GPU synchronize, with the PM drain thread joined; any failure there
is a warning (values dropped), never an exception into the program's exit.

At exit (normal exit, ``sys.exit``, an uncaught exception, Ctrl-C, or SIGTERM) the shard is
written once, atomically, into the parent's shard folder: a complete run file of one run,
marked incomplete when the program raised or was terminated. A process killed outright
(SIGKILL, a segfault) writes nothing; the parent then records that run as empty and
incomplete.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from perfdiff.collect.backends import MetricSampler, TraceBackend
from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.found_marks import FoundMarks
from perfdiff.collect.cycles.overhead import UntracedCycles
from perfdiff.collect.inject.config import CONFIG_ENV, OWNER_ENV, InjectConfig, shard_name
from perfdiff.collect.recorder import Gpu, Recorder
from perfdiff.collect.records import RawTrace
from perfdiff.collect.run_file_builder import RunIdentity
from perfdiff.collect.sampler_life import one_line
from perfdiff.markers import set_active_recorder
from perfdiff.schema.model import CycleTable, Environment, RunFile, Status, Workload

_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch")
# why the samplers never started: they start at a cycle mark once torch has initialised CUDA
NO_TORCH_CUDA = ("they start once PyTorch has initialised CUDA in the program, and this program "
                 "never did (CUDA used without torch, e.g. through Triton, CuPy or a C "
                 "extension); import torch and touch CUDA (torch.cuda.init()) before the first "
                 "cycle to have them; kernels are traced")
NO_LIVE_CYCLE = ("they start at the first cycle cut while the program runs, and none was (its "
                 "cycles were found after it ended: the detected period); pin cycles with "
                 "--cycle-function MODULE:QUALNAME, --cycle-range NAME or perfdiff.cycle() to "
                 "have them; kernels are traced")
WINDOWS_UNSAMPLED = ("they start at a cycle mark, and --cycle-ms windows are cut after the "
                     "run; mark cycles (--cycle-range, --cycle-function, perfdiff.cycle()) to "
                     "have them; kernels are traced")


def should_record(environ: dict[str, str] | os._Environ[str], argv: list[str]) -> bool:
    """Whether this process records: not a torchrun launcher, and no recording ancestor.

    A torchrun launcher only starts workers (which record, one shard per rank); children of a
    recording process (DataLoader workers, compile workers) inherit ``OWNER_ENV`` and skip, so
    one program role yields one shard.
    """
    if environ.get(OWNER_ENV):
        return False
    joined = " ".join(argv[:4])
    return not any(name in joined for name in _LAUNCHERS)


def _env_int(name: str) -> int | None:
    text = os.environ.get(name, "")
    return int(text) if text.strip().lstrip("-").isdigit() else None


class _Recorder:
    """The process's :class:`perfdiff.markers.CycleRecorder`: flags the first ``warmup``
    cycles (the core's log starts the samplers before a cycle is stamped)."""

    def __init__(self, log: CycleLog, warmup: int) -> None:
        self.log = log
        self.warmup = warmup
        self.begun = 0
        self.lock = threading.Lock()

    def begin_cycle(self, label: str, warmup: bool, at: int | None = None) -> None:
        with self.lock:
            self.log.begin_cycle(label, warmup or self.begun < self.warmup, at)
            self.begun += 1

    def end_cycle(self, *, completed: bool = True) -> None:
        with self.lock:
            self.log.end_cycle(completed=completed)


def program_gpu() -> Gpu | None:
    """The program's GPU once it has initialised CUDA through torch, else None (asked again
    before the next cycle). Never initialises CUDA itself."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    return Gpu(torch, int(torch.cuda.current_device()))


class ChildCollector:
    """One process's recording, from interpreter start to exit: the user-program launcher
    over the recorder core (``recorder.py``), which holds the trace, cycle log, marks,
    samplers and warnings."""

    def __init__(self, config: InjectConfig, trace: TraceBackend) -> None:
        self.config = config
        self.trace = trace
        self.rank = _env_int("RANK")
        # --cycle-ms windows are cut after the run: no untraced cycles, no boundary marks, and
        # no cycle mark to start the samplers at unless the program marks its own
        windows = bool(config.cycle_ms)
        self.core = Recorder(
            config, trace, untraced_every=0 if windows else config.untraced_every,
            untraced_off="fixed windows (--cycle-ms)" if windows else "",
            lockstep=(_env_int("WORLD_SIZE") or 1) > 1,
            find_gpu=program_gpu if config.traces_cupti else None,
            marks=not windows, on_sampler_start=self._finish_last,
            no_gpu_why=NO_TORCH_CUDA,
            no_cycle_why=WINDOWS_UNSAMPLED if windows else NO_LIVE_CYCLE)
        self.log = self.core.log
        self.recorder = _Recorder(self.log, config.warmup)
        self.failure: str | None = None
        self.exit_code: int | None = None
        self.nvtx: Any = None
        self.anchor: Any = None  # --cycle-function (anchor_function.AnchorFunction)
        self.found: Any = None  # no marking option: found_cycles.FoundCycles
        self.found_marks: FoundMarks | None = None  # their boundary marks (found_marks.py)
        self.found_function: Any = None  # and the repeating call (found_function.py)
        # untraced cycles of the log the run's cycles come from (marks, or a found log)
        self.applied_untraced = self.core.untraced
        self.found_untraced: dict[int, UntracedCycles] = {}  # id(found log) -> its own
        self.cycles_from: str | None = None  # how cycles were cut, when found at exit
        self.found_params: dict[str, Any] = {}  # what else the found way records
        self._finished = False
        self._previous_excepthook = sys.excepthook

    @property
    def warnings(self) -> list[str]:
        return self.core.warnings

    @property
    def samplers(self) -> list[MetricSampler]:
        """The samplers started so far."""
        return self.core.started

    # ---------------------------------------------------------------- start

    def start(self) -> None:
        self.trace.start()
        set_active_recorder(self.recorder)
        if self.config.cycle_range:
            from perfdiff.collect.cycles.nvtx_cycles import NvtxCycles

            self.nvtx = NvtxCycles(self.recorder, self.config.cycle_range, self.log.clock_ns)
            self.nvtx.install()
        self._install_cycle_sources()
        atexit.register(self.finish)
        _register_before_atexit(self.stop_samplers)
        sys.excepthook = self._excepthook
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL):
            signal.signal(signal.SIGTERM, self._on_sigterm)

    def _install_cycle_sources(self) -> None:
        """``--cycle-function``, or (no marking option) the ways cycles are found by themselves."""
        cfg = self.config
        if cfg.cycle_function:
            from perfdiff.collect.cycles.anchor_function import AnchorFunction

            self.anchor = AnchorFunction(self.recorder, cfg.cycle_function)
            self.anchor.install()
        elif not cfg.cycle_range and not cfg.cycle_ms:
            from perfdiff.collect.cycles.found_cycles import FoundCycles
            from perfdiff.collect.cycles.found_function import FoundFunction

            self.found = FoundCycles(self.trace.clock_ns, self._before_found_cycle,
                                     warmup=cfg.warmup)
            self.found_marks = FoundMarks(self.found, self.trace, self.warnings)
            self._untrace_found_cycles(self.found)
            self.found.install()
            self.found_function = FoundFunction(self.found, self._program_used_gpu,
                                                marked=lambda: bool(self.log.starts))
            self.found_function.start()

    def _program_used_gpu(self) -> bool:
        """Whether the program has initialised CUDA through torch, started CUPTI another way
        (a CUDA library imported: deferred_trace.py), or launched a kernel the trace saw
        (found_function.py starts learning then). Asked from the learning thread: nothing
        here may initialise CUDA or depend on the calling thread's device."""
        torch = sys.modules.get("torch")
        if torch is not None and self._cuda_initialized(torch):
            return True
        if getattr(self.trace, "started_by", None) is not None:
            return True
        seen = getattr(self.trace, "records_so_far", None)
        return bool(seen is not None and seen() > 0)

    def _untrace_found_cycles(self, found: Any) -> None:
        """Leave some optimizer step (or ``prof.step()``) cycles untraced, as marked cycles: the
        share the cost target allows (``untraced_schedule.py``), or the last two of every
        ``--untraced-every`` N.

        Why: cycles found while the program runs are where most unmodified programs get their
        time, and without untraced cycles their cycle time was traced time only (timm ViT-S
        bf16 +45-59 % under tracing, H100 2026-11-28). Each found log gets its own switch;
        only one may have an untraced cycle open (both would pause one backend): the profiler
        log's switch acts only while no optimizer has stepped, and neither while the other's
        untraced cycle is open."""
        every = self.config.untraced_every
        optimizer = self.core.untrace(found.optimizer_log, every)
        profiler = self.core.untrace(
            found.profiler_log, every,
            allowed=lambda: not found.optimizer_log.starts and not optimizer.paused)
        # the found function's calls (found_function.py) until a step is seen: released then
        function = self.core.untrace(found.function_log, every,
                                     allowed=lambda: not found.stepped and not self.log.starts)
        optimizer.allowed = lambda: not profiler.paused and not function.paused
        found.on_function_moved = function.restart  # its cycles so far were left out
        self.found_untraced = {id(found.optimizer_log): optimizer,
                               id(found.profiler_log): profiler,
                               id(found.function_log): function}

    def _before_found_cycle(self) -> None:
        """Before a found cycle's start: the samplers; the found logs' boundary marks once
        the GPU is known; CUPTI's launch API records off once they are marked
        (found_marks.py). Nothing may escape into the program (FoundCycles.new_cycle)."""
        self.core.start_samplers()
        if self.found is not None and self.found.stepped and self.found_function is not None:
            self.found_function.stop()  # optimizer or profiler steps win (found_cycles.py)
            self.found_untraced[id(self.found.function_log)].release()
        marks = self.found_marks
        if marks is None:
            return
        if not marks.tried and self.config.traces_cupti:
            gpu = program_gpu()
            if gpu is not None:
                from perfdiff.collect.cycles.boundary_marks import TorchBoundaryMarker

                marks.attach(lambda: TorchBoundaryMarker(gpu.torch, gpu.index))
        marks.before_cycle(len(self.log.starts))

    def _excepthook(
        self, kind: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        if issubclass(kind, KeyboardInterrupt):
            self.failure = f"interrupted (Ctrl-C) after {self._cycles_so_far()} cycles"
            self.exit_code = 130
        else:
            self.failure = (f"program raised {kind.__name__}: {one_line(exc)} (after "
                            f"{self._cycles_so_far()} cycles)")
            self.exit_code = 1
        self._previous_excepthook(kind, exc, tb)

    def _cycles_so_far(self) -> int:
        """Cycles completed so far, by whichever log has the run's: a program whose cycles are
        its optimizer steps has none in the marked log, and its incomplete run file said
        "after 0 cycles" over 49 recorded ones (ResNet-50 cut by a timeout, H100 2026-12-07)."""
        logs: list[CycleLog] = [self.log, *(self.found.logs() if self.found is not None else ())]
        return max(log.completed for log in logs)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.failure = f"terminated by SIGTERM after {self._cycles_so_far()} cycles"
        self.exit_code = 128 + signum
        self.finish()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def _finish_last(self) -> None:
        """A sampler started: should the threading hook be missing, an atexit handler
        registered now runs before those registered earlier (torch's import-time ones, the
        weakref hook that frees cupti-python's PM sampling object)."""
        atexit.unregister(self.finish)
        atexit.register(self.finish)

    def stop_samplers(self) -> None:
        """Synchronize the GPU and stop every sampler, keeping their series (once).

        Runs at the start of interpreter exit (module docstring) or from :meth:`finish`,
        whichever comes first; never raises.
        """
        self.core.stop_samplers(_cuda_synchronize())

    # ---------------------------------------------------------------- finish

    def finish(self) -> None:
        """Stop everything and write the shard (once; safe to call again)."""
        if self._finished:
            return
        self._finished = True
        set_active_recorder(None)
        try:
            run_file = self._stop_and_build()
            from perfdiff.schema.io import save_run_file

            name = shard_name(self.config.run_index, self.rank, os.getpid())
            save_run_file(run_file, Path(self.config.shard_dir) / name)
        except Exception as exc:  # the program's own exit must not turn into our traceback
            print(f"perfdiff: warning: pid {os.getpid()} could not write its run shard "
                  f"({type(exc).__name__}: {exc})", file=sys.stderr)

    def _stop_and_build(self) -> RunFile:
        torch = sys.modules.get("torch")
        cuda_ready = torch is not None and self._cuda_initialized(torch)
        raw = self.core.stop(_cuda_synchronize())
        cycles = self._cycles(raw)
        status = Status("incomplete", self.failure) if self.failure else Status("complete")
        params = {**program_params(self.config, self.cycles_from), **self.found_params}
        if self.found_marks is not None and self.found_marks.switched:
            params["launch_records"] = FoundMarks.PARAM
        return self.core.run_file(
            raw, cycles, environment=self._environment(torch if cuda_ready else None),
            workload=Workload(name=program_name(self.config.command), params=params,
                              command=self.config.command),
            status=status, untraced=self.applied_untraced,
            identity=RunIdentity(index=self.config.run_index, rank=self.rank,
                                 exit_code=self.exit_code))

    @staticmethod
    def _cuda_initialized(torch: Any) -> bool:
        try:
            return bool(torch.cuda.is_initialized())
        except Exception:
            return False

    def _cycles(self, raw: RawTrace) -> CycleTable:
        if self.config.cycle_ms:
            from perfdiff.collect.cycles.window_cycles import fixed_windows

            return fixed_windows(raw, self.config.cycle_ms, self.config.warmup)
        if self.anchor is not None:
            self.anchor.uninstall()
        if self.found_function is not None:
            self.found_function.uninstall()
        table = self.core.cycle_table(raw)
        # the found logs' marks leave ``raw`` whichever cycles the run gets
        found_marks = self.found_marks.launches(raw) if self.found_marks is not None else {}
        if table.index.size == 0 and self.found is not None:
            from perfdiff.collect.cycles.found_cycles import choose_cycles

            chosen = choose_cycles(self.found, raw, self.config.warmup, os.getpid(),
                                   found_marks)
            self.warnings.extend(chosen.warnings)
            self.cycles_from = chosen.cycles_from
            if chosen.log is self.found.function_log:
                self.found_params = {"found_function": self.found.function_name}
            if chosen.log is not None and id(chosen.log) in self.found_untraced:
                self.applied_untraced = self.found_untraced[id(chosen.log)]
            return chosen.table
        if table.index.size == 0:
            if self.anchor is not None:
                self.warnings.extend(filter(None, [self.anchor.warning(os.getpid())]))
            elif self.config.cycle_range:
                seen = self.nvtx.ranges_seen if self.nvtx is not None else 0
                self.warnings.append(
                    f"no NVTX range named '{self.config.cycle_range}' completed in pid "
                    f"{os.getpid()} ({seen} started); check the name, or use --cycle-ms"
                )
            else:
                self.warnings.append(
                    f"pid {os.getpid()} marked no cycles: wrap each iteration in "
                    "perfdiff.cycle(), or pass --cycle-range NAME or --cycle-ms MS"
                )
        return table

    def _environment(self, torch: Any) -> Environment:
        describe = getattr(self.trace, "environment", None)
        if not self.config.traces_cupti and describe is not None:
            # a backend that is no GPU (CPU tests) describes the device it stands for
            environment: Environment = describe()
            return environment
        from perfdiff.collect.environment import gather_environment
        from perfdiff.collect.sources import nvml_library

        device = int(torch.cuda.current_device()) if torch is not None else 0
        # NVML only for the driver and clocks here: its absence was said when sampling began
        return gather_environment(torch, device, nvml_library(False, []))


def _cuda_synchronize() -> Any:
    """``torch.cuda.synchronize`` where the program has initialised CUDA with torch, else None
    (synchronizing would initialise CUDA ourselves, at exit)."""
    torch = sys.modules.get("torch")
    if torch is None or not ChildCollector._cuda_initialized(torch):
        return None
    return lambda: torch.cuda.synchronize()  # looked up when called: a failure is a warning


def _register_before_atexit(func: Any) -> None:
    """Call ``func`` when the interpreter starts to exit, before any ``atexit`` handler.

    ``threading._register_atexit`` (CPython 3.9+, used by ``concurrent.futures``) runs its
    callbacks from ``threading._shutdown``, on the main thread, before non-daemon threads are
    joined and before ``atexit``. Private, so guarded: without it, :meth:`ChildCollector.finish`
    still stops the samplers (re-registered in ``atexit`` when they start).
    """
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        return
    with contextlib.suppress(RuntimeError):  # already shutting down
        register(func)


def program_name(command: tuple[str, ...]) -> str:
    """What the report calls the program: ``train.py``, or ``-m pkg.mod``, or the command."""
    args = list(command)
    while args and (Path(args[0]).name.startswith("python") or args[0] == "-u"):
        args.pop(0)
        if args and args[0] == "-m" and len(args) > 1:
            return f"-m {args[1]}"
    for arg in args:
        if arg.endswith(".py"):
            return Path(arg).name
    return Path(command[0]).name if command else "program"


def program_params(config: InjectConfig, found: str | None = None) -> dict[str, Any]:
    """How cycles were cut, as the run file's workload parameters (``found``: how cycles were
    found by themselves at exit, when the program marked none)."""
    extra: dict[str, Any] = {}
    if config.cycle_ms:
        marking = f"fixed {config.cycle_ms:g} ms windows"
        extra["cycle_ms"] = config.cycle_ms
    elif config.cycle_range:
        marking = f"NVTX range '{config.cycle_range}'"
    elif config.cycle_function:
        marking = f"function {config.cycle_function}"
    elif found is not None:
        marking = found
    else:
        marking = "perfdiff.cycle() / mark_cycle()"
    return {"cycles_from": marking, "warmup": config.warmup, **extra}


def open_trace(config: InjectConfig) -> TraceBackend:
    """The tracing backend the config names (``MODULE:FUNCTION``, called with the config)."""
    module, _, attribute = config.backend.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    trace: TraceBackend = factory(config)
    return trace


def open_cupti_trace(config: InjectConfig) -> TraceBackend:
    """CUPTI activity tracing, started when the program initialises CUDA (the default)."""
    from perfdiff.collect.inject.deferred_trace import DeferredTrace
    from perfdiff.collect.sources import open_trace as open_cupti

    # Launch API records only where cycles have no boundary marks: --cycle-ms windows, and
    # cycles found by themselves (no marking option: found_cycles.py); --cycle-range,
    # --cycle-function and perfdiff.cycle() cycles get marks (program_marks.py).
    marked = bool(config.cycle_range or config.cycle_function)
    api = bool(config.cycle_ms) or not marked
    # CUPTI starts when the program initialises CUDA: started earlier, it refuses PM sampling
    # CUPTI's buffers are spooled into the shard folder and decoded at exit (spool.py): none
    # of that decode lands in a cycle, and a process killed outright leaves them on disk
    return DeferredTrace(lambda: open_cupti(config, launch_records=api,
                                            spool_dir=config.shard_dir),
                         pm_requested=config.pm_wanted,
                         detaches_cupti=config.detach_untraced)


_collector: ChildCollector | None = None


def activate() -> ChildCollector | None:
    """Start recording in this process if the config asks for it and it is ours to record."""
    global _collector
    text = os.environ.get(CONFIG_ENV, "")
    if not text or _collector is not None:
        return _collector
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if not should_record(os.environ, argv):
        return None
    config = InjectConfig.from_env(text)
    os.environ[OWNER_ENV] = str(os.getpid())
    collector = ChildCollector(config, open_trace(config))
    collector.start()
    _collector = collector
    return collector


__all__ = ["ChildCollector", "activate", "open_cupti_trace", "open_trace", "program_name",
           "should_record"]
