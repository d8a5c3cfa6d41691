"""The run file both launchers build from the same fake input, pinned byte for byte.

Why: built-in workloads (``collect/session.py``) and user programs (``collect/inject/child.py``)
share one run-file builder (issue 28 item 5); this golden pins what each launcher writes for a
fixed, clock-stepped input, so moving code between them changes no byte of a run file unless
the golden is regenerated (``--update-golden``) and the diff reviewed. Only what a test
cannot fix is blanked: the creation time, the pid and the host.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from perfdiff.collect.backends import Sources
from perfdiff.collect.inject.child import ChildCollector
from perfdiff.collect.inject.config import InjectConfig
from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace, TransferRecord
from perfdiff.collect.session import CollectSettings, run_collection
from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParams
from perfdiff.markers import CycleMarker
from perfdiff.schema.io import save_run_file
from perfdiff.schema.model import Environment, MetricSeries, RunFile
from tests.factories import StepClock
from tests.support.fake_cupti import FAKE_BACKEND, FakeTrace

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "collect"
ENV = Environment(host="h", driver_version=None, cuda_version=None, cupti_version=None,
                  torch_version=None, python_version="3.11", devices=())


class SteppedTrace:
    """A trace whose every stamp comes from a :class:`StepClock`: launches are API records now
    and kernels 5 us later; pausable, so untraced cycles are taken."""

    name = "cupti_activity"

    def __init__(self) -> None:
        self.clock = StepClock()
        self.raw = RawTrace()
        self.warnings: list[str] = []
        self.paused = False
        self._corr = 0

    def environment(self) -> Environment:
        """The simulated GPU, as the CPU stand-in for CUPTI describes it (the child asks a
        backend that is not CUPTI to describe its device)."""
        return FakeTrace().environment()

    def clock_ns(self) -> int:
        return self.clock()

    def start(self) -> None:
        return None

    def drain(self) -> None:
        return None

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def records_so_far(self) -> int:
        return len(self.raw.kernels)

    def launch(self, name: str) -> None:
        if self.paused:
            return
        self._corr += 1
        t = self.clock()
        self.raw.api.append(ApiRecord(self._corr, t))
        self.raw.kernels.append(KernelRecord(name, 0, 7, t + 5000, t + 6000, self._corr,
                                             (1, 1, 1), (128, 1, 1)))
        self.raw.memcpy.append(TransferRecord("DtoH", 4, 0, 7, t + 6000, t + 6100, self._corr))

    def stop(self) -> RawTrace:
        self.raw.dropped_records = 3
        return self.raw


class StaticSampler:
    name = "pm_sampling"

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def start(self) -> None:
        return None

    def stop(self) -> list[MetricSeries]:
        return [MetricSeries("m", "pct", "pm_sampling", 0, np.array([1, 2], dtype=np.int64),
                             np.array([10.0, 20.0]), 1)]


CYCLES = 12  # measured; with untraced_every=4 three of them are untraced
KERNELS = ("_Z6kernelILi0EEvv", "_Z6kernelILi1EEvv")


def _launch_cycle(trace: SteppedTrace) -> None:
    for name in KERNELS:
        trace.launch(name)


class SteppedParams(WorkloadParams):
    pass


class SteppedWorkload(Workload):
    name = "stepped"
    summary = "test"
    params_class = SteppedParams

    def __init__(self, trace: SteppedTrace) -> None:
        super().__init__(SteppedParams())
        self.trace = trace

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        for i in range(plan.warmup + plan.measured):
            with marker.cycle("case-a", warmup=i < plan.warmup):
                _launch_cycle(self.trace)


def built_in_run_file() -> RunFile:
    trace = SteppedTrace()
    sources = Sources(trace=trace, samplers=[StaticSampler()], warnings=["w0"])
    outcome = run_collection(SteppedWorkload(trace), CyclePlan(measured=CYCLES, warmup=2),
                             sources, ENV, CollectSettings(untraced_every=4))
    return outcome.run_file


def user_program_run_file(tmp_path: Path) -> RunFile:
    from perfdiff.schema.io import load_run_file

    trace = SteppedTrace()
    config = InjectConfig(shard_dir=str(tmp_path), warmup=2, backend=FAKE_BACKEND, untraced_every=4,
                          cycle_range="step", command=("python", "train.py"))
    collector = ChildCollector(config, trace)
    for _ in range(2 + CYCLES):
        collector.recorder.begin_cycle("step", False)
        _launch_cycle(trace)
        collector.recorder.end_cycle()
    collector.finish()
    (shard,) = tmp_path.glob("*.json.gz")
    return load_run_file(shard)


def _canonical(run_file: RunFile, tmp_path: Path, name: str) -> dict[str, Any]:
    path = tmp_path / f"{name}.json"
    save_run_file(run_file, path)
    data: dict[str, Any] = json.loads(path.read_text())
    data["created_unix_s"] = 0
    data["environment"]["host"] = "h"
    data["environment"]["python_version"] = "3"
    for run in data["runs"]:
        run["pid"] = 0
    return data


def _check(data: dict[str, Any], name: str, update: bool) -> None:
    golden = GOLDEN / f"{name}.json"
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if update:
        golden.write_text(text)
    assert text == golden.read_text(), f"{golden} differs: rerun with --update-golden and review"


def test_built_in_launcher_writes_the_pinned_run_file(tmp_path: Path,
                                                      update_golden: bool) -> None:
    _check(_canonical(built_in_run_file(), tmp_path, "b"), "built_in_run_file", update_golden)


def test_user_program_launcher_writes_the_pinned_run_file(tmp_path: Path,
                                                          update_golden: bool) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    _check(_canonical(user_program_run_file(shards), tmp_path, "u"), "user_program_run_file",
           update_golden)


def test_both_launchers_say_kernel_names_stay_mangled_without_a_demangler(
        tmp_path: Path, monkeypatch: Any) -> None:
    """Drift settled: only built-in workloads said so; a user program's file now says it too."""
    import perfdiff.collect.run_file_builder as builder

    monkeypatch.setattr(builder, "demangler_available", lambda: False)
    shards = tmp_path / "shards"
    shards.mkdir()
    for run_file in (built_in_run_file(), user_program_run_file(shards)):
        assert "no C++ demangler (libstdc++) found; kernel names kept mangled" in \
            run_file.collection.warnings


