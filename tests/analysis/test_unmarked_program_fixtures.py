"""Issue 14 on the H100 recordings: programs nobody edited (fixtures/README.md, "Unmarked").

- An unmodified HF ``Trainer`` (GPT-2 small, 50 steps), recorded with no cycle option, with
  and without gradient checkpointing: one cycle per optimizer step, and the pair reported
  slower by what the Trainer's own steady-state steps/s said, with the recomputed forward
  kernels launched twice as often per cycle.
- The same pair in ``--cycle-ms 200`` windows: slower per iteration (throughput), never
  "no change".
- A ``model.generate`` loop: one cycle per call with ``--cycle-function``; with no option, the
  detected period, and every kernel in the cycle it was launched in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.report.markdown import render_markdown
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile
from perfdiff.schema.periods import detect_period
from tests.door import load_side

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FAST = CompareOptions(bootstrap_resamples=300)

# printed by scripts/gpu/cycles_trainer.py in the same runs (log of scripts/gpu/cycles_check.sh):
# the Trainer's own steps/s over steps 7-50 (its step-end callbacks), normal / checkpointed
STEADY_STEPS_PER_S = {"found": (20.875, 10.194), "windows": (18.123, 11.604)}
GENERATE_CALLS = 6


def fixture(name: str) -> Path:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"fixture {path} is absent")
    return path


def compare(normal: str, abnormal: str) -> Comparison:
    n, a = load_side(fixture(normal)), load_side(fixture(abnormal))
    return compare_tables(n.table, a.table, FAST, normal_meta=n.meta, abnormal_meta=a.meta)


def expected_change_pct(key: str) -> float:
    normal, checkpointed = STEADY_STEPS_PER_S[key]
    return 100.0 * (normal / checkpointed - 1.0)


def assert_launch_order_cycles(rf: RunFile) -> None:
    """In launch (correlation id) order, cycle numbers never go back and every cycle is one
    contiguous stretch: no kernel sits in a cycle other than the one it was launched in."""
    k = rf.runs[0].kernels
    order = np.argsort(k.correlation_id, kind="stable")
    cycles = k.cycle[order]
    inside = cycles[cycles >= 0]
    assert (np.diff(inside) >= 0).all()
    first = int(np.flatnonzero(cycles >= 0)[0])
    last = int(np.flatnonzero(cycles >= 0)[-1])
    assert (cycles[first:last + 1] >= 0).all()  # nothing outside between the cycles


def test_trainer_cycles_are_optimizer_steps() -> None:
    for name in ("trainer-gpt2.json.gz", "trainer-gpt2-gc.json.gz"):
        rf = load_run_file(fixture(name))
        cycles = rf.runs[0].cycles
        assert rf.workload.params["cycles_from"] == "optimizer step (AdamW)"
        assert set(cycles.label) == {"optimizer step"}
        assert cycles.index.size == 50 - 1  # from each step to the next, 50 steps
        assert int(cycles.warmup.sum()) == 5
        assert not rf.collection.warnings
        assert_launch_order_cycles(rf)


def test_trainer_with_checkpointing_is_slower_by_the_trainers_steps_per_second() -> None:
    result = compare("trainer-gpt2.json.gz", "trainer-gpt2-gc.json.gz")
    assert result.cycle_time.verdict == "slower"
    expected = expected_change_pct("found")  # +104.8 %
    assert result.cycle_time.delta_pct == pytest.approx(expected, rel=0.15)
    assert result.normal.cycle_definition == "optimizer step"


def test_recomputed_forward_kernels_are_launched_twice_as_often() -> None:
    result = compare("trainer-gpt2.json.gz", "trainer-gpt2-gc.json.gz")
    changed = {c.function: (c.launches_normal, c.launches_abnormal)
               for c in result.launch_changes}
    attention = [v for f, v in changed.items() if "flash_fprop" in f]
    layer_norm = [v for f, v in changed.items() if "vectorized_layer_norm_kernel" in f]
    forward_gemm = [v for f, v in changed.items() if f.startswith("nvjet") and "bias" in f]
    assert attention == [(12.0, 24.0)]  # one attention forward per layer, twice with recompute
    assert layer_norm and all(a - n == 24.0 for n, a in layer_norm)  # two per layer
    assert len(forward_gemm) >= 3 and all(a == 2 * n for n, a in forward_gemm)
    # no backward kernel is launched more often: recomputation is forward work only
    assert not any("bprop" in f or "backward" in f for f in changed)
    text = render_markdown(result)
    assert "Launched a different number of times per cycle" in text
    assert "flash_fprop" in text.split("Launched a different number")[1].split("**Recommend")[0]


def test_trainer_in_windows_is_slower_per_iteration() -> None:
    result = compare("trainer-gpt2-ms200.json.gz", "trainer-gpt2-gc-ms200.json.gz")
    assert result.cycle_time.verdict == "slower"  # never "no change" on 200 -> 200 ms
    expected = expected_change_pct("windows")  # +56.2 %
    assert result.cycle_time.delta_pct == pytest.approx(expected, rel=0.15)
    assert result.normal.cycle_definition == "iteration (from fixed windows)"
    notes = " ".join(result.notes)
    assert "fixed 200 ms windows" in notes and "throughput" in notes
    assert "detected period of" in notes


def test_generate_with_cycle_function_is_one_cycle_per_call() -> None:
    rf = load_run_file(fixture("generate-function.json.gz"))
    cycles = rf.runs[0].cycles
    assert cycles.index.size == GENERATE_CALLS
    label = "function transformers.generation.utils:GenerationMixin.generate"
    assert set(cycles.label) == {label} and rf.workload.params["cycles_from"] == label
    counts = np.bincount(rf.runs[0].kernels.cycle[rf.runs[0].kernels.cycle >= 0])
    assert counts.size == GENERATE_CALLS and len(set(counts.tolist())) == 1  # same work each
    assert_launch_order_cycles(rf)


def test_generate_with_no_option_gets_the_detected_period() -> None:
    rf = load_run_file(fixture("generate-found.json.gz"))
    run = rf.runs[0]
    (warning,) = rf.collection.warnings
    assert "detected period of 288 launches" in warning and "--cycle-function" in warning
    assert rf.workload.params["cycles_from"] == "detected period of 288 launches"
    assert set(run.cycles.label) == {"detected period"}
    # one decode step of GPT-2 small (12 layers) per cycle: 24 new tokens x 6 calls, less the
    # stretch before the first anchor launch and after the last
    assert 130 <= run.cycles.index.size <= GENERATE_CALLS * 24
    assert_launch_order_cycles(rf)
    k = run.kernels
    order = np.argsort(k.correlation_id, kind="stable")
    again = detect_period(k.name_id[order])
    assert again.period_launches == 288
    per_cycle = np.bincount(k.cycle[k.cycle >= 0])
    assert np.median(per_cycle) == 288


def test_windows_count_launches_per_iteration() -> None:
    """In windows, launch counts are per detected iteration: the recomputed attention forward
    is launched about 12 -> 24 times per iteration, as with optimizer-step cycles."""
    result = compare("trainer-gpt2-ms200.json.gz", "trainer-gpt2-gc-ms200.json.gz")
    (attention,) = [c for c in result.launch_changes if "flash_fprop" in c.function]
    assert attention.launches_normal == pytest.approx(12.0, rel=0.1)
    assert attention.launches_abnormal == pytest.approx(24.0, rel=0.1)
