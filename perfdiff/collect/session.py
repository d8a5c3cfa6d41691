"""The built-in workload launcher: set up the workload, run its cycles under the recorder
core (``recorder.py``), and return the run file. The user-program launcher is
``inject/child.py``; both record through the same core.

Why the run file is built in a ``finally``: Ctrl-C or an exception in the workload must
still leave a valid run file holding every cycle gathered so far, marked incomplete with the
reason. This module only *builds* the :class:`RunFile`; the CLI writes it atomically
(``perfdiff.schema.save_run_file``) and then exits with the matching code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfdiff.collect.backends import Sources
from perfdiff.collect.recorder import Recorder
from perfdiff.collect.sampler_life import one_line
from perfdiff.collect.settings import CollectSettings
from perfdiff.collect.sources import remove_spool_dir
from perfdiff.collect.workloads.base import CyclePlan, Workload
from perfdiff.markers import RecorderMarker, set_active_recorder
from perfdiff.schema.model import Environment, RunFile, Status
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

    def after_cycle(done: int) -> None:
        # Between two cycles of a workload that ends each one with the GPU idle: take in the
        # records gathered so far every DRAIN_EVERY_S, so that no buffer is handed over while
        # a cycle runs (only written to the spool now, but decoded where the spool failed).
        if drained and time.monotonic() - drained[0] >= DRAIN_EVERY_S:
            drain()
        if progress is not None:
            progress(done, trace.records_so_far())

    def drain() -> None:
        try:
            trace.drain()
        except Exception as exc:  # a failed drain costs the stall it avoids, not the run
            recorder.warnings.append(f"taking CUPTI's records in between cycles failed "
                                     f"({one_line(exc)}); not tried again")
            drained.clear()
            return
        drained[0] = time.monotonic()

    recorder = Recorder(settings, trace,
                        untraced_every=settings.untraced_every if workload.untraced_cycles else 0,
                        untraced_off="" if workload.untraced_cycles else _BENCHMARK,
                        samplers=sources.samplers, marker=sources.boundary_marker,
                        warnings=sources.warnings, after_cycle=after_cycle)
    log = recorder.log
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
        raw = recorder.stop(sources.synchronize, trace_started=tracing)
        remove_spool_dir(sources.spool_dir)  # the spool itself was decoded and removed at stop
        try:
            workload.teardown()
        except Exception as exc:  # teardown trouble must not hide the run
            recorder.warnings.append(f"workload teardown raised {type(exc).__name__}: "
                                     f"{one_line(exc)}")
    params = {**workload.params.to_json(), "cycles": plan.measured, "warmup": plan.warmup,
              **(extra_params or {})}
    run_file = recorder.run_file(raw, recorder.cycle_table(raw), environment=environment,
                                 workload=WorkloadInfo(name=workload.name, params=params),
                                 status=status, exclude_streams=settings.exclude_streams)
    return CollectOutcome(run_file=run_file, interrupted=interrupted, error=error)


__all__ = ["CollectOutcome", "CollectSettings", "ProgressCallback", "run_collection"]
