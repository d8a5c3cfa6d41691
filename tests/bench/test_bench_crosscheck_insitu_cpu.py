"""The in-situ cross-check's collection on CPU torch: the rmsnorm and linalg workloads, run
through the real session with a fake trace and fake events, hand the timer exactly the run
file's cycles, each event pair inside its cycle's host interval.

Why: pairing by order (``pair_events``) is only sound if the timer sees the same cycles as
the run file, in the same order, and if the events sit where the docs say: after the cycle
opened, before it closed. The workloads reach the hook unchanged (``marker.cycle`` and
``perfdiff.markers.call_returned``), so this runs them as they run on the GPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import bench.bench_crosscheck as bench_crosscheck  # noqa: E402
from perfdiff.collect.backends import Sources  # noqa: E402
from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace  # noqa: E402
from perfdiff.collect.session import CollectSettings  # noqa: E402
from perfdiff.collect.workloads import linalg, rmsnorm  # noqa: E402
from perfdiff.collect.workloads.base import CyclePlan, Workload  # noqa: E402
from perfdiff.errors import InputError  # noqa: E402
from perfdiff.markers import set_active_recorder  # noqa: E402
from perfdiff.schema.model import Environment  # noqa: E402
from tests.factories import StepClock  # noqa: E402

ENV = Environment(host="h", driver_version=None, cuda_version=None, cupti_version=None,
                  torch_version=None, python_version="3.11", devices=())


def _script() -> ModuleType:
    return bench_crosscheck


class Trace:
    """A trace backend with no records: the cycles and their stamps are what is tested."""

    name = "cupti_activity"

    def __init__(self, clock: StepClock) -> None:
        self.clock_ns = clock
        self.warnings: list[str] = []

    def start(self) -> None:
        pass

    def drain(self) -> None:
        return None

    def records_so_far(self) -> int:
        return 0

    def stop(self) -> RawTrace:
        return RawTrace()


class Event:
    """Stamps the shared clock on record(); elapsed_time in ms, as torch.cuda.Event."""

    def __init__(self, clock: StepClock, made: list[Event]) -> None:
        self.clock = clock
        self.at = -1
        made.append(self)

    def record(self) -> None:
        self.at = self.clock()

    def elapsed_time(self, end_event: Event) -> float:
        return (end_event.at - self.at) / 1e6


@pytest.fixture
def cpu_torch(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(rmsnorm, "import_torch_cuda", lambda: torch)
    monkeypatch.setattr(linalg, "import_torch_cuda", lambda: torch)
    return torch


def _collect(workload: Workload, plan: CyclePlan) -> tuple[Any, list[Any], list[Event], int]:
    cc = _script()
    clock = StepClock()
    made: list[Event] = []
    synced: list[bool] = []
    sources = Sources(trace=Trace(clock), synchronize=lambda: synced.append(True))
    run_file, calls = cc.collect_with_events(
        workload, plan, sources, ENV, CollectSettings(pm_sampling=False),
        lambda: Event(clock, made), device="cpu", extra_params={})
    assert synced  # the events are read only after a synchronize
    assert set_active_recorder(None) is None  # no recorder left installed
    return run_file, calls, made, len(run_file.runs[0].cycles.index)


@pytest.mark.usefixtures("cpu_torch")
def test_rmsnorm_every_cycle_has_its_event_pair_inside_it() -> None:
    params = rmsnorm.RmsNormParams(impls="naive,torchscript", dtypes="float32",
                                   directions="forward,backward", batch=2, seq="8",
                                   hidden="61")
    plan = CyclePlan(measured=3, warmup=1)
    run_file, calls, made, n_cycles = _collect(rmsnorm.RmsNorm(params), plan)
    cycles = run_file.runs[0].cycles
    assert n_cycles == 4 * 4 and len(calls) == n_cycles and len(made) == 2 * n_cycles
    assert [c[0] for c in calls] == list(cycles.label)
    assert [c[1] for c in calls] == cycles.warmup.tolist()
    starts, ends = np.asarray(made[0::2]), np.asarray(made[1::2])
    for k in range(n_cycles):
        assert cycles.start_ns[k] < starts[k].at < ends[k].at < cycles.end_ns[k]
        assert calls[k][2] == pytest.approx((ends[k].at - starts[k].at) / 1e6)
    paired = _script().pair_events(list(cycles.label), cycles.warmup.tolist(), calls)
    assert sorted(paired) == sorted(set(cycles.label))
    assert all(len(v) == plan.measured for v in paired.values())


@pytest.mark.usefixtures("cpu_torch")
def test_linalg_cpu_cases_have_no_end_event() -> None:
    params = linalg.LinalgParams(batches="[],[2]", sizes="4", cpu=True)
    run_file, calls, _, n_cycles = _collect(linalg.Linalg(params), CyclePlan(measured=2, warmup=0))
    labels = list(run_file.runs[0].cycles.label)
    assert n_cycles == 8 and [c[0] for c in calls] == labels
    gpu = [np.isfinite(ms) for label, _, ms in calls if "device=cuda" in label]
    cpu = [np.isfinite(ms) for label, _, ms in calls if "device=cpu" in label]
    assert all(gpu) and len(gpu) == 4 and not any(cpu) and len(cpu) == 4


@pytest.mark.usefixtures("cpu_torch")
def test_an_incomplete_collection_is_refused_in_one_line() -> None:
    class Failing(rmsnorm.RmsNorm):
        def run(self, marker: Any, plan: CyclePlan) -> None:
            with marker.cycle("x"):
                pass
            raise RuntimeError("boom")

    params = rmsnorm.RmsNormParams(impls="naive", dtypes="float32", directions="forward",
                                   batch=1, seq="8", hidden="32")
    with pytest.raises(InputError, match="did not complete: workload raised RuntimeError"):
        _collect(Failing(params), CyclePlan(measured=1, warmup=0))
    assert set_active_recorder(None) is None


class KernelTrace(Trace):
    """A trace in which every call launches one 20 us 'kernel' at its start event."""

    def __init__(self, clock: StepClock) -> None:
        super().__init__(clock)
        self.raw = RawTrace()

    def launch(self, at: int) -> None:
        corr = len(self.raw.kernels) + 1
        self.raw.api.append(ApiRecord(corr, at))
        # a stream per call: the step clock puts calls closer than 20 us, and kernels that
        # overlap on one stream are dropped by the collector (collect/cupti/stream_overlap.py)
        self.raw.kernels.append(KernelRecord("_Z4calli", 0, 7 + corr, at + 500, at + 20_500,
                                             corr, (1, 1, 1), (128, 1, 1)))

    def stop(self) -> RawTrace:
        return self.raw


def test_the_command_runs_end_to_end_on_fakes(monkeypatch: pytest.MonkeyPatch,
                                              cpu_torch: Any, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """--in-situ through main(): sources, events and the workload's torch are fakes; the
    JSON, the table and the exit code are real. Each call's kernel runs 20 us from 0.5 us
    after its start event, and its end event comes 21 us after the start event: span 20 us
    against events 21 us, -4.76 %, within 5 % (rc 0) but not within 4 % (rc 1)."""
    import perfdiff.collect.sources as sources_module

    clock = StepClock()
    trace = KernelTrace(clock)
    opened = sources_module.OpenedSources(
        sources=Sources(trace=trace, synchronize=lambda: None), environment=ENV, device="cpu")
    monkeypatch.setattr(sources_module, "open_sources", lambda settings: opened)
    last_start: list[int] = []

    class CudaEvent(Event):
        def __init__(self, enable_timing: bool) -> None:
            assert enable_timing
            super().__init__(clock, [])

        def record(self) -> None:
            super().record()
            if len(last_start) % 2 == 0:  # start, end, start, end, ...
                trace.launch(self.at)
                last_start.append(self.at)
            else:
                self.at = last_start[-1] + 21_000
                last_start.append(self.at)

    monkeypatch.setattr(cpu_torch.cuda, "Event", CudaEvent)
    out, run_out = tmp_path / "insitu.json", tmp_path / "insitu.json.gz"
    argv = ["--in-situ", "rmsnorm", "-p", "impls=naive", "-p", "dtypes=float32", "-p", "seq=8",
            "-p", "hidden=61", "-p", "batch=2", "--cycles", "3", "--warmup", "1",
            "--measure", "span", "--json", str(out), "--save-run", str(run_out)]
    assert _script().main(argv) == 0 and run_out.exists()
    doc = json.loads(out.read_text())
    summary, rows = doc["summary"], doc["rows"]
    assert summary["mode"] == "in-situ" and summary["measure"] == "span"
    assert summary["cases_over_20us"] == 2 and summary["within_limit"] == 2
    assert [r["case"] for r in rows] == [
        f"impl=naive dtype=float32 direction={d} shape=2x8x61" for d in ("forward", "backward")]
    for row in rows:
        assert row["n"] == 3 and row["event_ms"] == pytest.approx(0.021)
        assert row["span_ms"] == pytest.approx(0.020)
        assert row["diff_span_pct"] == pytest.approx(-100 / 21)
        assert row["paired_diff_span_pct"] == pytest.approx(-100 / 21)
        assert row["paired_diff_span_us"] == pytest.approx(-1.0)
    printed = capsys.readouterr().out
    assert rows[0]["case"] in printed and '"mode": "in-situ"' in printed
    last_start.clear()
    trace.raw = RawTrace()
    assert _script().main([*argv, "--limit-pct", "4"]) == 1
