"""The user-program child starts CUPTI when the program initialises CUDA (deferred_trace.py).

A fake backend stands in for CUPTI; the real hook into PyTorch's lazy initialisation is
checked with the CPU torch in a subprocess (its queue of init callables must hold ours).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from perfdiff.collect.cycles.import_hooks import when_imported
from perfdiff.collect.inject.deferred_trace import DeferredTrace
from perfdiff.collect.records import RawTrace

ROOT = Path(__file__).resolve().parents[3]


class FakeBackend:
    def __init__(self, fail: bool = False) -> None:
        self.started = 0
        self.paused = False
        self.fail = fail
        self.warnings = ["from the backend"]

    def start(self) -> None:
        if self.fail:
            raise RuntimeError("no libcupti")
        self.started += 1

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def clock_ns(self) -> int:
        return 42

    def records_so_far(self) -> int:
        return 7

    def drain(self) -> None:
        pass

    def stop(self) -> RawTrace:
        raw = RawTrace()
        raw.dropped_records = 3
        return raw


def _torch_cuda(initialized: bool, queue: list[Any] | None) -> types.ModuleType:
    module = types.ModuleType("torch.cuda")
    module.is_initialized = lambda: initialized  # type: ignore[attr-defined]
    if queue is not None:
        module._lazy_call = queue.append  # type: ignore[attr-defined]
    return module


def _deferred(backend: FakeBackend) -> tuple[DeferredTrace, list[FakeBackend]]:
    made: list[FakeBackend] = []

    def factory() -> FakeBackend:
        made.append(backend)
        return backend
    return DeferredTrace(factory), made


def test_starts_inside_torchs_cuda_initialisation_and_not_before() -> None:
    backend = FakeBackend()
    trace, made = _deferred(backend)
    queue: list[Any] = []
    trace._on_torch_cuda(_torch_cuda(False, queue))
    assert made == [] and len(queue) == 1  # nothing of CUPTI touched yet
    queue[0]()  # torch runs its queue right after torch._C._cuda_init()
    assert backend.started == 1 and trace.started_by == "torch initialised CUDA"
    assert trace.clock_ns() == 42 and trace.records_so_far() == 7
    assert trace.warnings == ["from the backend"]  # no PM note: started after CUDA
    assert trace.stop().dropped_records == 3
    queue[0]()  # a second initialisation (never happens) starts nothing
    assert backend.started == 1


@pytest.mark.parametrize("case", ["initialised", "no_lazy_call", "clock_first", "cupy"])
def test_an_early_start_says_pm_may_be_missing(case: str) -> None:
    backend = FakeBackend()
    trace, _ = _deferred(backend)
    if case == "initialised":
        trace._on_torch_cuda(_torch_cuda(True, []))
    elif case == "no_lazy_call":
        trace._on_torch_cuda(_torch_cuda(False, None))
    elif case == "clock_first":
        assert trace.clock_ns() == 42
    else:
        trace._on_other_library(types.ModuleType("cupy"))
    assert backend.started == 1
    assert any("PM sampling is likely unavailable" in w for w in trace.warnings)


def test_a_program_that_never_reaches_cuda_ends_with_a_warning_and_no_kernels() -> None:
    trace, made = _deferred(FakeBackend())
    raw = trace.stop()
    assert made == [] and raw.as_columns().kernels.size == 0
    assert any("never initialised CUDA" in w for w in trace.warnings)


def test_pause_before_start_carries_over_and_resume_reaches_the_backend() -> None:
    backend = FakeBackend()
    trace, _ = _deferred(backend)
    trace.pause()
    trace.begin("test")
    assert backend.paused
    trace.resume()
    assert not backend.paused


def test_a_backend_that_cannot_start_is_a_warning_never_an_exception() -> None:
    trace, _ = _deferred(FakeBackend(fail=True))
    trace._from_torch_init()  # inside torch's initialisation: must not raise
    assert any("could not start (RuntimeError: no libcupti)" in w for w in trace.warnings)
    assert trace.clock_ns() > 0  # the host clock: there are no kernels to line up with
    assert trace.stop().as_columns().kernels.size == 0


def test_a_forked_child_never_starts_cupti() -> None:
    backend = FakeBackend()
    trace, made = _deferred(backend)
    trace._pid = os.getpid() + 1  # as in a DataLoader worker forked from the program
    trace.begin("torch initialised CUDA")
    assert made == [] and backend.started == 0


def test_hooks_on_one_module_all_run_in_order(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    name = "perfdiff_hook_probe_module"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[str] = []
    when_imported({name: lambda m: seen.append(f"a{m.VALUE}")})
    when_imported({name: lambda m: seen.append(f"b{m.VALUE}")})
    try:
        importlib.import_module(name)
        assert seen == ["a1", "b1"]
        when_imported({name: lambda m: seen.append("now")})  # already imported: at once
        assert seen == ["a1", "b1", "now"]
    finally:
        sys.modules.pop(name, None)


def test_the_hook_lands_in_the_real_torchs_cuda_init_queue() -> None:
    pytest.importorskip("torch")
    code = textwrap.dedent("""
        from perfdiff.collect.inject.deferred_trace import DeferredTrace
        trace = DeferredTrace(lambda: None)
        trace.start()
        import torch
        queued = [c for c, *_ in torch.cuda._queued_calls]
        assert trace._from_torch_init in queued, queued
        assert trace.started_by is None
        print("queued")
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "queued" in proc.stdout, proc.stderr[-2000:]
