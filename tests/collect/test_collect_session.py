"""The collection session with fake sources: cycles, launch-cycle assignment, partial files.

Why fakes: the session's job (start, run the workload's cycles, stop, build the run file,
survive Ctrl-C and exceptions) is plain Python; a fake trace backend with a fake clock makes
every timestamp known, so the expected cycle of each kernel follows from the setup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from perfdiff.collect.backends import Sources
from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace, TransferRecord
from perfdiff.collect.session import CollectSettings, run_collection
from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParams
from perfdiff.markers import CycleMarker
from perfdiff.schema.io import load_run_file, save_run_file
from perfdiff.schema.model import Environment, MetricSeries
from tests.factories import StepClock

ENV = Environment(host="h", driver_version=None, cuda_version=None, cupti_version=None,
                  torch_version=None, python_version="3.11", devices=())


class FakeTrace:
    """Records a kernel 'launch' whenever the fake workload calls ``launch``.

    The kernel runs on the 'GPU' 5000 ns after its launch, i.e. possibly after the host
    has moved on to the next cycle (the case launch-cycle assignment exists for).
    """

    name = "cupti_activity"

    def __init__(self, clock: StepClock, with_api: bool = True) -> None:
        self.clock = clock
        self.raw = RawTrace()
        self.with_api = with_api
        self.started = False
        self.warnings: list[str] = []
        self.drain_times: list[int] = []
        self._corr = 0

    def clock_ns(self) -> int:
        return self.clock()

    def start(self) -> None:
        self.started = True

    def drain(self) -> None:
        self.drain_times.append(self.clock())

    def records_so_far(self) -> int:
        return len(self.raw.kernels)

    def launch(self, name: str) -> int:
        self._corr += 1
        t = self.clock()
        if self.with_api:
            self.raw.api.append(ApiRecord(self._corr, t))
        self.raw.kernels.append(KernelRecord(name, 0, 7, t + 5000, t + 6000, self._corr,
                                             (1, 1, 1), (128, 1, 1)))
        self.raw.memcpy.append(TransferRecord("DtoH", 4, 0, 7, t + 6000, t + 6100, self._corr))
        return t

    def stop(self) -> RawTrace:
        return self.raw


class FakeSampler:
    name = "pm_sampling"

    def __init__(self, fail_start: bool = False) -> None:
        self.fail_start = fail_start
        self.warnings: list[str] = ["PM metric x rejected (test); not sampled"]

    def start(self) -> None:
        if self.fail_start:
            raise RuntimeError("no permission")

    def stop(self) -> list[MetricSeries]:
        return [MetricSeries("m", "pct", "pm_sampling", 0, np.array([1, 2], dtype=np.int64),
                             np.array([10.0, 20.0]), 1)]


@dataclass(frozen=True)
class FakeParams(WorkloadParams):
    kernels_per_cycle: int = 2
    fail_at: int = -1
    interrupt_at: int = -1


class FakeWorkload(Workload):
    name = "fake"
    summary = "test"
    params_class = FakeParams

    def __init__(self, params: FakeParams, trace: FakeTrace) -> None:
        super().__init__(params)
        self.trace = trace
        self.torn_down = False
        self.launch_times: list[tuple[int, int]] = []  # (launch time, cycle counter)

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        p = self.params
        assert isinstance(p, FakeParams)
        for i in range(plan.warmup + plan.measured):
            with marker.cycle("case-a", warmup=i < plan.warmup):
                for k in range(p.kernels_per_cycle):
                    self.launch_times.append((self.trace.launch(f"_Z6kernelILi{k}EEvv"), i))
                if i == p.fail_at:
                    raise ValueError("boom\nsecond line")
                if i == p.interrupt_at:
                    raise KeyboardInterrupt

    def teardown(self) -> None:
        self.torn_down = True


def _collect(params: FakeParams, plan: CyclePlan, *, with_api: bool = True,
             fail_start: bool = False) -> tuple[object, FakeWorkload]:
    trace = FakeTrace(StepClock(), with_api=with_api)
    workload = FakeWorkload(params, trace)
    sources = Sources(trace=trace, samplers=[FakeSampler(fail_start)], warnings=["w0"])
    outcome = run_collection(workload, plan, sources, ENV, CollectSettings())
    return outcome, workload


def test_complete_run_assigns_kernels_to_their_launch_cycle() -> None:
    outcome, workload = _collect(FakeParams(kernels_per_cycle=3), CyclePlan(measured=4, warmup=1))
    rf = outcome.run_file  # type: ignore[attr-defined]
    run = rf.runs[0]
    assert rf.status.state == "complete"
    assert run.cycles.index.tolist() == [0, 1, 2, 3, 4]
    assert run.cycles.warmup.tolist() == [True, False, False, False, False]
    assert set(run.cycles.label) == {"case-a"}
    expected = [cycle for _, cycle in workload.launch_times]
    assert run.kernels.cycle.tolist() == expected
    # The last kernel of each cycle runs on the GPU after its cycle ended on the host:
    ends = run.cycles.end_ns[run.kernels.cycle]
    assert (run.kernels.start_ns > ends).any()
    assert run.memcpy.cycle.tolist() == expected
    assert workload.torn_down
    assert rf.workload.params["cycles"] == 4 and rf.workload.params["warmup"] == 1
    assert "pm_sampling" in rf.collection.sources and "w0" in rf.collection.warnings


class IdleFakeWorkload(FakeWorkload):
    idle_between_cycles = True


@pytest.mark.parametrize("idle", [True, False])
def test_trace_is_drained_between_cycles_of_idle_workloads_only(
        monkeypatch: pytest.MonkeyPatch, idle: bool) -> None:
    import perfdiff.collect.session as session_module

    monkeypatch.setattr(session_module, "DRAIN_EVERY_S", 0.0)
    trace = FakeTrace(StepClock())
    cls = IdleFakeWorkload if idle else FakeWorkload
    workload = cls(FakeParams(kernels_per_cycle=2), trace)
    sources = Sources(trace=trace, samplers=[], warnings=[])
    outcome = run_collection(workload, CyclePlan(measured=3, warmup=1), sources, ENV,
                             CollectSettings())
    cycles = outcome.run_file.runs[0].cycles
    if not idle:
        assert trace.drain_times == []  # a busy GPU's records could be incomplete
        return
    assert len(trace.drain_times) == 4  # once after each completed cycle
    for t in trace.drain_times:  # never inside a cycle's window
        assert not ((cycles.start_ns <= t) & (t <= cycles.end_ns)).any()


def test_a_failing_drain_is_one_warning_and_the_run_completes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import perfdiff.collect.session as session_module

    monkeypatch.setattr(session_module, "DRAIN_EVERY_S", 0.0)
    trace = FakeTrace(StepClock())
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise RuntimeError("CUPTI_ERROR_UNKNOWN\nmore")

    monkeypatch.setattr(trace, "drain", broken)
    workload = IdleFakeWorkload(FakeParams(kernels_per_cycle=1), trace)
    outcome = run_collection(workload, CyclePlan(measured=3, warmup=0), Sources(trace=trace), ENV,
                             CollectSettings())
    rf = outcome.run_file
    assert rf.status.state == "complete" and len(rf.runs[0].cycles.index) == 3
    assert calls == [1]  # not tried again
    (text,) = [w for w in rf.collection.warnings if "between cycles failed" in w]
    assert "CUPTI_ERROR_UNKNOWN" in text and "\n" not in text


def test_names_are_interned_and_demangled() -> None:
    outcome, _ = _collect(FakeParams(kernels_per_cycle=2), CyclePlan(measured=3, warmup=0))
    rf = outcome.run_file  # type: ignore[attr-defined]
    assert len(rf.strings) == 2
    assert rf.runs[0].kernels.name_id.tolist() == [0, 1] * 3
    assert all(s.mangled.startswith("_Z") for s in rf.strings)


def test_without_api_records_falls_back_to_gpu_start_and_warns() -> None:
    outcome, workload = _collect(FakeParams(kernels_per_cycle=1), CyclePlan(measured=3, warmup=0),
                                 with_api=False)
    rf = outcome.run_file  # type: ignore[attr-defined]
    assert any("no launch API record" in w for w in rf.collection.warnings)
    run = rf.runs[0]
    expected = []
    for start in run.kernels.start_ns.tolist():
        inside = [i for i, (a, b) in enumerate(zip(run.cycles.start_ns.tolist(),
                                                   run.cycles.end_ns.tolist(), strict=True))
                  if a <= start < b]
        expected.append(inside[0] if inside else -1)
    assert run.kernels.cycle.tolist() == expected
    # ... which differs from the launch cycles: the reason API records are traced.
    assert expected != [cycle for _, cycle in workload.launch_times]


def test_exception_keeps_finished_cycles_and_drops_the_broken_one(tmp_path: Path) -> None:
    outcome, workload = _collect(FakeParams(fail_at=3), CyclePlan(measured=10, warmup=1))
    assert isinstance(outcome.error, ValueError)  # type: ignore[attr-defined]
    rf = outcome.run_file  # type: ignore[attr-defined]
    assert rf.status.state == "incomplete"
    assert "ValueError: boom second line" in rf.status.reason
    assert "after 3 cycles" in rf.status.reason
    assert rf.runs[0].cycles.index.size == 3
    # Kernels of the cycle cut short lie outside every cycle.
    assert (rf.runs[0].kernels.cycle == -1).sum() == 2
    assert workload.torn_down
    path = save_run_file(rf, tmp_path / "partial.json.gz")
    back = load_run_file(path)
    assert back.status.state == "incomplete" and back.runs[0].cycles.index.size == 3


def test_ctrl_c_is_reported_as_interrupted() -> None:
    outcome, _ = _collect(FakeParams(interrupt_at=2), CyclePlan(measured=10, warmup=0))
    assert outcome.interrupted and outcome.error is None  # type: ignore[attr-defined]
    rf = outcome.run_file  # type: ignore[attr-defined]
    assert rf.status.reason.startswith("interrupted (Ctrl-C) after 2 cycles")
    assert rf.runs[0].cycles.index.size == 2


def test_a_sampler_that_cannot_start_degrades_to_a_warning() -> None:
    outcome, _ = _collect(FakeParams(), CyclePlan(measured=2, warmup=0), fail_start=True)
    rf = outcome.run_file  # type: ignore[attr-defined]
    assert rf.status.state == "complete"
    assert rf.runs[0].metrics == ()
    assert "pm_sampling" not in rf.collection.sources
    assert any("pm_sampling could not start (no permission)" in w for w in rf.collection.warnings)


def test_plan_rejects_bad_counts() -> None:
    from perfdiff.collect.workloads.base import WorkloadParamError

    with pytest.raises(WorkloadParamError):
        CyclePlan(measured=0, warmup=0)
    with pytest.raises(WorkloadParamError):
        CyclePlan(measured=1, warmup=-1)


class PausableFakeTrace(FakeTrace):
    """A trace that can be switched off and on (what untraced cycles need)."""

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass


class BenchmarkFakeWorkload(FakeWorkload):
    untraced_cycles = False


@pytest.mark.parametrize("benchmark", [True, False])
def test_benchmark_workloads_trace_every_cycle(benchmark: bool) -> None:
    """rmsnorm/linalg tables and their in-situ cross-check need every cycle of every case
    traced and marked (a GPU test caught untraced cycles there: 202 cycles, fewer marks)."""
    trace = PausableFakeTrace(StepClock())
    cls = BenchmarkFakeWorkload if benchmark else FakeWorkload
    workload = cls(FakeParams(kernels_per_cycle=1), trace)
    sources = Sources(trace=trace, samplers=[], warnings=[])
    outcome = run_collection(workload, CyclePlan(measured=16, warmup=0), sources, ENV,
                             CollectSettings(untraced_every=8))
    traced = outcome.run_file.runs[0].cycles.traced  # None: the column is left out
    untraced = 0 if traced is None else int((~np.asarray(traced, dtype=bool)).sum())
    assert untraced == (0 if benchmark else 4)  # two runs of two (overhead.RUN_LENGTH)


@pytest.mark.parametrize("benchmark", [True, False])
def test_built_in_workloads_record_their_schedule_for_the_report(benchmark: bool) -> None:
    """Issue 28 item 4 for built-in workloads: with the defaults, a workload's run file says
    how its cycles were split (the cost target) and a benchmark's says why every cycle was
    traced, so the report states the collector's cost or that cycle time is traced time."""
    from perfdiff.analysis.self_overhead import self_overhead_notes

    trace = PausableFakeTrace(StepClock())
    cls = BenchmarkFakeWorkload if benchmark else FakeWorkload
    workload = cls(FakeParams(kernels_per_cycle=1), trace)
    sources = Sources(trace=trace, samplers=[], warnings=[])
    outcome = run_collection(workload, CyclePlan(measured=30, warmup=2), sources, ENV,
                             CollectSettings())
    schedule = outcome.run_file.workload.params["untraced_schedule"]
    notes = self_overhead_notes(outcome.run_file, "run.json.gz")
    if benchmark:
        assert schedule == {"chosen_by": "off: a benchmark workload: each cycle is a sample "
                                         "of a case"}
        assert notes[0].startswith("run.json.gz: every measured cycle was traced (a benchmark "
                                   "workload: each cycle is a sample of a case), so cycle time "
                                   "is traced time")
    else:
        assert schedule["chosen_by"] == "cost target" and schedule["measured_cycles"] == 30
        assert any("measured cycles traced (chosen while it ran" in note for note in notes)
