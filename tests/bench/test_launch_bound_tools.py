"""The launch-bound benchmarks' bookkeeping (bench/launch_bound/tools.py): the round order,
the per-round overhead against the round's untraced block, and the core-speed scaling.
The tools themselves need a GPU; here stand-ins run the same loop."""

from __future__ import annotations

import types

import pytest

from bench.launch_bound import tools


def test_every_round_runs_every_mode_and_torch_profiler_comes_last() -> None:
    order = tools.schedule(["untraced", "floor", "torch.profiler", "perfdiff"], 3)
    assert order[:3] == [["untraced", "floor", "perfdiff"], ["floor", "perfdiff", "untraced"],
                         ["perfdiff", "untraced", "floor"]]
    assert order[3:] == [["untraced", "torch.profiler"]] * 3


def _block(mode: str, r: int, steps: list[float], cal: list[float]) -> dict[str, object]:
    return {"mode": mode, "round": r, "step_ms": steps, "calibration_ms": cal,
            "steal_ms": [0.0] * len(steps)}


def test_overhead_is_the_median_over_rounds_of_each_rounds_ratio() -> None:
    blocks = [_block("untraced", 0, [100.0, 100.0], [1, 1]), _block("floor", 0, [110.0], [1]),
              _block("perfdiff", 0, [120.0], [1]),
              _block("untraced", 1, [200.0], [2]), _block("floor", 1, [210.0], [2]),
              _block("perfdiff", 1, [230.0], [2]),
              _block("untraced", 2, [100.0], [1]), _block("floor", 2, [104.0], [1]),
              _block("perfdiff", 2, [109.0], [1])]
    out = tools.summarise(blocks, ["untraced", "floor", "perfdiff"])
    assert out["floor"]["overhead_pct_rounds"] == [10.0, 5.0, 4.0]
    assert out["floor"]["overhead_pct_median"] == 5.0
    assert out["perfdiff"]["overhead_pct_rounds"] == [20.0, 15.0, 9.0]
    # perfdiff - floor per round: 10, 10, 5 points
    assert out["perfdiff"]["above_floor_pp_median"] == 10.0
    assert out["untraced"]["median_step_ms"] == 100.0


def test_scaling_puts_every_step_at_the_runs_median_core_speed() -> None:
    """A round on a core twice as slow (calibration 2 ms instead of 1) counts as if at 1."""
    blocks = [_block("untraced", 0, [100.0], [1.0]), _block("floor", 0, [220.0], [2.0]),
              _block("untraced", 1, [200.0], [2.0]), _block("floor", 1, [110.0], [1.0])]
    tools.add_scaled(blocks)
    cals = sorted([1.0, 2.0, 2.0, 1.0])
    typical = cals[len(cals) // 2]  # 2.0
    assert [b["scaled_ms"] for b in blocks] == [[100.0 * typical], [220.0], [200.0],
                                                 [110.0 * typical]]
    out = tools.summarise(blocks, ["untraced", "floor"], "scaled_ms")
    assert out["floor"]["overhead_pct_rounds"] == [10.0, 10.0]  # raw: +120 %, -45 %


def test_run_rounds_alternates_the_tools_and_records_each_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []

    class Tool(tools.Untraced):
        def __init__(self, name: str) -> None:
            self.name = name

        def start(self) -> None:
            started.append(self.name)

    monkeypatch.setattr(tools, "make_tool", lambda mode, torch: Tool(mode))
    args = types.SimpleNamespace(rounds=2, steps=2, warm=1, pin=-1)
    blocks, pin = tools.run_rounds(None, ["untraced", "floor"], lambda: None, args)
    assert pin is None and started == ["untraced", "floor", "floor", "untraced"]
    assert [len(b["step_ms"]) for b in blocks] == [2, 2, 2, 2]  # type: ignore[arg-type]
    assert all("scaled_ms" in b for b in blocks)
