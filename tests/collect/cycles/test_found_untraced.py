"""Cycles found by themselves leave runs of untraced cycles too (issue 28, item 1), through the
real ``perfdiff collect -- CMD`` path with the fake CUPTI backend.

torch is not installed on the CPU machines, so the program imports a stand-in package
``torch`` (written into the test's folder) with what FoundCycles hooks: torch.optim's global
post-step hook registry and torch.profiler's ``profile.step``. The collector hooks them as it
hooks torch's own (``when_imported``); nothing in perfdiff knows the stand-in.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from perfdiff.analysis.untraced_time import timed_untraced
from perfdiff.schema.model import RunFile
from tests.support.stand_in_programs import collect_program


def collect(folder: Path, body: str, *options: str) -> RunFile:
    return collect_program(folder, textwrap.dedent(body), *options)


def untraced_and_kernels(rf: RunFile) -> tuple[list[int], set[int]]:
    run = rf.runs[0]
    assert run.cycles.traced is not None
    untraced = np.flatnonzero(run.cycles.traced == 0).tolist()
    names = [rf.strings[int(i)].mangled for i in run.kernels.name_id]
    return untraced, {int(n.split("_")[0][1:]) for n in names if n.startswith("i")}


def test_optimizer_step_cycles_leave_runs_of_two_untraced(tmp_path: Path) -> None:
    rf = collect(tmp_path, """
    import time
    import torch
    from tests.support.fake_cupti import launch
    opt = torch.optim.Optimizer()
    for i in range(20):
        opt.step()  # cycle i starts here (the first step's hook starts cycle 0)
        launch(f"i{i}_k", 0.05)
        time.sleep(0.002)
    """, "--untraced-every", "8")
    untraced, iterations = untraced_and_kernels(rf)
    assert rf.workload.params["cycles_from"].startswith("optimizer step")
    # measured #7, #8, #15, #16 (a lead-in, a timed one), counted after the two warm-ups
    assert untraced == [8, 9, 16, 17]
    assert iterations == set(range(20)) - set(untraced)  # no kernel recorded in them
    assert np.flatnonzero(timed_untraced(rf.runs[0].cycles)).tolist() == [9, 17]
    assert rf.workload.params["untraced_pause"] == ["cupti_activity"]


def test_profiler_step_cycles_leave_runs_of_two_untraced(tmp_path: Path) -> None:
    rf = collect(tmp_path, """
    import torch
    from tests.support.fake_cupti import launch
    prof = torch.profiler.profile()
    for i in range(12):
        prof.step()
        launch(f"i{i}_k", 0.05)
    """, "--untraced-every", "8")
    untraced, iterations = untraced_and_kernels(rf)
    assert rf.workload.params["cycles_from"] == "torch.profiler prof.step()"
    assert untraced == [8, 9]  # measured #7, #8, after the two warm-ups
    assert iterations == set(range(12)) - {8, 9}


def test_a_program_that_raises_after_its_optimizer_steps_says_how_many_cycles_ran(
        tmp_path: Path) -> None:
    """The run file of a program cut short says how far it got in the cycles it has: its
    optimizer steps (a ResNet-50 run's said "after 0 cycles" over 49, H100 2026-12-07)."""
    rf = collect_program(tmp_path, textwrap.dedent("""
    import torch
    from tests.support.fake_cupti import launch
    opt = torch.optim.Optimizer()
    for i in range(9):
        launch(f"i{i}_k", 0.05)
        opt.step()
    raise BrokenPipeError("[Errno 32] Broken pipe")
    """), returncode=1)
    assert rf.status.state == "incomplete"
    assert "program raised BrokenPipeError" in (rf.status.reason or "")
    assert "(after 8 cycles)" in (rf.status.reason or "")
