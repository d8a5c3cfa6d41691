"""The recorder core (collect/recorder.py): one sampler schedule for both launchers.

Why: the built-in workload path started every sampler at the first measured cycle and the
user-program child started NVML at the first cycle and PM at the first measured one; a
built-in run that ended before its first measured cycle said nothing about its missing PM
series (only the child did). Now both go through ``Recorder.start_samplers``: these tests run
the built-in launcher (``run_collection``) with stand-in samplers and check the schedule the
child's test (test_child_sampler_start.py) checks for user programs.
"""

from __future__ import annotations

from typing import Any

import pytest

from perfdiff.collect.backends import Sources
from perfdiff.collect.recorder import Gpu, Recorder
from perfdiff.collect.session import run_collection
from perfdiff.collect.settings import CollectSettings, RecordSettings
from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParams
from perfdiff.markers import CycleMarker
from perfdiff.schema.model import Environment
from tests.support.fake_cupti import FakeTrace

ENV = Environment(host="h", driver_version=None, cuda_version=None, cupti_version=None,
                  torch_version=None, python_version="3.11", devices=())


class _Sampler:
    def __init__(self, name: str, events: list[str]) -> None:
        self.name = name
        self.events = events
        self.warnings: list[str] = []

    def start(self) -> None:
        self.events.append(f"start {self.name}")

    def stop(self) -> list[Any]:
        self.events.append(f"stop {self.name}")
        return []


class _Params(WorkloadParams):
    pass


class _Cycles(Workload):
    name = "cycles"
    summary = "test"
    params_class = _Params

    def __init__(self, events: list[str], fail_at: int | None) -> None:
        super().__init__(_Params())
        self.events = events
        self.fail_at = fail_at

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        for i in range(plan.warmup + plan.measured):
            if i == self.fail_at:
                raise RuntimeError("out of memory")
            with marker.cycle("case", warmup=i < plan.warmup):
                self.events.append(f"cycle {i}")


def _run(plan: CyclePlan, fail_at: int | None = None) -> tuple[list[str], list[str]]:
    events: list[str] = []
    sources = Sources(trace=FakeTrace(),
                      samplers=[_Sampler("pm_sampling", events), _Sampler("nvml", events)])
    outcome = run_collection(_Cycles(events, fail_at), plan, sources, ENV,
                             CollectSettings(untraced_every=0))
    return events, list(outcome.run_file.collection.warnings)


def test_a_built_in_workload_starts_nvml_with_the_first_cycle_and_pm_with_the_first_measured(
        ) -> None:
    events, warnings = _run(CyclePlan(measured=2, warmup=2))
    assert events == ["start nvml", "cycle 0", "cycle 1", "start pm_sampling", "cycle 2",
                      "cycle 3", "stop nvml", "stop pm_sampling"]
    assert not any("did not run" in w for w in warnings)


def test_a_built_in_run_ended_before_a_measured_cycle_says_pm_did_not_run() -> None:
    """Drift settled: only the user-program child said so (here the workload fails in its
    warm-up)."""
    events, warnings = _run(CyclePlan(measured=2, warmup=2), fail_at=1)
    assert "start pm_sampling" not in events and "stop pm_sampling" not in events
    assert events[-1] == "stop nvml"
    assert sum(w.startswith("PM sampling did not run: it starts at the first measured cycle")
               for w in warnings) == 1


def test_a_gpu_that_cannot_be_asked_is_one_warning_and_tracing_goes_on() -> None:
    def broken() -> Gpu | None:
        raise RuntimeError("no\ndevice")

    recorder = Recorder(RecordSettings(), FakeTrace(), untraced_every=0, find_gpu=broken)
    for _ in range(3):
        recorder.log.begin_cycle("step", False)
        recorder.log.end_cycle()
    recorder.stop(None)
    assert recorder.warnings == [
        "samplers could not start (RuntimeError: no\ndevice); kernels are still traced"]


@pytest.mark.parametrize("given", [True, False])
def test_samplers_started_late_are_paused_by_untraced_cycles(given: bool) -> None:
    """The untraced switch holds the core's list of started samplers, so a sampler that
    starts at the first measured cycle (PM, NVML of a user program) is paused too."""
    paused: list[str] = []

    class Pausable(_Sampler):
        def pause(self) -> None:
            paused.append(self.name)

        def resume(self) -> None:
            return None

    events: list[str] = []
    samplers = [Pausable("nvml", events)] if given else []
    recorder = Recorder(RecordSettings(), FakeTrace(), untraced_every=4, samplers=samplers)
    for _ in range(8):
        recorder.log.begin_cycle("step", False)
        recorder.log.end_cycle()
    assert paused == (["nvml", "nvml"] if given else [])


def test_a_trace_that_ended_detached_attaches_before_the_samplers_stop() -> None:
    """PM sampling's stop failed (ERROR_UNKNOWN, its values lost) where the run ended with
    CUPTI detached (H100, 2026-12-07): the core asks the trace to attach first."""
    events: list[str] = []

    class Detaching(FakeTrace):
        def attach_for_samplers(self) -> None:
            events.append("attach")

    recorder = Recorder(RecordSettings(), Detaching(), untraced_every=0,
                        samplers=[_Sampler("nvml", events)])
    recorder.log.begin_cycle("step", False)
    recorder.log.end_cycle()
    recorder.stop_samplers(None)
    assert events == ["start nvml", "attach", "stop nvml"]
