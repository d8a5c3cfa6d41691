"""Buffer hand-overs inside measured cycles become one warning naming those cycles."""

from __future__ import annotations

import numpy as np

from perfdiff.collect.cupti.handovers import handover_warning
from perfdiff.schema.model import CycleTable


def _cycles() -> CycleTable:
    # cycle 0 warm-up [0, 100), measured 1 [100, 200), 2 [200, 300), 3 [300, 400)
    return CycleTable(
        index=np.arange(4, dtype=np.int64),
        start_ns=np.array([0, 100, 200, 300], dtype=np.int64),
        end_ns=np.array([100, 200, 300, 400], dtype=np.int64),
        label=("a",) * 4,
        warmup=np.array([True, False, False, False]),
    )


def test_no_hand_over_inside_a_measured_cycle_is_no_warning() -> None:
    # inside the warm-up cycle, and after the last cycle (the final flush)
    assert handover_warning([(10, 50, 1000), (500, 9_000_000, 136_000)], _cycles()) is None
    assert handover_warning([], _cycles()) is None


def test_hand_overs_name_the_cycles_they_overlap_and_the_longest_hold() -> None:
    text = handover_warning([(150, 100_150, 10), (290, 3_000_310, 136_473)], _cycles())
    assert text is not None
    assert "during 3 measured cycle(s) (cycle 1, 2, 3)" in text
    assert "up to 3.0 ms" in text and "known limits" in text
    assert "\n" not in text


def test_a_parked_buffer_is_no_hold_worth_a_warning() -> None:
    """With deferred decoding a hand-over only parks the buffer (microseconds)."""
    assert handover_warning([(150, 150 + 99_999, 0), (250, 262, 0)], _cycles()) is None
