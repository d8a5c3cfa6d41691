"""The switched benchmark's loop and arithmetic (bench/launch_bound/switched.py), with a
stand-in switchboard: one step per mode per round, rotated order, overhead against the same
round's untraced step, and above-floor points. The real switchboard needs a GPU."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "launch_bound"))

from bench.launch_bound import switched  # noqa: E402


class _Board:
    """Each mode stretches the step by a fixed factor: floor +10 %, perfdiff +12 %."""

    factor = {"untraced": 1.0, "floor": 1.10, "perfdiff": 1.12}

    def __init__(self) -> None:
        self.mode = ""
        self.switched: list[str] = []
        self.marks = False
        self.log: Any = None

    def start(self) -> None:
        pass

    def switch(self, mode: str) -> None:
        self.mode = mode
        self.switched.append(mode)


def test_each_round_runs_every_mode_once_in_rotated_order(monkeypatch: pytest.MonkeyPatch,
                                                           ) -> None:
    board = _Board()
    now = [0]

    def perf_counter_ns() -> int:
        return now[0]

    def step() -> None:
        # the host slows down round after round (100, 150, 200 ms); the factors stay
        base = 100.0 * (1 + 0.5 * ((len(board.switched) - 1) // 3))
        now[0] += int(base * board.factor[board.mode] * 1e6)

    monkeypatch.setattr(switched.time, "perf_counter_ns", perf_counter_ns)
    monkeypatch.setattr(switched, "calibration_ms", lambda: 1.0)
    modes = ["untraced", "floor", "perfdiff"]
    steps = switched.run(board, step, modes, rounds=3, warm=0, pin=None)  # type: ignore[arg-type]
    assert board.switched == ["untraced", "floor", "perfdiff", "floor", "perfdiff", "untraced",
                              "perfdiff", "untraced", "floor"]
    assert [(s["round"], s["mode"]) for s in steps][:3] == [(0, "untraced"), (0, "floor"),
                                                           (0, "perfdiff")]
    out = switched.summarise(steps, modes, "step_ms")
    assert out["floor"]["overhead_pct_median"] == pytest.approx(10.0, abs=0.01)
    assert out["perfdiff"]["above_floor_pp_median"] == pytest.approx(2.0, abs=0.01)
    lo, hi = out["perfdiff"]["above_floor_pp_ci95"]
    assert lo <= out["perfdiff"]["above_floor_pp_median"] <= hi
