"""Every report states the collector's cost on its run, for every kind of cycle (issue 28 item
4): with untraced cycles, the cost per traced cycle with an interval and the share traced;
without them, one line saying that cycle time is traced time, and why.

Two sources of run files: ``perfdiff collect -- python prog.py`` with the fake CUPTI backend,
one program per way cycles are cut while a program runs (``perfdiff.cycle()``, an NVTX range,
``--cycle-function``, optimizer steps, ``prof.step()``), each launch costing 2 ms more while
traced; and the real recordings under fixtures/ (every kind, recorded on the lent GPUs before
untraced cycles existed for most of them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfdiff.analysis.self_overhead import self_overhead_notes
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile
from tests.support.stand_in_programs import TORCH_STEPS, collect_program

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"

STEP = """
    launch("gemm", 0.1, traced_host_ms=1.5)
    time.sleep(0.003)
"""
HEAD = "import time\nfrom tests.support.fake_cupti import launch\n"
N = 60

STAND_INS = {  # the same stand-in torch as the found-cycle tests, plus nvtx and a module
    **TORCH_STEPS,
    "nvtx.py": "def push_range(message=None, **kw): pass\ndef pop_range(domain=None): pass\n",
    "steps.py": f"import time\nfrom tests.support.fake_cupti import launch\n"
                f"def train_step():{STEP}",
}

CUT = {"perfdiff.cycle()": "perfdiff.cycle() / mark_cycle()", "NVTX range": "NVTX range 'step'",
       "--cycle-function": "function steps:train_step", "optimizer step": "optimizer step (",
       "prof.step()": "torch.profiler prof.step()"}
PROGRAMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "perfdiff.cycle()": (HEAD + "import perfdiff\nfor i in range(N):\n    with perfdiff.cycle():"
                         + STEP.replace("\n    ", "\n        "), ()),
    "NVTX range": (HEAD + "import nvtx\nfor i in range(N):\n    nvtx.push_range('step')" + STEP
                   + "    nvtx.pop_range()\n", ("--cycle-range", "step")),
    "--cycle-function": ("import steps\nfor i in range(N):\n    steps.train_step()\n",
                         ("--cycle-function", "steps:train_step")),
    "optimizer step": (HEAD + "import torch\nopt = torch.optim.Optimizer()\nfor i in range(N):"
                       "\n    opt.step()" + STEP, ()),
    "prof.step()": (HEAD + "import torch\nprof = torch.profiler.profile()\nfor i in range(N):"
                    "\n    prof.step()" + STEP, ()),
}


def _collect(folder: Path, body: str, *options: str) -> RunFile:
    return collect_program(folder, body.replace("range(N)", f"range({N})"), *options,
                           files=STAND_INS)


@pytest.mark.parametrize("kind", sorted(PROGRAMS))
def test_every_kind_of_cycle_cut_while_the_program_runs_states_its_cost(
        kind: str, tmp_path: Path) -> None:
    body, options = PROGRAMS[kind]
    rf = _collect(tmp_path, body, *options)
    assert str(rf.workload.params["cycles_from"]).startswith(CUT[kind])
    notes = self_overhead_notes(rf, "run.json.gz")
    cost = [n for n in notes if "perfdiff's tracing overhead on this run +" in n]
    assert len(cost) == 1, (kind, rf.workload.params.get("cycles_from"), notes)
    assert "95 % interval" in cost[0]
    share = [n for n in notes if "measured cycles traced (chosen while it ran" in n]
    assert len(share) == 1 and "a traced cycle took 1." in share[0], notes
    schedule = rf.workload.params["untraced_schedule"]
    assert schedule["traced_share"] < 0.5  # 1.5 ms on 3 ms: r = 1.5, the target needs ~0.2


def test_a_run_too_short_for_an_untraced_run_says_every_cycle_was_traced(
        tmp_path: Path) -> None:
    rf = _collect(tmp_path, PROGRAMS["perfdiff.cycle()"][0].replace("range(N)", "range(7)"))
    (note,) = self_overhead_notes(rf, "run.json.gz")
    assert note == ("run.json.gz: all 5 measured cycles were traced (too few for an untraced "
                    "run: the first 6 are always traced; run more steps), so cycle time is "
                    "traced time and includes perfdiff's cost on the host, which this run does "
                    "not measure")


def test_untraced_every_zero_says_so(tmp_path: Path) -> None:
    rf = _collect(tmp_path, PROGRAMS["perfdiff.cycle()"][0], "--untraced-every", "0")
    (note,) = self_overhead_notes(rf, "run.json.gz")
    assert note.startswith("run.json.gz: every measured cycle was traced (--untraced-every 0), "
                           "so cycle time is traced time")


def test_fixed_windows_say_cycle_time_is_traced_time(tmp_path: Path) -> None:
    rf = _collect(tmp_path, PROGRAMS["perfdiff.cycle()"][0], "--cycle-ms", "10")
    assert rf.workload.params["untraced_schedule"] == {
        "chosen_by": "off: fixed windows (--cycle-ms)"}
    (note,) = self_overhead_notes(rf, "run.json.gz")
    assert "its cycles are fixed 10 ms windows, so none could be left untraced" in note


FIXTURE_KINDS = {
    # name: (how its cycles were cut, what the report must say)
    "cuda_graph/graph-bf16-pause-bug.json.gz": ("NVTX range 'step'", "overhead"),
    "kineto/kineto-gpt-normal-perfdiff.json.gz": (None, "overhead"),  # built-in, in-process
    "gpt2/gpt2-generate-sdpa.json.gz": ("NVTX range 'step'", "too few"),  # one untraced cycle
    "ddp-normal.json.gz": ("NVTX range 'step'", "traced"),
    "timm/timm-vit-bf16.json.gz": ("optimizer step (AdamW)", "traced"),
    "trainer-gpt2.json.gz": ("optimizer step (AdamW)", "traced"),
    "generate-function.json.gz": (
        "function transformers.generation.utils:GenerationMixin.generate", "traced"),
    "generate-found.json.gz": ("detected period of 288 launches", "found after the run"),
    "trainer-gpt2-ms200.json.gz": ("fixed 200 ms windows", "fixed 200 ms windows"),
    "gpt-infer-normal.json.gz": (None, "traced"),
    "train-step-normal.json.gz": (None, "traced"),
    "rmsnorm-h100.json.gz": (None, "traced"),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_KINDS))
def test_every_real_recording_states_its_cost_or_that_cycle_time_is_traced_time(
        name: str) -> None:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{path} not in this checkout")
    rf = load_run_file(path)
    cut, says = FIXTURE_KINDS[name]
    assert rf.workload.params.get("cycles_from") == cut
    notes = [n for n in self_overhead_notes(rf, name) if "held the interpreter" not in n]
    assert len(notes) == 1, notes
    (note,) = notes
    if says == "overhead":
        assert "perfdiff's tracing overhead on this run" in note and "95 % interval" in note
    elif says == "too few":
        assert "1 untraced cycle(s): too few for an interval" in note
    elif says == "traced":
        assert "every measured cycle was traced" in note
        assert note.endswith("so cycle time is traced time and includes perfdiff's cost on "
                             "the host, which this run does not measure")
    else:
        assert says in note and "cycle time is traced time" in note


def test_runs_merged_keep_each_runs_schedule_and_the_report_gives_their_range(
        tmp_path: Path) -> None:
    """``--runs 2`` (and the ranks of a job) merge shards whose schedules differ in what was
    measured: not a difference of experiment (no "merged with --force" warning), and not the
    first run's figures alone: each run's are kept, the report gives their range."""
    rf = _collect(tmp_path, PROGRAMS["perfdiff.cycle()"][0], "--runs", "2")
    assert not [w for w in rf.collection.warnings if "merged with --force" in w]
    schedules = rf.workload.params["untraced_schedule"]
    assert isinstance(schedules, list) and len(schedules) == 2
    assert all(s["chosen_by"] == "cost target" for s in schedules)
    notes = self_overhead_notes(rf, "run.json.gz")
    assert any(n.startswith("run.json.gz: 2 runs, ") and "of their measured cycles traced" in n
               for n in notes), notes
