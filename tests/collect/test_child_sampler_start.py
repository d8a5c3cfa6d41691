"""When the user-program child's recorder core starts its samplers (recorder.py
``Recorder.start_samplers``):
the cycle marks and NVML at the first cycle after CUDA is initialised, PM sampling at the
first measured cycle, so that the warm-up does not fill PM's ~3 s hardware buffer (a GPT-2
program with a 4.4 s first cycle had PM on 18.8 % of its measured cycles, H100 2026-11-25).

Stand-ins: torch (CUDA initialised), the marker, the PM and NVML samplers; the real
ChildCollector and its cycle recorder.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from perfdiff.collect import recorder as recorder_module
from perfdiff.collect.inject.child import ChildCollector
from perfdiff.collect.inject.config import CUPTI_BACKEND, InjectConfig
from tests.support.fake_cupti import FakeTrace

events: list[str] = []


class FakeSampler:
    def __init__(self, name: str) -> None:
        self.name = name
        self.warnings: list[str] = []

    def start(self) -> None:
        events.append(f"start {self.name}")

    def stop(self) -> list[Any]:
        return []


@pytest.fixture()
def collector(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ChildCollector:
    events.clear()
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True,  # type: ignore[attr-defined]
                                       current_device=lambda: 0)
    monkeypatch.setitem(sys.modules, "torch", torch)
    def no_marker(torch: Any, device: int, warnings: list[str], instead: str) -> None:
        events.append("marks")

    monkeypatch.setattr(recorder_module, "open_marker", no_marker)
    pm_module = types.ModuleType("perfdiff.collect.cupti.pm_sampling")
    pm_module.PmSampler = lambda *a, **k: FakeSampler("pm")  # type: ignore[attr-defined]
    pm_module.PmSamplingUnavailable = RuntimeError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "perfdiff.collect.cupti.pm_sampling", pm_module)
    nvml_process = types.ModuleType("perfdiff.collect.nvml.nvml_process")
    nvml_process.NvmlDefaultSampler = (  # type: ignore[attr-defined]
        lambda *a, **k: FakeSampler("nvml"))
    monkeypatch.setitem(sys.modules, "perfdiff.collect.nvml.nvml_process", nvml_process)
    nvml = types.ModuleType("perfdiff.collect.nvml.sampler")
    nvml.load_nvml = lambda: types.SimpleNamespace()  # type: ignore[attr-defined]
    nvml.NvmlUnavailable = RuntimeError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "perfdiff.collect.nvml.sampler", nvml)
    env = types.ModuleType("perfdiff.collect.environment")
    env.torch_device_info = lambda torch, device, nvml: types.SimpleNamespace(  # type: ignore[attr-defined]
        uuid="GPU-x")
    monkeypatch.setitem(sys.modules, "perfdiff.collect.environment", env)
    # the collector writes its shard at exit: into this test's folder (as root, a made-up
    # path was created and filled)
    config = InjectConfig(shard_dir=str(tmp_path), warmup=2, backend=CUPTI_BACKEND)
    return ChildCollector(config, FakeTrace())


def test_pm_starts_at_the_first_measured_cycle_nvml_and_marks_at_the_first(
        collector: ChildCollector) -> None:
    recorder = collector.recorder
    for i in range(4):
        recorder.begin_cycle("step", False)
        events.append(f"cycle {i}")
        recorder.end_cycle()
    assert events == ["marks", "start nvml", "cycle 0", "cycle 1", "start pm", "cycle 2",
                      "cycle 3"]


def test_without_warm_up_pm_starts_with_the_first_cycle(collector: ChildCollector) -> None:
    collector.recorder.warmup = 0
    collector.recorder.begin_cycle("step", False)
    assert events == ["marks", "start nvml", "start pm"]


def test_cycles_found_by_themselves_start_everything_at_once(
        collector: ChildCollector) -> None:
    collector.core.start_samplers()  # what found_cycles.py calls, with no warm-up to know of
    assert events == ["marks", "start nvml", "start pm"]


def test_a_program_that_never_initialises_cuda_through_torch_is_told_why_no_samples(
        collector: ChildCollector, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Triton/CuPy-only program: no marks, no NVML, no PM, and one line saying why."""
    monkeypatch.delitem(sys.modules, "torch")
    collector.recorder.begin_cycle("step", False)
    collector.recorder.end_cycle()
    collector.stop_samplers()
    assert events == []
    assert any("did not run" in w and "PM sampling and NVML" in w for w in collector.warnings)


def test_a_program_whose_cycles_are_found_after_it_ended_is_told_that_not_cuda(
        collector: ChildCollector) -> None:
    """GPT-2 generate with no marking option (H200, 2026-11-28): no cycle began while it ran
    (detected period), so the samplers never started, and the run file said the program never
    initialised CUDA through PyTorch, which it had. The line now names the real reason."""
    collector.stop_samplers()
    assert events == []
    assert len(collector.warnings) == 1
    assert collector.warnings[0].startswith(
        "PM sampling and NVML did not run: they start at the first cycle cut while the "
        "program runs, and none was")
    assert "never did" not in collector.warnings[0]


def test_pm_not_reached_because_no_measured_cycle_is_said(collector: ChildCollector) -> None:
    collector.recorder.begin_cycle("step", False)  # a warm-up cycle only
    collector.recorder.end_cycle()
    collector.stop_samplers()
    assert "start pm" not in events
    assert any(w.startswith("PM sampling did not run") for w in collector.warnings)


def test_fixed_windows_say_their_samplers_did_not_run_and_why(
        collector: ChildCollector, tmp_path: Path) -> None:
    """--cycle-ms windows are cut after the run, so no cycle mark starts the samplers: the
    run file said the program never initialised CUDA, which was not why."""
    config = InjectConfig(shard_dir=str(tmp_path), cycle_ms=50.0, backend=CUPTI_BACKEND)
    windows = ChildCollector(config, FakeTrace())
    windows.stop_samplers()
    assert events == []
    assert windows.warnings == [
        "PM sampling and NVML did not run: they start at a cycle mark, and --cycle-ms windows "
        "are cut after the run; mark cycles (--cycle-range, --cycle-function, perfdiff.cycle()) "
        "to have them; kernels are traced"]


def test_fixed_windows_of_a_program_that_marks_cycles_still_sample(
        collector: ChildCollector, tmp_path: Path) -> None:
    """perfdiff.cycle() marks in a --cycle-ms program start the samplers (no boundary marks:
    the windows are cut from launch records)."""
    config = InjectConfig(shard_dir=str(tmp_path), cycle_ms=50.0, backend=CUPTI_BACKEND,
                          warmup=0)
    windows = ChildCollector(config, FakeTrace())
    windows.recorder.begin_cycle("step", False)
    assert events == ["start nvml", "start pm"]
