"""perfdiff's collector started ONCE, its parts switched on and off step by step (issue 13).

Why switch instead of starting a tool per block (``tools.run_rounds``): on the lent H100 VM
the same work runs at speeds up to 2x apart from one second to the next, even pinned, so
blocks of several steps compare different machine states (rounds of the block benchmark
put marks-alone 10 points *below* the floor, which it includes). Starting a tool per block
also times a freshly started one (NVML poller spawn, PM configuration) and leaves out the
decodes a long run makes while it runs. Here every source is started once and stays
configured; between two steps (untimed, after a synchronize) a mode switches sources:

- ``untraced``: every CUPTI activity kind off, the NVML poller paused (``pause()``, as
  perfdiff's own untraced cycles do), no marks, no PM sampling.
- ``floor``: CUPTI CONCURRENT_KERNEL activity only (what any CUPTI kernel trace costs).
- ``activity``: kernels, memcpy and memset, as perfdiff records them.
- ``pm``: ``activity`` + marks + PM sampling (20 us, perfdiff's 2 metrics).
- ``nvml``: ``activity`` + marks + the NVML poller (10 ms, its own process).
- ``perfdiff``: activity + marks + PM + NVML: the full collector.

PM sampling is the exception: CUPTI will not start it again once stopped, so a stretch of PM
steps gets a PM sampler of its own, started (and afterwards decoded) outside the timed
steps. The activity buffers completed during a step are decoded after it, as ``perfdiff
collect`` does at a cycle's end (``RawIntake.defer``): ``step_ms`` is the step, and
``with_end_ms`` the step plus that decode (the program's wall time pays both).

Every round runs one step per mode (``--warm`` unmeasured steps after each switch first), the
order rotated from round to round, so neighbouring steps of different modes see the same
machine. Per mode: the median over rounds of (mode's step / the round's untraced step - 1)
and of (mode - floor), with a 95 % interval of that median (bootstrap over rounds), raw and
scaled by a core-speed calibration (tools.calibration_ms).

A switch costs: activity kinds ~24 us each, a PM sampler's start or stop and decode, one byte
to the poller: all outside the timed step (each step's ``switch_ms`` records it). Records of
every mode go into one trace; only counts are kept.

Usage: python bench/launch_bound/switched.py --program gpt2|tiny [--rounds 20] [--warm 1]
           [--modes untraced,floor,perfdiff] [--pin 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tools import calibration_ms, chosen_modes, pin_plan

MODES = ("untraced", "floor", "activity", "pm", "nvml", "perfdiff")
# mode -> (activity kinds: "none" | "kernel" | "all", marks, pm, nvml)
SWITCHES: dict[str, tuple[str, bool, bool, bool]] = {
    "untraced": ("none", False, False, False),
    "floor": ("kernel", False, False, False),
    "activity": ("all", False, False, False),
    "pm": ("all", True, True, False),
    "nvml": ("all", True, False, True),
    "perfdiff": ("all", True, True, True),
}


class Switchboard:
    """The collector's sources, each started once, switched per step."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def start(self) -> None:
        from cupti import cupti

        from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
        from perfdiff.collect.cupti.pm_sampling import (
            DEFAULT_INTERVAL_NS,
            DEFAULT_METRICS,
            PmSampler,
        )
        from perfdiff.collect.cycles.boundary_marks import TorchBoundaryMarker
        from perfdiff.collect.cycles.cycles import CycleLog
        from perfdiff.collect.environment import torch_device_info
        from perfdiff.collect.nvml.nvml_process import NvmlProcessSampler
        from perfdiff.collect.nvml.sampler import load_nvml

        self.cupti = cupti
        self.trace = CuptiActivityBackend(trace_api=False, trace_memory=True)
        self.trace.start()
        self.kernel = cupti.ActivityKind.CONCURRENT_KERNEL
        self.others = [cupti.ActivityKind.MEMCPY, cupti.ActivityKind.MEMSET]
        self.kinds = "all"
        self.marker = TorchBoundaryMarker(self.torch, 0)
        # as in perfdiff collect: buffers completed in a cycle are decoded when it ends
        self.log = CycleLog(clock_ns=self.trace.clock_ns, mark=self.marker.mark,
                            on_cycle_end=lambda done: self.trace.between_cycles())
        self.pm_args = (DEFAULT_METRICS, DEFAULT_INTERVAL_NS, 0, self.trace.clock_ns)
        self.pm: Any = None
        self.pm_on = False
        self.pm_samples = 0
        self.pm_sessions = 0
        self.pm_warnings: list[str] = []
        self.pm_class = PmSampler
        lib = load_nvml()
        uuid = torch_device_info(self.torch, 0, lib).uuid or None
        self.nvml = NvmlProcessSampler(0, self.trace.clock_ns, 0.010, uuid)
        self.nvml.start()
        self.nvml_on = True
        self.marks = True

    def _pm(self, on: bool) -> None:
        """PM sampling cannot pause (CUPTI refuses to start it again once stopped), so each
        stretch of PM steps gets a sampler of its own, started and decoded outside the timed
        steps."""
        if on:
            self.pm = self.pm_class(*self.pm_args)
            self.pm.start()
            self.pm_sessions += 1
        else:
            series = self.pm.stop()
            self.pm_samples += int(series[0].timestamps_ns.size) if series else 0
            self.pm_warnings.extend(self.pm.warnings)
            self.pm = None
        self.pm_on = on

    def between(self) -> None:
        """After a step without marks: what the end of a cycle does (decode the buffers)."""
        between = getattr(self.trace, "between_cycles", None)
        if between is not None:
            between()

    def switch(self, mode: str) -> None:
        kinds, marks, pm, nvml = SWITCHES[mode]
        self.torch.cuda.synchronize()
        if kinds != self.kinds:
            want = {"none": [], "kernel": [self.kernel],
                    "all": [self.kernel, *self.others]}[kinds]
            have = {"none": [], "kernel": [self.kernel],
                    "all": [self.kernel, *self.others]}[self.kinds]
            for kind in have:
                if kind not in want:
                    self.cupti.activity_disable(kind)
            for kind in want:
                if kind not in have:
                    self.cupti.activity_enable(kind)
            self.kinds = kinds
        if pm != self.pm_on:
            self._pm(pm)
        if nvml != self.nvml_on:
            (self.nvml.resume if nvml else self.nvml.pause)()
            self.nvml_on = nvml
        self.marks = marks

    def stop(self) -> dict[str, Any]:
        self.switch("activity")
        self.torch.cuda.synchronize()
        nvml = self.nvml.stop()
        raw = self.trace.stop()
        cols = raw.as_columns()
        holds = sorted(e - s for s, e, _ in raw.handovers)
        return {"kernels": int(cols.kernels.size), "memcpy": int(cols.memcpy.size),
                "memset": int(cols.memset.size), "dropped": raw.dropped_records,
                "buffers": len(holds), "hold_ms_max": round(holds[-1] / 1e6, 3) if holds else 0,
                "between_cycles_ms": round(raw.deferred_ns / 1e6, 3),
                "pm_samples": self.pm_samples, "pm_sessions": self.pm_sessions,
                "nvml_samples": int(nvml[0].timestamps_ns.size) if nvml else 0,
                "warnings": self.trace.warnings + self.pm_warnings + self.nvml.warnings}


