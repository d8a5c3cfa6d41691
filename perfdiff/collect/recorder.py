"""The recorder core: one recording in one process, whichever launcher started it.

Why one core: built-in workloads (``session.py``, in perfdiff's own process) and user programs
(``inject/child.py``, inside the program's process) were recorded by two stacks that had
drifted (issue 28): the noisy-neighbour exclusion and the demangler warning existed in one
only, the two started their samplers at different moments and worded the same failure twice.
Now both launchers hand this class their settings, their trace and (where they have them)
their already opened samplers and boundary marker, and keep only what truly differs between
them: when the GPU becomes known (at once for a built-in workload; when the program
initialises CUDA for a user program), how cycles are cut, how the recording ends (a workload
returns; a program exits) and where the run file goes.

What the core does, once for both:

- the cycle log, with the intake's between-cycles decode (``raw_intake.py``) after each cycle
  and the untraced cycles (``overhead.py``) wired in;
- the boundary marks and the samplers, started on one schedule: the marks and NVML at the
  first cycle once the GPU is known (NVML's poller is a process of its own: its start lands
  in the warm-up, before a cycle's start is stamped), PM sampling at the first measured cycle
  (its hardware buffer holds ~3 s of samples at 20 us and what the warm-up fills is decoded
  first: a GPT-2 program whose first cycle took 4.4 s had PM on 18.8 % of its measured cycles,
  H100 2026-11-25). A sampler asked for that never ran is said in one line, with why;
- stopping: the GPU synchronized, then the samplers, then the trace, every failure one warning;
- the run file: the cycles from the log and its marks, then the one builder
  (``run_file_builder.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfdiff.collect.backends import BoundaryMarker, MetricSampler, TraceBackend
from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.overhead import UntracedCycles
from perfdiff.collect.cycles.program_marks import launches_from_marks
from perfdiff.collect.records import RawTrace
from perfdiff.collect.run_file_builder import Recording, RunIdentity, build_run_file
from perfdiff.collect.sampler_life import (
    open_pm_sampler,
    start_sampler,
    stop_samplers,
    stop_trace,
    synchronize_gpu,
)
from perfdiff.collect.settings import RecordSettings
from perfdiff.collect.sources import nvml_library, open_marker, open_nvml
from perfdiff.schema.model import CycleTable, Environment, MetricSeries, RunFile, Status, Workload

PM_SOURCE = "pm_sampling"  # the PM sampler's source name: it waits for a measured cycle
Synchronize = Callable[[], object] | None


@dataclass(frozen=True)
class Gpu:
    """The GPU a recording samples, once known: torch (CUDA initialised) and the device."""

    torch: Any
    index: int


class Recorder:
    """One process's recording: trace, cycle log, marks, samplers, warnings, run file."""

    def __init__(
        self,
        settings: RecordSettings,
        trace: TraceBackend,
        *,
        untraced_every: int | None,
        untraced_off: str = "",
        lockstep: bool = False,
        samplers: Sequence[MetricSampler] = (),
        marker: BoundaryMarker | None = None,
        find_gpu: Callable[[], Gpu | None] | None = None,
        marks: bool = True,
        warnings: Sequence[str] = (),
        after_cycle: Callable[[int], None] | None = None,
        on_sampler_start: Callable[[], None] | None = None,
        no_gpu_why: str = "",
        no_cycle_why: str = "",
    ) -> None:
        """``samplers``/``marker``: opened by the launcher (a built-in workload's GPU is known
        before it runs); ``find_gpu``: asked before each cycle until it answers, then the core
        opens the marker (where ``marks``), NVML and PM sampling itself (a user program's GPU
        is known only once it has initialised CUDA). ``after_cycle``: the launcher's own work
        after each completed cycle (before the intake's decode); ``on_sampler_start``: called
        after each sampler started (the child re-registers its exit hook then);
        ``no_gpu_why``: why ``find_gpu`` may never answer, said at stop where it did not
        and PM sampling or NVML was asked for; ``no_cycle_why``: said instead where no cycle
        began while the program ran, so ``find_gpu`` was never asked (a GPT-2 ``generate``
        program whose cycles were found after the run was told it never initialised CUDA)."""
        self.settings = settings
        self.trace = trace
        self.warnings: list[str] = list(warnings)
        self.started: list[MetricSampler] = []  # the untraced cycles pause those that can
        self.metrics: list[MetricSeries] = []
        self.mark_streams: tuple[int, ...] | None = None
        self._waiting = [s for s in samplers if s.name != PM_SOURCE]  # start at the first cycle
        self._waiting_pm = [s for s in samplers if s.name == PM_SOURCE]  # at the first measured
        self._find_gpu = find_gpu
        self._gpu: Gpu | None = None
        self._marks = marks
        self._open_pm = False  # PM sampling to open at the first measured cycle (find_gpu)
        self._sampling_failed = False
        self._samplers_stopped = False
        self._after_cycle = after_cycle
        self._on_sampler_start = on_sampler_start
        self._no_gpu_why = no_gpu_why
        self._no_cycle_why = no_cycle_why
        self._gpu_asked = False  # whether a cycle start asked find_gpu (start_samplers)
        self._samplers_settled = False  # every sampler started (or dropped): nothing more to start
        self.log = CycleLog(clock_ns=trace.clock_ns, on_cycle_begin=self._before_cycle,
                            on_cycle_end=self._cycle_ended)
        if marker is not None:
            self.log.mark = marker.mark
            self.mark_streams = marker.stream_ids
        self._all_untraced: list[UntracedCycles] = []
        self._lockstep = lockstep  # a rank of a multi-rank job: untraced cycles by position
        self.untraced = self.untrace(self.log, untraced_every, off_reason=untraced_off)
        # the log's own hooks (_before_cycle, _cycle_ended) have nothing to do in a run of
        # untraced cycles once every sampler has started and no launcher work follows a cycle
        # (the intake's decode waits for the next hook): its cycles may take the express lane
        self.untraced.express_ok = lambda: self._samplers_settled and after_cycle is None

    # ---------------------------------------------------------------- cycles

    def untrace(self, log: CycleLog, every: int | None,
                allowed: Callable[[], bool] | None = None,
                off_reason: str = "") -> UntracedCycles:
        """Untraced cycles for ``log`` (None: the share that meets the settings' cost target;
        N: the last two of every N; 0: none, ``off_reason`` saying why), pausing this
        recording's trace and started samplers; the log of cycles found by themselves gets
        its own."""
        untraced = UntracedCycles(every, self.trace, log, self.started,
                                  cost_target=self.settings.cost_target, off_reason=off_reason,
                                  lockstep=self._lockstep)
        if allowed is not None:
            untraced.allowed = allowed
        self._all_untraced.append(untraced)
        return untraced

    def _before_cycle(self, warmup: bool) -> None:
        # Why the flag: this runs before every cycle's start is stamped, in the program's step
        # (an NVTX range's push), and once every sampler has started it has nothing to do
        if not self._samplers_settled:
            self.start_samplers(measured=not warmup)

    def _cycle_ended(self, done: int) -> None:
        if self._after_cycle is not None:
            self._after_cycle(done)
        between = getattr(self.trace, "between_cycles", None)
        if between is not None:  # buffers completed in the cycle, decoded now (raw_intake.py)
            between()

    # ---------------------------------------------------------------- samplers

    def start_samplers(self, measured: bool = True) -> None:
        """The marks and NVML once the GPU is known, PM sampling from the first measured
        cycle on (module docstring). Called before a cycle's start is stamped, from the
        program's own cycle marks too: nothing may escape into the program."""
        if self._samplers_stopped or self._sampling_failed:
            return
        try:
            if self._find_gpu is not None and self._gpu is None:
                self._gpu_asked = True
                gpu = self._find_gpu()
                if gpu is None:
                    return  # not yet: asked again before the next cycle
                self._gpu = gpu
                self._open_on(gpu)
            self._start_all(self._waiting)
            if measured:
                if self._open_pm:
                    self._open_pm = False
                    pm = open_pm_sampler(self.settings, self._gpu.index if self._gpu else 0,
                                         self.trace.clock_ns, self.warnings)
                    self._waiting_pm.extend([pm] if pm is not None else [])
                self._start_all(self._waiting_pm)
                self._samplers_settled = (self._gpu is not None or self._find_gpu is None) and not (
                    self._waiting or self._waiting_pm or self._open_pm)
        except Exception as exc:
            self._sampling_failed = True
            self._open_pm = False
            self._waiting_pm.clear()
            self.warnings.append(f"samplers could not start ({type(exc).__name__}: {exc}); "
                                 "kernels are still traced")

    def _open_on(self, gpu: Gpu) -> None:
        """The GPU is known now: the marker (where wanted) and NVML; PM sampling waits."""
        if self._marks:
            marker = open_marker(gpu.torch, gpu.index, self.warnings,
                                 instead="kernels are assigned to cycles by GPU start time")
            if marker is not None:
                self.log.mark = marker.mark
                self.mark_streams = marker.stream_ids
        if self.settings.nvml:
            nvml = nvml_library(True, self.warnings)
            poller = open_nvml(self.settings, nvml, gpu.torch, gpu.index, self.trace.clock_ns,
                               self.warnings) if nvml is not None else None
            self._waiting.extend([poller] if poller is not None else [])
        self._open_pm = self.settings.pm_wanted

    def _start_all(self, waiting: list[MetricSampler]) -> None:
        while waiting:
            sampler = waiting.pop(0)
            if start_sampler(sampler, self.warnings):
                self.started.append(sampler)
                if self._on_sampler_start is not None:
                    self._on_sampler_start()

    def stop_samplers(self, synchronize: Synchronize) -> None:
        """Synchronize the GPU and stop every started sampler, keeping their series (once;
        never raises). Samplers not started by now never will be: said why."""
        if self._samplers_stopped:
            return
        self._samplers_stopped = True
        self._say_why_not_sampled()
        if not self.started:
            return
        synchronize_gpu(synchronize, self.warnings)
        attach = getattr(self.trace, "attach_for_samplers", None)
        if attach is not None:  # a run that ended detached: PM's stop needs CUPTI there
            attach()
        self.metrics.extend(stop_samplers(self.started, self.warnings))

    def _say_why_not_sampled(self) -> None:
        """One line when PM sampling or NVML was asked for but never started. Why: a Triton
        program's run file had neither and no word why (issue 28), and a --cycle-ms one was
        told it never initialised CUDA."""
        cfg = self.settings
        wanted = " and ".join(name for name, on in (("PM sampling", cfg.pm_wanted),
                                                   ("NVML", cfg.nvml)) if on)
        if self._find_gpu is not None and self._gpu is None and not self._sampling_failed:
            why = (self._no_cycle_why if self._no_cycle_why and not self._gpu_asked
                   else self._no_gpu_why)
            if wanted:
                self.warnings.append(f"{wanted} did not run: {why}")
        elif self._open_pm or self._waiting_pm:
            self.warnings.append(
                "PM sampling did not run: it starts at the first measured cycle and the "
                "recording ended before one (give more cycles or steps, or lower --warmup)")

    # ---------------------------------------------------------------- the end

    def stop(self, synchronize: Synchronize, *, trace_started: bool = True) -> RawTrace:
        """Wait for the GPU, stop the samplers then the trace; the trace's records (empty
        where tracing never started or failed at stop: a warning says which)."""
        synchronize_gpu(synchronize, self.warnings)
        self.stop_samplers(None)  # synchronized just now
        return stop_trace(self.trace, self.warnings) if trace_started else RawTrace()

    def cycle_table(self, raw: RawTrace) -> CycleTable:
        """The log's completed cycles, lined up with the launches by its boundary marks
        (which are removed from ``raw``); a cycle left open is cut short, not counted."""
        self.log.close_open()
        mark_gpu_ns = launches_from_marks(raw, self.mark_streams, self.log, self.warnings)
        return self.log.table(mark_gpu_ns)

    def run_file(
        self,
        raw: RawTrace,
        cycles: CycleTable,
        *,
        environment: Environment,
        workload: Workload,
        status: Status,
        identity: RunIdentity | None = None,
        exclude_streams: tuple[int, ...] = (),
        untraced: UntracedCycles | None = None,
    ) -> RunFile:
        """The run file of this recording (``untraced``: the switch of the log ``cycles``
        came from, when not the core's own log: cycles found by themselves)."""
        for switch in self._all_untraced:
            self.warnings.extend(switch.errors)
        recording = Recording(raw=raw, cycles=cycles, metrics=self.metrics,
                              trace_name=self.trace.name,
                              untraced=self.untraced if untraced is None else untraced)
        return build_run_file(recording, environment=environment, workload=workload,
                              status=status, warnings=self.warnings,
                              sample_interval_ns=self.settings.sample_interval_ns,
                              identity=identity, exclude_streams=exclude_streams)


__all__ = ["PM_SOURCE", "Gpu", "Recorder"]