class NamedSampler(StaticSampler):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def stop(self) -> list[MetricSeries]:
        return [MetricSeries("m", "pct", self.name, 0, np.array([1, 2], dtype=np.int64),
                             np.array([10.0, 20.0]), 1)]


def test_sources_are_listed_sorted_whatever_order_the_samplers_started_in() -> None:
    """Drift settled: built-in runs listed samplers in start order (PM sampling, then NVML),
    user programs sorted; a run's sources are now sorted after the trace in both."""
    listed = set()
    for names in (("pm_sampling", "nvml"), ("nvml", "pm_sampling")):
        trace = SteppedTrace()
        samplers: list[Any] = [NamedSampler(n) for n in names]
        sources = Sources(trace=trace, samplers=samplers)
        outcome = run_collection(SteppedWorkload(trace), CyclePlan(measured=2, warmup=0),
                                 sources, ENV, CollectSettings(untraced_every=0))
        listed.add(outcome.run_file.collection.sources)
    assert listed == {("cupti_activity", "nvml", "pm_sampling")}


def test_a_sampler_refusing_to_start_is_one_line_in_either_launcher() -> None:
    """Drift settled: the user-program child let a multi-line message into the run file."""
    from perfdiff.collect.sampler_life import start_sampler

    class Refusing(StaticSampler):
        def start(self) -> None:
            raise RuntimeError("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\nsee the docs")

    warnings: list[str] = []
    assert not start_sampler(Refusing(), warnings)
    assert warnings == ["pm_sampling could not start (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES see "
                        "the docs); not sampled"]


def test_a_program_that_left_no_shard_gets_the_pinned_empty_run_file(
        tmp_path: Path, update_golden: bool) -> None:
    """The parent's record of a process killed before it wrote its shard goes through the
    same builder (it had a third copy of the assembly)."""
    from perfdiff.collect.user_program import _empty_run_file

    config = InjectConfig(shard_dir="", command=("python", "train.py"), cycle_range="step",
                          warmup=3)
    run_file = _empty_run_file(2, 4242, 137, config, "no trace: killed")
    assert run_file.runs[0].pid == 4242 and run_file.collection.sources == ()
    _check(_canonical(run_file, tmp_path, "e"), "empty_program_run_file", update_golden)
