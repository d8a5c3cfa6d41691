"""One collection: set up the workload, record its cycles, and build the run file.

Why the run file is built in a ``finally``: Ctrl-C or an exception in the workload must
still leave a valid run file holding every cycle gathered so far, marked incomplete with the
reason. This module only *builds* the :class:`RunFile`; the CLI writes it atomically
(``perfdiff.schema.save_run_file``) and then exits with the matching code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perfdiff.collect.backends import MetricSampler, Sources
from perfdiff.collect.cycles import CycleLog
from perfdiff.collect.overhead import UntracedCycles
from perfdiff.collect.program_marks import launches_from_marks
from perfdiff.collect.records import RawTrace
from perfdiff.collect.run_file_builder import Recording, build_run_file
from perfdiff.collect.sampler_life import (
    one_line,
    start_sampler,
    stop_samplers,
    stop_trace,
    synchronize_gpu,
)
from perfdiff.collect.settings import CollectSettings
from perfdiff.collect.workloads.base import CyclePlan, Workload
from perfdiff.markers import RecorderMarker, set_active_recorder
from perfdiff.schema.model import Environment, MetricSeries, RunFile, Status
from perfdiff.schema.model import Workload as WorkloadInfo


@dataclass(frozen=True)
class CollectOutcome:
    """The run file, and why it is incomplete if it is (the CLI picks the exit code)."""

    run_file: RunFile
    interrupted: bool = False
    error: BaseException | None = None


ProgressCallback = Callable[[int, int], None]  # (cycles done, trace records so far)
# Workloads idle between cycles drain the trace this often: at the fastest launch rate measured
# (eigh [4] n = 512, ~83,000 kernels/s) that is ~20,000 records, ~80 ms between two cycles,
# far below a buffer's ~136,000.
DRAIN_EVERY_S = 0.25


@dataclass
class _Stopped:
    raw: RawTrace = field(default_factory=RawTrace)
    metrics: list[MetricSeries] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


_BENCHMARK = "a benchmark workload: each cycle is a sample of a case"


def run_collection(
    workload: Workload,
    plan: CyclePlan,
    sources: Sources,
    environment: Environment,
    settings: CollectSettings,
    *,
    device: str = "cuda:0",
    extra_params: dict[str, Any] | None = None,
    progress: ProgressCallback | None = None,
) -> CollectOutcome:
    """Run ``workload`` under the sources and return the run file (complete or not)."""
    trace = sources.trace
    # workloads idle between cycles: when the trace was last drained (emptied after a failure)
    drained = [time.monotonic()] if workload.idle_between_cycles else []
    between = getattr(trace, "between_cycles", None)

    def on_cycle_end(done: int) -> None:
        # Between two cycles of a workload that ends each one with the GPU idle: take in the
        # records gathered so far every DRAIN_EVERY_S, so that a full buffer is never turned
        # into records (~0.5 s holding the interpreter) while a cycle runs.
        if drained and time.monotonic() - drained[0] >= DRAIN_EVERY_S:
            drain()
        if between is not None:  # buffers completed in the cycle, decoded now (raw_intake.py)
            between()
        if progress is not None:
            progress(done, trace.records_so_far())

    def drain() -> None:
        try:
            trace.drain()
        except Exception as exc:  # a failed drain costs the stall it avoids, not the run
            warnings.append(f"taking CUPTI's records in between cycles failed "
                            f"({one_line(exc)}); not tried again")
            drained.clear()
            return
        drained[0] = time.monotonic()

    started: list[MetricSampler] = []
    warnings = list(sources.warnings)

    def on_cycle_begin(warmup: bool) -> None:
        # Samplers start with the first measured cycle: warm-up cycles (lazy library
        # initialisation, autotuning) are excluded from statistics anyway, and PM sampling
        # them would only fill the hardware buffer (see pm_sampling.py).
        if not warmup and not sampling_started:
            sampling_started.append(True)
            started.extend(s for s in sources.samplers if start_sampler(s, warnings))

    sampling_started: list[bool] = []
    marker = sources.boundary_marker
    log = CycleLog(clock_ns=trace.clock_ns, on_cycle_end=on_cycle_end,
                   on_cycle_begin=on_cycle_begin,
                   mark=marker.mark if marker is not None else None)
    every = settings.untraced_every if workload.untraced_cycles else 0
    untraced = UntracedCycles(every, trace, log, started, cost_target=settings.cost_target,
                              off_reason="" if workload.untraced_cycles else _BENCHMARK)
    status = Status("complete")
    interrupted = False
    error: BaseException | None = None
    tracing = False
    previous = set_active_recorder(log)
    try:
        workload.setup(device)
        trace.start()
        tracing = True
        workload.run(RecorderMarker(log), plan)
    except KeyboardInterrupt:
        interrupted = True
        status = Status("incomplete", f"interrupted (Ctrl-C) after {log.completed} cycles")
    except Exception as exc:
        error = exc
        status = Status(
            "incomplete",
            f"workload raised {type(exc).__name__}: {one_line(exc)} "
            f"(after {log.completed} cycles)",
        )
    finally:
        set_active_recorder(previous)
        stopped = _stop_all(sources, started, tracing)
        warnings += stopped.warnings
        try:
            workload.teardown()
        except Exception as exc:  # teardown trouble must not hide the run
            warnings.append(f"workload teardown raised {type(exc).__name__}: {one_line(exc)}")
    warnings.extend(untraced.errors)
    run_file = _build_run_file(
        workload, plan, sources, environment, settings, log, stopped, warnings, status,
        extra_params or {}, untraced,
    )
    return CollectOutcome(run_file=run_file, interrupted=interrupted, error=error)


def _stop_all(sources: Sources, started: list[MetricSampler], tracing: bool) -> _Stopped:
    """Wait for the GPU, stop samplers then tracing; every failure becomes a warning."""
    out = _Stopped()
    synchronize_gpu(sources.synchronize, out.warnings)
    out.metrics = stop_samplers(started, out.warnings)
    if tracing:
        out.raw = stop_trace(sources.trace, out.warnings)
    return out


def _build_run_file(
    workload: Workload,
    plan: CyclePlan,
    sources: Sources,
    environment: Environment,
    settings: CollectSettings,
    log: CycleLog,
    stopped: _Stopped,
    warnings: list[str],
    status: Status,
    extra_params: dict[str, Any],
    untraced: UntracedCycles | None = None,
) -> RunFile:
    log.close_open()
    mark_gpu_ns = None
    if sources.boundary_marker is not None:
        mark_gpu_ns = launches_from_marks(stopped.raw, sources.boundary_marker.stream_ids, log,
                                          warnings)
    params = {**workload.params.to_json(), "cycles": plan.measured, "warmup": plan.warmup,
              **extra_params}
    recording = Recording(raw=stopped.raw, cycles=log.table(mark_gpu_ns),
                          metrics=stopped.metrics, trace_name=sources.trace.name,
                          untraced=untraced)
    return build_run_file(recording, environment=environment,
                          workload=WorkloadInfo(name=workload.name, params=params),
                          status=status, warnings=warnings,
                          sample_interval_ns=settings.sample_interval_ns,
                          exclude_streams=settings.exclude_streams)


__all__ = ["CollectOutcome", "CollectSettings", "ProgressCallback", "run_collection"]
