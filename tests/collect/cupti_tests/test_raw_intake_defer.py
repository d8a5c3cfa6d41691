"""Buffers kept undecoded until a cycle ends (RawIntake.defer, decode_pending), over buffers
built like CUPTI 13.4's (tests/collect/cupti_tests/test_decode.py): CUPTI's hand-over only parks the
buffer, the decode runs where the program's cycle has ended, nothing is lost or reordered,
and a pile past MAX_PENDING_BYTES is decoded at the hand-over as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from perfdiff.collect.columns import concat
from perfdiff.collect.cupti import raw_intake
from perfdiff.collect.cupti.raw_intake import RawIntake
from tests.collect.cupti_tests.test_decode import LAYOUT, _kernel


def _intake() -> RawIntake:
    clock = [0]

    def now() -> int:
        clock[0] += 1000
        return clock[0]
    return RawIntake(None, LAYOUT, now, buffer_bytes=64 * 1024)  # type: ignore[arg-type]


def _complete(intake: RawIntake, first: int, n: int) -> None:
    """CUPTI asks for a buffer, fills it with kernels ``first..first+n-1``, hands it back."""
    address: list[Any] = [0]
    size: list[Any] = [0]
    intake._on_request(address, size, [0])
    data = np.frombuffer(b"".join(_kernel(i) for i in range(first, first + n)), np.uint8)
    intake._lent[address[0]][:data.size] = data
    intake._on_complete(None, 0, address[0], size[0], data.size)


def _correlations(intake: RawIntake) -> list[int]:
    """What stop() would return (columns() without its name lookup, which reads CUPTI's
    memory at the records' name addresses: these are made up)."""
    intake._decode_waiting()
    return concat(intake.chunks).kernels["correlation_id"].tolist()


def test_without_defer_each_buffer_is_decoded_when_cuda_hands_it_over() -> None:
    intake = _intake()
    _complete(intake, 0, 10)
    assert intake.records == 10 and intake.decode_pending() == 0
    assert [h[2] for h in intake.handovers] == [10]


def test_deferred_buffers_are_decoded_at_the_cycle_end_in_order() -> None:
    intake = _intake()
    intake.defer = True
    _complete(intake, 0, 10)
    _complete(intake, 10, 5)
    assert intake.records == 0 and len(intake._pool) == 0  # parked, not decoded
    assert intake.decode_pending() == 15
    assert intake.records == 15 and len(intake._pool) == 2  # buffers back for reuse
    assert [h[2] for h in intake.handovers] == [0, 0, 15]
    assert intake.deferred_ns > 0
    _complete(intake, 15, 3)  # reuses a pooled buffer; left waiting at stop
    assert _correlations(intake) == [100 + i for i in range(18)]


def test_a_pile_past_the_cap_is_decoded_at_the_hand_over(monkeypatch: pytest.MonkeyPatch,
                                                         ) -> None:
    one = len(_kernel(0)) * 10
    monkeypatch.setattr(raw_intake, "MAX_PENDING_BYTES", 2 * one)
    intake = _intake()
    intake.defer = True
    for k in range(3):
        _complete(intake, 10 * k, 10)
    assert intake.records == 30 and intake.decode_pending() == 0
    assert [h[2] for h in intake.handovers] == [0, 0, 30]
    assert _correlations(intake) == [100 + i for i in range(30)]