def run(board: Switchboard, step: Callable[[], None], modes: list[str], rounds: int,
        warm: int, pin: tuple[set[int], set[int]] | None) -> list[dict[str, Any]]:
    """One step per mode per round, the order rotated by the round; every step's record."""
    steps: list[dict[str, Any]] = []
    if pin is not None:
        os.sched_setaffinity(0, pin[1])
    board.start()  # its threads and the poller keep the other cores
    if pin is not None:
        os.sched_setaffinity(0, pin[0])
    for r in range(rounds):
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for mode in order:
            s0 = time.perf_counter_ns()
            board.switch(mode)
            switch_ms = (time.perf_counter_ns() - s0) / 1e6
            for _ in range(warm):
                step()
            before = calibration_ms()
            if board.marks:
                board.log.begin_cycle("step", False)
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            step()
            wall, cpu = time.perf_counter_ns() - t0, time.thread_time_ns() - c0
            if board.marks:
                board.log.end_cycle()  # and the buffers' decode (on_cycle_end)
            else:
                board.between()
            after = time.perf_counter_ns() - t0
            cal = (before + calibration_ms()) / 2
            steps.append({"round": r, "mode": mode, "step_ms": wall / 1e6, "cpu_ms": cpu / 1e6,
                          "with_end_ms": after / 1e6, "calibration_ms": cal,
                          "switch_ms": switch_ms})
        print(f"round {r}: " + " ".join(f"{s['mode']} {s['step_ms']:.1f}"
                                        for s in steps if s["round"] == r), flush=True)
    cals = sorted(s["calibration_ms"] for s in steps)
    typical = cals[len(cals) // 2]
    for s in steps:
        s["scaled_ms"] = s["step_ms"] * typical / s["calibration_ms"]
    return steps


def _interval(values: list[float], seed: int = 0) -> tuple[float, float]:
    """95 % bootstrap interval of the median (2,000 resamples)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    arr = np.asarray(values)
    meds = np.median(rng.choice(arr, size=(2000, arr.size), replace=True), axis=1)
    return float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


def summarise(steps: list[dict[str, Any]], modes: list[str], key: str) -> dict[str, Any]:
    """Per mode: overhead against the same round's untraced step, and above the floor (pp)."""
    by = {(s["round"], s["mode"]): s[key] for s in steps}
    rounds = sorted({s["round"] for s in steps})
    out: dict[str, Any] = {}
    for mode in modes:
        entry: dict[str, Any] = {"median_step_ms": round(statistics.median(
            by[(r, mode)] for r in rounds), 3)}
        if mode != "untraced" and "untraced" in modes:
            per = [100 * (by[(r, mode)] / by[(r, "untraced")] - 1) for r in rounds]
            lo, hi = _interval(per)
            entry.update(overhead_pct_median=round(statistics.median(per), 2),
                         overhead_pct_ci95=[round(lo, 2), round(hi, 2)])
            if mode != "floor" and "floor" in modes:
                above = [100 * (by[(r, mode)] - by[(r, "floor")]) / by[(r, "untraced")]
                         for r in rounds]
                lo, hi = _interval(above)
                entry.update(above_floor_pp_median=round(statistics.median(above), 2),
                             above_floor_pp_ci95=[round(lo, 2), round(hi, 2)])
        out[mode] = entry
    return out


def tiny_step(torch: Any, launches: int) -> Callable[[], None]:
    x = torch.zeros(1, device="cuda")

    def step() -> None:
        for _ in range(launches):
            x.add_(1)
        torch.cuda.synchronize()
    return step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", choices=["gpt2", "tiny"], default="gpt2")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--warm", type=int, default=1)
    parser.add_argument("--launches", type=int, default=20_000, help="tiny: launches per step")
    parser.add_argument("--modes", default="untraced,floor,perfdiff")
    parser.add_argument("--pin", type=int, default=-1,
                        help="run the program thread on this core, the collector elsewhere")
    parser.add_argument("--json")
    args = parser.parse_args()
    modes = chosen_modes(parser, args.modes, MODES)
    import torch

    if args.program == "gpt2":
        from gpt2_generate import build_model, make_step

        step = make_step(torch, *build_model(torch, "sdpa"))
    else:
        step = tiny_step(torch, args.launches)
    for _ in range(3):
        step()
    pin = pin_plan(args.pin) if args.pin >= 0 else None
    board = Switchboard(torch)
    t0 = time.monotonic()
    steps = run(board, step, modes, args.rounds, args.warm, pin)
    wall_s = time.monotonic() - t0
    recorded = board.stop()
    result = {"program": args.program, "rounds": args.rounds, "warm": args.warm,
              "modes": modes, "gpu": torch.cuda.get_device_name(0), "wall_s": round(wall_s, 1),
              "pin": None if pin is None else [sorted(c) for c in pin], "recorded": recorded,
              **{f"summary_{key[:-3]}": summarise(steps, modes, key)
                 for key in ("step_ms", "scaled_ms", "cpu_ms", "with_end_ms")}, "steps": steps}
    print(json.dumps({k: v for k, v in result.items() if k != "steps"}, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
