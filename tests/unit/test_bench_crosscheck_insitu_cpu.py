"""The in-situ cross-check's collection on CPU torch: the rmsnorm and linalg workloads, run
through the real session with a fake trace and fake events, hand the timer exactly the run
file's cycles, each event pair inside its cycle's host interval.

Why: pairing by order (``pair_events``) is only sound if the timer sees the same cycles as
the run file, in the same order, and if the events sit where the docs say: after the cycle
opened, before it closed. The workloads reach the hook unchanged (``marker.cycle`` and
``perfdiff.markers.call_returned``), so this runs them as they run on the GPU.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from perfdiff.collect.backends import Sources  # noqa: E402
from perfdiff.collect.records import RawTrace  # noqa: E402
from perfdiff.collect.session import CollectSettings  # noqa: E402
from perfdiff.collect.workloads import linalg, rmsnorm  # noqa: E402
from perfdiff.collect.workloads.base import CyclePlan, Workload  # noqa: E402
from perfdiff.errors import InputError  # noqa: E402
from perfdiff.markers import set_call_timer  # noqa: E402
from perfdiff.schema.model import Environment  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_crosscheck.py"
ENV = Environment(host="h", driver_version=None, cuda_version=None, cupti_version=None,
                  torch_version=None, python_version="3.11", devices=())


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_crosscheck_insitu_cpu", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        self.now += 1000
        return self.now


class Trace:
    """A trace backend with no records: the cycles and their stamps are what is tested."""

    name = "cupti_activity"

    def __init__(self, clock: Clock) -> None:
        self.clock_ns = clock
        self.warnings: list[str] = []

    def start(self) -> None:
        pass

    def records_so_far(self) -> int:
        return 0

    def stop(self) -> RawTrace:
        return RawTrace()


class Event:
    """Stamps the shared clock on record(); elapsed_time in ms, as torch.cuda.Event."""

    def __init__(self, clock: Clock, made: list[Event]) -> None:
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
    clock = Clock()
    made: list[Event] = []
    synced: list[bool] = []
    sources = Sources(trace=Trace(clock), synchronize=lambda: synced.append(True))
    run_file, calls = cc.collect_with_events(
        workload, plan, sources, ENV, CollectSettings(pm_sampling=False),
        lambda: Event(clock, made), device="cpu", extra_params={})
    assert synced  # the events are read only after a synchronize
    assert set_call_timer(None) is None  # the timer is gone after the collection
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
    run_file, calls, _, n_cycles = _collect(linalg.Linalg(params), CyclePlan(measured=2))
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
        _collect(Failing(params), CyclePlan(measured=1))
    assert set_call_timer(None) is None
