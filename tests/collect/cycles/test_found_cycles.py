"""Cycles in programs nobody edited: ``--cycle-function``, optimizer steps, ``prof.step()`` and
the detected period, through the real ``perfdiff collect -- CMD`` path (fake CUPTI backend).

Programs name each kernel after the iteration that launches it (``i3_gemm``), so "kernels are
never assigned to a cycle they were not launched in" is checked launch by launch.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile
from tests.support.fake_cupti import PERFDIFF_FAKE, fake_env

HEADER = """\
import os, sys, time
from tests.support.fake_cupti import launch
"""
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="CPU torch is not installed in this environment")


def collect(folder: Path, body: str, *args: str) -> tuple[subprocess.CompletedProcess[str],
                                                         RunFile | None]:
    (folder / "prog.py").write_text(HEADER + textwrap.dedent(body))
    out = folder / "run.json.gz"
    env = fake_env({**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(folder), os.environ.get("PYTHONPATH", "")])})
    env.pop("PERFDIFF_INJECT_CONFIG", None)
    proc = subprocess.run([*PERFDIFF_FAKE, "collect", "-o", str(out), *args, "--", sys.executable,
                           "prog.py"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=180, check=False)
    return proc, (load_run_file(out) if out.exists() else None)


def kernel_cycles(rf: RunFile) -> list[tuple[str, int]]:
    run = rf.runs[0]
    return [(rf.strings[int(i)].mangled, int(c))
            for i, c in zip(run.kernels.name_id, run.kernels.cycle, strict=True)]


def iteration_of(name: str) -> int | None:
    """``i7_gemm`` -> 7; kernels launched outside an iteration carry no number."""
    head = name.split("_")[0]
    return int(head[1:]) if head.startswith("i") and head[1:].isdigit() else None


def assert_one_iteration_per_cycle(rf: RunFile) -> None:
    """Each cycle holds launches of exactly one iteration, and each launch one cycle."""
    seen: dict[int, set[int]] = {}
    for name, cycle in kernel_cycles(rf):
        iteration = iteration_of(name)
        if cycle >= 0:
            assert iteration is not None, (name, cycle)
            seen.setdefault(cycle, set()).add(iteration)
    assert all(len(v) == 1 for v in seen.values()), seen
    iterations = [next(iter(seen[c])) for c in sorted(seen)]
    assert iterations == sorted(set(iterations))  # one cycle per iteration, in order


# ------------------------------------------------------------------ --cycle-function

ANCHOR_MODULE = '''
from tests.support.fake_cupti import launch

class Engine:
    def step(self, i, depth=0):
        launch(f"i{i}_attn", 0.05)
        if depth < 2:           # recursive: must not open new cycles
            self.step(i, depth + 1)
        inner(i)
        launch(f"i{i}_mlp", 0.05)

    @staticmethod
    def helper(i):
        launch(f"i{i}_helper", 0.01)

def inner(i):
    Engine.helper(i)

def failing(i):
    launch(f"i{i}_before_raise", 0.01)
    raise ValueError("boom")
'''


def test_cycle_function_outermost_calls_only(tmp_path: Path) -> None:
    (tmp_path / "anchormod.py").write_text(ANCHOR_MODULE)
    proc, rf = collect(tmp_path, """
    import anchormod
    engine = anchormod.Engine()
    step = engine.step            # bound before and after resolution alike
    launch("setup", 0.1)
    for i in range(6):
        step(i)
        launch(f"between{i}", 0.01)  # outside any call: outside any cycle
    """, "--warmup", "1", "--cycle-function", "anchormod:Engine.step")
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    run = rf.runs[0]
    assert run.cycles.index.size == 6
    assert run.cycles.warmup.tolist() == [True] + [False] * 5
    assert set(run.cycles.label) == {"function anchormod:Engine.step"}
    assert rf.workload.params["cycles_from"] == "function anchormod:Engine.step"
    for name, cycle in kernel_cycles(rf):
        assert cycle == (iteration_of(name) if name.startswith("i") else -1), (name, cycle)


def test_cycle_function_call_that_raises_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "anchormod.py").write_text(ANCHOR_MODULE)
    proc, rf = collect(tmp_path, """
    import anchormod
    for i in range(4):
        try:
            anchormod.failing(i)
        except ValueError:
            pass
        anchormod.Engine().step(10 + i)
    """, "--warmup", "0", "--cycle-function", "anchormod:Engine.step")
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    assert rf.runs[0].cycles.index.size == 4  # the raising calls opened no cycle
    for name, cycle in kernel_cycles(rf):
        assert (cycle >= 0) == (not name.endswith("before_raise"))


def test_cycle_function_of_a_raising_anchor_keeps_depth(tmp_path: Path) -> None:
    """An exception that leaves the anchor closes its cycle as cut short, so the next call is
    an outermost call again (its cycle is kept)."""
    (tmp_path / "anchormod.py").write_text(ANCHOR_MODULE)
    proc, rf = collect(tmp_path, """
    import anchormod
    for i in range(5):
        try:
            anchormod.failing(i)
        except ValueError:
            pass
    """, "--warmup", "0", "--cycle-function", "anchormod:failing")
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    assert rf.runs[0].cycles.index.size == 0  # every call was cut short
    assert not any("marked no cycles" in w for w in rf.collection.warnings)


@pytest.mark.parametrize(("spec", "why"), [
    ("anchormod:Engine.nope", "anchormod has no Engine.nope"),
    ("nosuchmodule_xyz:f", "module nosuchmodule_xyz was never imported"),
    ("anchormod:inner", "it was never called"),
])
def test_cycle_function_that_marks_nothing_is_one_warning(tmp_path: Path, spec: str,
                                                          why: str) -> None:
    (tmp_path / "anchormod.py").write_text(ANCHOR_MODULE)
    proc, rf = collect(tmp_path, """
    import anchormod
    for i in range(3):
        launch(f"i{i}_k", 0.01)
    """, "--cycle-function", spec)
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    (warning,) = [w for w in rf.collection.warnings if "--cycle-function" in w]
    assert spec in warning and why in warning
    assert rf.runs[0].kernels.name_id.size == 3  # every kernel kept
    assert (rf.runs[0].kernels.cycle == -1).all()


def test_cycle_function_text_is_checked(tmp_path: Path) -> None:
    proc, _ = collect(tmp_path, "pass\n", "--cycle-function", "no colon here")
    assert proc.returncode == 2
    assert "MODULE:QUALNAME" in proc.stderr
    proc, _ = collect(tmp_path, "pass\n", "--cycle-function", "a:b", "--cycle-ms", "5")
    assert proc.returncode == 2 and "--cycle-ms and --cycle-function" in proc.stderr


# ------------------------------------------------------------------ found by themselves


@needs_torch
def test_optimizer_steps_are_cycles(tmp_path: Path) -> None:
    proc, rf = collect(tmp_path, """
    import torch
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    other = torch.optim.SGD(model.parameters(), lr=1e-3)   # a second optimizer: not the cut
    launch("setup", 0.1)
    for i in range(8):
        launch(f"i{i}_forward", 0.05)
        model(torch.ones(2, 4)).sum().backward()
        launch(f"i{i}_backward", 0.05)
        opt.step()
        other.step()
        opt.zero_grad()
        if i < 7:
            launch(f"i{i + 1}_zero", 0.01)   # after the step: the next iteration's cycle
    """, "--warmup", "2")
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    run = rf.runs[0]
    assert run.cycles.index.size == 7  # between consecutive steps of the first optimizer
    # the two warm-ups are flagged as they begin, so the schedule's first traced stretch (6
    # measured cycles) starts after them and covers the other five: none is left untraced
    assert run.cycles.warmup.tolist() == [True, True] + [False] * 5
    assert run.cycles.traced is not None and run.cycles.traced.tolist() == [1] * 7
    assert set(run.cycles.label) == {"optimizer step"}
    assert rf.workload.params["cycles_from"] == (
        "optimizer step (AdamW, the first of 2 optimizers stepped)")
    assert_one_iteration_per_cycle(rf)
    assert not any("marked no cycles" in w for w in rf.collection.warnings)


@needs_torch
def test_profiler_steps_are_cycles(tmp_path: Path) -> None:
    proc, rf = collect(tmp_path, """
    import torch
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(6):
            launch(f"i{i}_a", 0.05)
            launch(f"i{i}_b", 0.05)
            prof.step()
    """, "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    assert rf.runs[0].cycles.index.size == 5
    assert rf.workload.params["cycles_from"] == "torch.profiler prof.step()"


def test_nothing_repeating_is_one_warning_and_no_cycles(tmp_path: Path) -> None:
    proc, rf = collect(tmp_path, """
    launch("load_weights", 0.2)
    for i in range(20):
        for layer in range(4):
            launch(f"i{i}_ln", 0.01); launch(f"i{i}_gemm", 0.02); launch(f"i{i}_act", 0.01)
        launch(f"i{i}_head", 0.02)
        if i % 7 == 3:
            launch(f"i{i}_log_item", 0.01)   # an extra kernel now and then
    """, "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    # every kernel name carries its iteration: nothing repeats, so nothing is cut
    assert rf.runs[0].cycles.index.size == 0
    assert rf.workload.params["cycles_from"] == "none"
    assert rf.runs[0].kernels.name_id.size == 1 + 20 * 13 + 3  # every kernel kept
    (warning,) = [w for w in rf.collection.warnings if "marked no cycles" in w]
    assert "no optimizer step" in warning and "--cycle-function" in warning


def test_detected_period_on_repeating_names(tmp_path: Path) -> None:
    proc, rf = collect(tmp_path, """
    launch("load_weights", 0.2)
    for i in range(20):
        time.sleep(0.002)                 # the host's pause between iterations
        for layer in range(4):
            launch("ln", 0.01); launch("gemm", 0.02); launch("act", 0.01)
        launch("head", 0.02)
        if i % 7 == 3:
            launch("log_item", 0.01)      # an extra kernel now and then
    launch("save", 0.1)
    """, "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    run = rf.runs[0]
    assert rf.workload.params["cycles_from"] == "detected period of 13 launches"
    assert set(run.cycles.label) == {"detected period"}
    assert run.cycles.index.size == 19  # from one iteration's start to the next
    (warning,) = [w for w in rf.collection.warnings if "detected period" in w]
    assert "--cycle-function" in warning
    # each cycle holds one iteration: 13 launches, or 14 with the extra one
    counts = np.bincount(run.kernels.cycle[run.kernels.cycle >= 0])
    assert set(counts.tolist()) <= {13, 14}
    names = [rf.strings[int(i)].mangled for i in run.kernels.name_id]
    outside = {n for n, c in zip(names, run.kernels.cycle.tolist(), strict=True) if c < 0}
    assert {"load_weights", "save"} <= outside


def test_cycle_function_of_the_script_itself_says_how_to_name_it(tmp_path: Path) -> None:
    proc, rf = collect(tmp_path, """
    def step(i):
        launch(f"i{i}_k", 0.01)
    for i in range(3):
        step(i)
    """, "--cycle-function", "__main__:step")
    assert proc.returncode == 0, proc.stderr
    assert rf is not None
    (warning,) = [w for w in rf.collection.warnings if "--cycle-function" in w]
    assert "__main__ has no step" in warning and "python -c 'import script" in warning
