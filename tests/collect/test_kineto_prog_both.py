"""scripts/gpu/kineto_prog.py --mode both on the CPU: the in-process recording's run file.

Why: ``--mode both`` records a program with perfdiff's own collector (``run_collection``) in
the process that then traces it with torch.profiler (fixtures/kineto/). The GPU run cannot be
repeated here, but what the script adds around the collector can: the step as a workload with
the settle in ``setup`` (so no settle kernel is recorded), the plan (5 warm-up cycles, then the
measured ones), the run file's provenance (workload name, params, command), and the check that
perfdiff's tracing is off before torch.profiler starts.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from perfdiff.collect.backends import Sources
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import Environment
from tests.support.fake_cupti import FakeTrace, launch

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu" / "kineto_prog.py"
ENV = Environment(host="h", driver_version=None, cuda_version=None, cupti_version=None,
                  torch_version=None, python_version="3.11", devices=())
FAKE_TORCH = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))


@pytest.fixture(scope="module")
def prog() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("kineto_prog", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["kineto_prog"] = module  # its dataclasses resolve annotations through it
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("kineto_prog", None)


def _step() -> None:
    launch("attention", 0.02)
    launch("mlp", 0.01)


def test_the_recording_holds_the_steps_after_the_settle_and_says_where_it_was_made(
        prog: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["scripts/gpu/kineto_prog.py", "--model", "gpt", "--mode", "both"]
    monkeypatch.setattr(sys, "argv", argv)
    params = prog.InProcessParams(model="gpt", variant="abnormal", settle_s=0.0,
                                  settle_steps=7, gap_ms=5.0, trace="t.pt.trace.json.gz")
    workload = prog.InProcessSteps(params, _step, FAKE_TORCH)
    out = tmp_path / "run.json.gz"
    sources = prog.record_in_process(workload, 25, out,
                                     sources=Sources(trace=FakeTrace()), environment=ENV)
    run_file = load_run_file(out)
    assert run_file.status.state == "complete"
    assert run_file.workload.name == "kineto_prog.py --mode both"
    p = run_file.workload.params
    assert p["recorded"].startswith("in-process: recorded by perfdiff.collect.session")
    assert "torch.profiler" in p["recorded"]
    assert (p["model"], p["variant"], p["trace"], p["gap_ms"]) == (
        "gpt", "abnormal", "t.pt.trace.json.gz", 5.0)
    assert (p["settled_steps"], p["warmup"], p["cycles"]) == (7, 5, 25)
    assert run_file.workload.command[1:] == tuple(argv)
    assert "kineto_prog.py" in p["collect_command"]
    run = run_file.runs[0]
    assert run.cycles.index.size == 30
    assert run.cycles.warmup[:5].all()  # then the last two of every 8 measured cycles left
    assert int((~run.cycles.warmup).sum()) == 19  # untraced, as in the separate recordings
    # the settle ran before tracing started: 2 kernels in each traced cycle, none outside
    kernels = run.kernels
    assert (kernels.cycle >= 0).all()
    per_cycle = np.bincount(kernels.cycle)
    assert set(per_cycle[per_cycle > 0].tolist()) == {2}
    assert kernels.name_id.size == 2 * 24  # 30 cycles, 6 of them untraced
    assert prog.check_tracing_off(sources, _step, lambda: None).startswith(
        "perfdiff tracing off")


def test_tracing_still_on_is_refused(prog: ModuleType) -> None:
    trace = FakeTrace()
    trace.start()  # never stopped: a step still hands the trace records
    try:
        with pytest.raises(RuntimeError, match="still on after the recording"):
            prog.check_tracing_off(Sources(trace=trace), _step, lambda: None)
    finally:
        trace.stop()
