"""Period detection on launch sequences recorded on the H100 (fixtures/), clean and noisy.

The fixtures were recorded with marked cycles, so each test knows the true iteration: the
launches of one marked cycle. Their kernel order (by GPU start; one stream) is the launch order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from perfdiff.schema.io import load_run_file
from perfdiff.schema.periods import cycle_bounds_ns, detect_period

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

Seq = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def recorded(name: str) -> Seq:
    """(name ids, times, marked cycle) of run 0 of a fixture, in launch order."""
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"fixture {path} is absent")
    kernels = load_run_file(path).runs[0].kernels
    order = np.argsort(kernels.start_ns, kind="stable")
    return kernels.name_id[order], kernels.start_ns[order], kernels.cycle[order]


def with_extra_launches(seq: npt.NDArray[np.int64], times: npt.NDArray[np.int64],
                        every: int, extra_id: int, seed: int = 1) -> Seq:
    """``seq`` with one extra launch inserted at a random place about every ``every``
    launches (an occasional logging kernel); returns (seq, times, inserted mask)."""
    rng = np.random.default_rng(seed)
    where = np.sort(rng.choice(np.arange(1, seq.size), size=seq.size // every, replace=False))
    new_seq = np.insert(seq, where, extra_id)
    new_times = np.insert(times, where, times[where - 1])
    inserted = np.zeros(new_seq.size, dtype=np.int64)
    inserted[where + np.arange(where.size)] = 1
    return new_seq, new_times, inserted


def test_gpt_infer_period_is_one_marked_cycle() -> None:
    seq, times, marked = recorded("gpt-infer-normal.json.gz")
    per_cycle = np.bincount(marked[marked >= 0])
    period = detect_period(seq, times)
    assert period.found, period.reason
    assert period.period_launches == int(np.median(per_cycle)) == 127
    assert period.confidence > 0.95
    # every detected cycle holds the launches of exactly one marked cycle
    for start, end in zip(period.starts.tolist(), period.ends.tolist(), strict=True):
        assert np.unique(marked[start:end]).size == 1
    assert "detected period of 127 launches" in period.describe()


def test_train_step_period_is_one_optimizer_step() -> None:
    seq, times, marked = recorded("train-step-normal.json.gz")
    measured = np.bincount(marked[marked >= 0])
    period = detect_period(seq, times)
    assert period.found
    assert period.period_launches == int(np.median(measured)) == 552
    assert period.matches.sum() >= 30


@pytest.mark.parametrize("every", [300, 1000])
def test_noisy_sequence_keeps_the_period(every: int) -> None:
    """An extra kernel now and then (a new name, at random places) does not change the
    period, and the cycles holding one still count as repeating."""
    seq, times, _ = recorded("gpt-infer-normal.json.gz")
    noisy, noisy_times, inserted = with_extra_launches(seq, times, every, int(seq.max()) + 1)
    period = detect_period(noisy, noisy_times)
    assert period.found
    assert period.period_launches == 127
    assert period.confidence > 0.9
    hit = [j for j, (a, b) in enumerate(zip(period.starts, period.ends, strict=True))
           if inserted[a:b].any()]
    assert hit and period.matches[hit].all()


def test_noise_of_a_known_kernel_name_keeps_the_period() -> None:
    seq, times, _ = recorded("train-step-adamw-loop.json.gz")
    common = int(np.bincount(seq).argmax())  # the most frequent kernel, launched once more
    noisy, noisy_times, _ = with_extra_launches(seq, times, 2000, common)
    clean = detect_period(seq, times)
    period = detect_period(noisy, noisy_times)
    assert clean.found and period.found
    assert period.period_launches == clean.period_launches
    assert period.confidence > 0.85


def test_step_wins_over_layer() -> None:
    """Per-layer kernels repeat with a short period, but the step holds them all: the step."""
    layer = [10, 11, 12, 13]
    step = [1, 2] + layer * 12 + [3, 4, 5]
    period = detect_period(np.asarray(step * 20))
    assert period.found
    assert period.period_launches == len(step)
    assert period.cycles == 19 and period.matches.all()


def test_cycle_starts_after_the_longest_pause() -> None:
    """Equally good anchors: the one launched after the host's pause opens each cycle."""
    step = [1, 2, 3, 4, 5]
    seq = np.asarray(step * 10)
    gaps = np.tile([1_000_000, 10, 10, 10, 10], 10)  # a pause before kernel 1
    times = np.cumsum(gaps)
    period = detect_period(seq, times)
    assert period.anchor_id == 1
    starts, ends = cycle_bounds_ns(period, times)
    assert (starts == times[period.starts]).all() and (ends[:-1] == starts[1:]).all()
    # a launch belongs to the cycle whose [start, end) holds its time, i.e. its own
    for j, (a, b) in enumerate(zip(period.starts, period.ends, strict=True)):
        inside = (times[a:b] >= starts[j]) & (times[a:b] < ends[j])
        assert inside.all()


@pytest.mark.parametrize("seq", [
    np.arange(200) % 7 + (np.arange(200) // 50),  # drifting, not repeating as a whole
    np.random.default_rng(3).integers(0, 40, 500),  # no order at all
    np.asarray([1, 2, 3, 1, 2, 3]),  # too short to be a repetition
])
def test_no_period_is_not_found(seq: npt.NDArray[np.int64]) -> None:
    period = detect_period(seq)
    assert not period.found
    assert period.cycles == 0
    assert period.describe().startswith("no repeating launch sequence found")


def test_random_sequence_says_why() -> None:
    period = detect_period(np.random.default_rng(5).integers(0, 40, 2000))
    assert not period.found and "needs 3" in period.reason


def test_times_must_match_launches() -> None:
    with pytest.raises(ValueError, match="3 launch times for 20 launches"):
        detect_period(np.arange(20) % 4, np.arange(3))


def test_head_segment_every_iteration_is_structure_not_noise() -> None:
    """Short layers: the head segment of a per-layer anchor is within the noise tolerance in
    length, but it comes back every iteration, so the layer is not taken for the period."""
    layer = [10, 11, 12]
    step = layer * 4 + [13]
    seq: list[int] = []
    for i in range(20):
        seq += step + ([14] if i % 7 == 3 else [])
    period = detect_period(np.asarray(seq))
    assert period.found and period.period_launches == 13
    assert period.matches.sum() >= 18
