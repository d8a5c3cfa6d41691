"""User programs on a real GPU: NVTX ``step`` ranges, ``perfdiff.cycle()``, a crash, ``--runs 5``.

Each program runs ``i % 3 + 1`` extra elementwise kernels in iteration i, so the kernels per
cycle, minus that number, must be the same in every measured cycle if (and only if) every
kernel landed in the cycle that launched it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.sides import side_from_run_file
from perfdiff.report.markdown import render_markdown
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import Run

pytestmark = pytest.mark.gpu
PERFDIFF = [sys.executable, "-c", "from perfdiff.cli.app import main; main()"]
STEPS = 12

PROGRAM = f"""
import sys, torch
import perfdiff
mode = sys.argv[1]
x = torch.randn(1024, 1024, device="cuda")
(x @ x).sum().item()                        # cuBLAS set-up outside the cycles

def body(i):
    y = x @ x
    for _ in range(i % 3 + 1):
        y = y * 1.0001
    return y.sum()

for i in range({STEPS}):
    if mode == "nvtx":
        import nvtx
        with nvtx.annotate("step"):
            body(i)
    elif mode == "torch-nvtx":
        with torch.cuda.nvtx.range("step"):
            body(i)
    else:
        with perfdiff.cycle():
            body(i)
    if mode == "crash" and i == 3:
        raise RuntimeError("planted failure")
torch.cuda.synchronize()
"""


def _collect(tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp / "run.json.gz"
    env = dict(os.environ)
    proc = subprocess.run([*PERFDIFF, "collect", "-o", str(out), *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc, out


def _extra_per_cycle(run: Run) -> list[int]:
    counts = np.bincount(run.kernels.cycle[run.kernels.cycle >= 0],
                         minlength=run.cycles.index.size)
    return [int(c) - (i % 3 + 1) for i, c in enumerate(counts)]


@pytest.mark.parametrize("mode", ["nvtx", "torch-nvtx", "marks"])
def test_each_iteration_is_one_cycle_with_its_kernels(tmp_path: Path, mode: str) -> None:
    if mode == "nvtx":
        pytest.importorskip("nvtx")
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    cycle_args = ["--cycle-range", "step"] if "nvtx" in mode else []
    pm = [] if mode == "nvtx" else ["--no-pm"]  # PM sampling's lazy start is tried once
    proc, out = _collect(tmp_path, "--warmup", "1", "--untraced-every", "0", *cycle_args, *pm,
                         "--", sys.executable, "prog.py", mode)
    assert proc.returncode == 0, proc.stderr
    rf = load_run_file(out)
    run = rf.runs[0]
    assert rf.status.state == "complete"
    assert run.cycles.index.size == STEPS
    extra = _extra_per_cycle(run)
    assert len(set(extra)) == 1 and extra[0] >= 1, extra
    if mode == "nvtx":  # CUPTI started at CUDA initialisation: PM sampling configures
        assert "pm_sampling" in rf.collection.sources, rf.collection.warnings
        assert not any("PM sampling unavailable" in w for w in rf.collection.warnings)
    print(mode, "cycles", run.cycles.index.size, "kernels", run.kernels.name_id.size,
          "extra per cycle", extra[0], "sources", rf.collection.sources,
          "warnings", rf.collection.warnings)


def test_a_crash_returns_its_code_and_keeps_the_cycles_before_it(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    proc, out = _collect(tmp_path, "--warmup", "0", "--no-pm", "--",
                         sys.executable, "prog.py", "crash")
    assert proc.returncode == 1
    rf = load_run_file(out)
    assert rf.status.state == "incomplete"
    assert "RuntimeError: planted failure" in (rf.status.reason or "")
    assert rf.runs[0].cycles.index.size == 4
    assert rf.runs[0].exit_code == 1


RUNS_PROGRAM = """
import sys, torch
import perfdiff
n = int(sys.argv[1])
x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
(x @ x).sum().item()
for i in range(25):
    with perfdiff.cycle():
        (x @ x).relu().sum().item()
"""


def test_five_runs_give_run_level_statistics(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(RUNS_PROGRAM))
    files = []
    for n in ("4096", "5120"):
        proc, out = _collect(tmp_path, "--warmup", "3", "--runs", "5", "--no-pm", "--no-nvml",
                             "--", sys.executable, "prog.py", n)
        assert proc.returncode == 0, proc.stderr
        files.append(out.rename(tmp_path / f"n{n}.json.gz"))
    sides = [side_from_run_file(load_run_file(f), source=str(f)) for f in files]
    for side in sides:
        assert sorted(set(side.table["run"])) == [0, 1, 2, 3, 4]
    c = compare_tables(sides[0].table, sides[1].table, CompareOptions(),
                       normal_meta=sides[0].meta, abnormal_meta=sides[1].meta)
    assert c.test_unit == "runs"
    slower = [r for r in c.rows if r.verdict == "slower"]
    assert slower and (slower[0].n_normal, slower[0].n_abnormal) == (5, 5)
    text = render_markdown(c)
    assert "run-level means" in text
    print(text[:3000])


OPTIMIZER_PROGRAM = f"""
import torch
x = torch.randn(1024, 1024, device="cuda")
w = torch.nn.Parameter(torch.randn(1024, 1024, device="cuda"))
opt = torch.optim.SGD([w], lr=1e-6)
(x @ x).sum().item()                        # cuBLAS set-up before the first step

for i in range({STEPS}):
    y = x @ w
    for _ in range(i % 3 + 1):
        y = y * 1.0001
    y.sum().backward()
    opt.step()                              # a found cycle starts after each step
    opt.zero_grad()
torch.cuda.synchronize()
"""


def test_optimizer_step_cycles_keep_their_kernels_after_api_records_stop(tmp_path: Path) -> None:
    """Found cycles are cut by boundary marks and CUPTI's launch API records stop after the
    first ones (found_marks.py): every kernel must still land in the cycle that launched it.
    Cycle k runs iteration k + 1 (it starts after step k; the last one is still open), whose
    ``(k + 1) % 3 + 1`` extra products each launch one kernel forward and one backward."""
    (tmp_path / "prog.py").write_text(textwrap.dedent(OPTIMIZER_PROGRAM))
    proc, out = _collect(tmp_path, "--warmup", "1", "--untraced-every", "0", "--no-pm",
                         "--", sys.executable, "prog.py")
    assert proc.returncode == 0, proc.stderr
    rf = load_run_file(out)
    run = rf.runs[0]
    from perfdiff.collect.cycles.found_marks import FoundMarks

    assert rf.workload.params.get("launch_records") == FoundMarks.PARAM, rf.workload.params
    assert run.cycles.index.size == STEPS - 1
    counts = np.bincount(run.kernels.cycle[run.kernels.cycle >= 0],
                         minlength=run.cycles.index.size)
    extra = [int(c) - 2 * ((i + 1) % 3 + 1) for i, c in enumerate(counts)]
    assert len(set(extra)) == 1 and extra[0] >= 1, extra
    assert not any("launch API record" in w or "boundary marks" in w
                   for w in rf.collection.warnings), rf.collection.warnings
    print("optimizer cycles", run.cycles.index.size, "extra per cycle", extra[0],
          "warnings", rf.collection.warnings)
