"""The cost-driven share of traced cycles, end to end: ``perfdiff collect -- python prog.py``
with the fake CUPTI backend, on a program whose traced cycles cost 1.5 x its untraced ones
(each launch sleeps 2 ms more while tracing is on, as CUPTI's per-launch work lengthens a
host-bound step), then the report's lines about the collector's cost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from perfdiff.analysis.self_overhead import self_overhead_notes
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile
from tests.support.fake_cupti import PERFDIFF_FAKE, fake_env

PROGRAM = """
import time
import perfdiff
from tests.support.fake_cupti import launch
for i in range(130):
    with perfdiff.cycle():
        launch(f"c{i}_k", 0.1, traced_host_ms=2.0)
        time.sleep(0.004)
"""


def _collect(folder: Path, *options: str, **environ: str) -> RunFile:
    (folder / "prog.py").write_text(PROGRAM)
    env = fake_env(**environ)
    env.pop("PERFDIFF_INJECT_CONFIG", None)
    out = folder / "run.json.gz"
    proc = subprocess.run([*PERFDIFF_FAKE, "collect", "-o", str(out), "--warmup", "2", *options,
                           "--", sys.executable, "prog.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr
    return load_run_file(out)


def test_the_default_share_meets_the_cost_target_and_the_report_says_so(tmp_path: Path) -> None:
    rf = _collect(tmp_path)
    (run,) = rf.runs
    traced = run.cycles.traced
    assert traced is not None
    measured = 128
    schedule = rf.workload.params["untraced_schedule"]
    assert schedule["chosen_by"] == "cost target" and schedule["cost_target"] == 1.1
    assert schedule["measured_cycles"] == measured
    # 6 ms traced against 4 ms untraced: r = 1.5, share about 0.1 / 0.5 = 0.2 (the first six
    # cycles are traced before r is known, and paid back)
    assert 1.3 < schedule["traced_cost_ratio"] < 1.7
    assert schedule["traced_cost_ratio_low"] <= schedule["traced_cost_ratio"]
    assert schedule["traced_cost_ratio"] <= schedule["traced_cost_ratio_high"]
    assert 0.12 < schedule["traced_share"] < 0.3
    assert schedule["expected_cost"] <= 1.13
    assert int((traced[2:] == 1).sum()) == schedule["traced_cycles"]
    # the run file's own cycles say the same: whole-run cost from each kind's typical
    # duration (medians: this 2-core test box stalls a cycle now and then)
    dur = (run.cycles.end_ns - run.cycles.start_ns)[2:].astype(np.float64)
    is_traced = traced[2:] == 1
    typical = is_traced * np.median(dur[is_traced]) + ~is_traced * np.median(dur[~is_traced])
    assert float(typical.sum()) / (measured * float(np.median(dur[~is_traced]))) <= 1.12
    # kernels only in traced cycles, one per traced cycle
    assert run.kernels.name_id.size == int((traced == 1).sum())
    notes = self_overhead_notes(rf, "run.json.gz")
    assert any("measured cycles traced (chosen while it ran to keep the whole run within "
               "1.10 x" in note for note in notes), notes
    assert any("a traced cycle took 1." in note and "95 % interval" in note for note in notes)


def test_untraced_every_overrides_the_target(tmp_path: Path) -> None:
    rf = _collect(tmp_path, "--untraced-every", "8")
    schedule = rf.workload.params["untraced_schedule"]
    assert schedule["chosen_by"] == "--untraced-every 8" and "cost_target" not in schedule
    assert schedule["traced_share"] == 0.75
    assert schedule["expected_cost"] > 1.3  # 1 + 0.75 x 0.5: what the target avoids
    notes = self_overhead_notes(rf, "run.json.gz")
    assert any("75 % of 128 measured cycles traced (fixed by --untraced-every 8)" in note
               for note in notes), notes


def test_the_ranks_of_one_job_switch_together(tmp_path: Path) -> None:
    """A rank of a torchrun job (WORLD_SIZE > 1) takes the fixed pattern of 2 traced then 6
    untraced of every 8: each rank deciding from its own noise would drift from the others,
    and an untraced rank waiting in a collective for a traced one times the other's cost."""
    rf = _collect(tmp_path, WORLD_SIZE="2", RANK="1")
    (run,) = rf.runs
    assert run.rank == 1 and run.cycles.traced is not None
    measured = run.cycles.traced[2:].tolist()
    assert measured == ([1, 1] + [0] * 6) * 16
    schedule = rf.workload.params["untraced_schedule"]
    assert schedule["chosen_by"] == "ranks in lock-step: 2 traced then 6 untraced of every 8"
    assert schedule["traced_share"] == 0.25 and schedule["cost_target"] == 1.1
    notes = self_overhead_notes(rf, "run.json.gz")
    assert any("25 % of 128 measured cycles traced (ranks in lock-step: 2 traced then 6 "
               "untraced of every 8: a fixed pattern, so that the ranks of the job switch at "
               "the same cycles, for a target of 1.10 x)" in note for note in notes), notes
