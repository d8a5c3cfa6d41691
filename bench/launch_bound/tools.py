"""The profilers a launch-bound benchmark alternates in one process, and the timing loop.

Why one module: the HF GPT-2 benchmark (``gpt2_generate.py``) and the tiny-launch parts
benchmark (``parts.py``) must measure exactly the same tools, switched on and off the same
way, or their figures could not be set side by side. Every tool has ``start()``, ``begin()``
/ ``end()`` around a timed step (cycle marks, where the tool has them) and ``stop() -> dict``
(what it recorded, outside the timing).

Tools (``make_tool(name, torch)``):
- ``untraced``: nothing.
- ``floor``: CUPTI CONCURRENT_KERNEL activity alone, buffers handed back unread (our ctypes
  callbacks doing no work): what any CUPTI-based kernel trace costs.
- ``activity``: perfdiff's activity backend alone (kernels, memcpy, memset; raw intake
  decoding each buffer as it is handed over), no marks, no samplers.
- ``marks``: ``activity`` + a cycle per step with its two boundary marks.
- ``nvml``: ``marks`` + the NVML sampler (10 ms; its own process: nvml_process.py).
- ``nvml_thread``: ``marks`` + NVML polled from a thread of the program (the former way).
- ``pm``: ``marks`` + PM sampling (2 metrics, 20 us).
- ``perfdiff``: ``marks`` + PM + NVML: the collector as ``perfdiff collect --cycle-range step
  -- CMD`` runs it in a user program (``perfdiff/collect/inject/child.py``).
- ``pm_alone``: PM sampling alone, no activity (what the sampler itself costs).
- ``torch.profiler``: ``profile(activities=[CPU, CUDA])``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

PARTS = ("untraced", "floor", "activity", "marks", "nvml", "nvml_thread", "pm", "perfdiff",
         "pm_alone", "pm_alone_100us", "pm_alone_1ms", "torch.profiler")


class Untraced:
    def start(self) -> None:
        pass

    def begin(self) -> None:
        pass

    def end(self) -> None:
        pass

    def stop(self) -> dict[str, Any]:
        return {}


class Floor(Untraced):
    """CUPTI kernel activity, buffers recycled without being read."""

    def __init__(self) -> None:
        from cupti import cupti

        from perfdiff.collect.cupti.raw_intake import RawIntake

        class _NoDecode(RawIntake):
            def take(self, array: Any, valid: int) -> int:
                return 0

        self.cupti = cupti
        self.intake = _NoDecode.for_cupti(cupti, lambda: int(cupti.get_timestamp()))

    def start(self) -> None:
        self.intake.register()
        self.cupti.activity_enable(self.cupti.ActivityKind.CONCURRENT_KERNEL)

    def stop(self) -> dict[str, Any]:
        self.cupti.activity_flush_all(1)
        self.cupti.activity_disable(self.cupti.ActivityKind.CONCURRENT_KERNEL)
        return {}


class Composed(Untraced):
    """perfdiff's sources, each on or off, set up as the user-program child sets them up."""

    def __init__(self, torch: Any, *, activity: bool = True, marks: bool = False,
                 pm: bool = False, nvml: bool = False, nvml_thread: bool = False,
                 pm_interval_ns: int = 0) -> None:
        self.torch = torch
        self.activity, self.marks, self.pm, self.nvml = activity, marks, pm, nvml
        self.nvml_thread = nvml_thread
        self.pm_interval_ns = pm_interval_ns  # 0: perfdiff's default (20 us)

    def start(self) -> None:
        from cupti import cupti

        from perfdiff.collect.cycles.cycles import CycleLog

        self.trace = None
        clock: Callable[[], int] = lambda: int(cupti.get_timestamp())  # noqa: E731
        if self.activity:
            from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend

            self.trace = CuptiActivityBackend(trace_api=False, trace_memory=True)
            self.trace.start()
            clock = self.trace.clock_ns
        self.marker = None
        if self.marks:
            from perfdiff.collect.cycles.boundary_marks import TorchBoundaryMarker

            self.marker = TorchBoundaryMarker(self.torch, 0)
        # as in perfdiff collect: buffers completed in a cycle are decoded once it ends
        # (RawIntake.defer), outside the timed step; the block's stop() waits for the rest
        between = getattr(self.trace, "between_cycles", None)
        self.log = CycleLog(clock_ns=clock, mark=self.marker.mark if self.marker else None,
                            on_cycle_end=(lambda done: between()) if between else None)
        self.samplers: list[Any] = []
        if self.pm:
            from perfdiff.collect.cupti.pm_sampling import (
                DEFAULT_INTERVAL_NS,
                DEFAULT_METRICS,
                PmSampler,
            )

            self.samplers.append(PmSampler(DEFAULT_METRICS,
                                           self.pm_interval_ns or DEFAULT_INTERVAL_NS, 0, clock))
        if self.nvml:
            from perfdiff.collect.environment import torch_device_info
            from perfdiff.collect.nvml.nvml_process import NvmlDefaultSampler
            from perfdiff.collect.nvml.sampler import load_nvml

            lib = load_nvml()
            uuid = torch_device_info(self.torch, 0, lib).uuid or None
            if self.nvml_thread:
                from perfdiff.collect.nvml.sampler import NvmlSampler

                self.samplers.append(NvmlSampler(0, clock, 0.010, nvml=lib, uuid=uuid))
            else:
                self.samplers.append(NvmlDefaultSampler(0, clock, 0.010, nvml=lib, uuid=uuid))
        for sampler in self.samplers:
            sampler.start()

    def begin(self) -> None:
        if self.marker is not None:
            self.log.begin_cycle("step", False)

    def end(self) -> None:
        if self.marker is not None:
            self.log.end_cycle()

    def stop(self) -> dict[str, Any]:
        from perfdiff.collect.cupti.pm_sampling import coverage_warning
        from perfdiff.collect.cycles.program_marks import launches_from_marks

        self.torch.cuda.synchronize()
        series = [s for sampler in self.samplers for s in sampler.stop()]
        out: dict[str, Any] = {}
        pm = [s for s in series if s.source == "pm_sampling"]
        if pm:
            out["pm_samples"] = int(pm[0].timestamps_ns.size)
        if self.trace is None:
            return out
        raw = self.trace.stop()
        problems: list[str] = []
        stream_ids = self.marker.stream_ids if self.marker is not None else None
        cycles = self.log.table(launches_from_marks(raw, stream_ids, self.log, problems))
        cols = raw.as_columns()
        holds = sorted(e - s for s, e, _ in raw.handovers)
        if pm and cycles.index.size:
            span = (int(cycles.start_ns[0]), int(cycles.end_ns[-1]))
            out["pm_coverage_warning"] = coverage_warning(pm[0].timestamps_ns,
                                                          pm[0].interval_ns or 1, span)
        out.update({
            "kernels": int(cols.kernels.size), "memcpy": int(cols.memcpy.size),
            "memset": int(cols.memset.size), "dropped": raw.dropped_records,
            "buffers": len(holds),
            "hold_ms_total": round(sum(holds) / 1e6, 3),
            "hold_ms_median": round(holds[len(holds) // 2] / 1e6, 3) if holds else 0.0,
            "hold_ms_max": round(holds[-1] / 1e6, 3) if holds else 0.0,
            "warnings": self.trace.warnings + problems,
        })
        return out


class Profiler(Untraced):
    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def start(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self.prof.__enter__()

    def stop(self) -> dict[str, Any]:
        self.prof.__exit__(None, None, None)
        return {}


def make_tool(name: str, torch: Any) -> Untraced:
    if name == "untraced":
        return Untraced()
    if name == "floor":
        return Floor()
    if name == "torch.profiler":
        return Profiler(torch)
    flags = {
        "activity": {}, "marks": {"marks": True}, "nvml": {"marks": True, "nvml": True},
        "nvml_thread": {"marks": True, "nvml": True, "nvml_thread": True},
        "pm": {"marks": True, "pm": True}, "perfdiff": {"marks": True, "pm": True, "nvml": True},
        "pm_alone": {"activity": False, "pm": True},
        # does PM's cost follow the sample rate (each sample ~13 KB written to host memory)?
        "pm_alone_100us": {"activity": False, "pm": True, "pm_interval_ns": 100_000},
        "pm_alone_1ms": {"activity": False, "pm": True, "pm_interval_ns": 1_000_000},
    }
    if name not in flags:
        raise SystemExit(f"unknown mode {name!r}; known: {', '.join(PARTS)}")
    return Composed(torch, **flags[name])


def chosen_modes(parser: Any, text: str, known: tuple[str, ...]) -> list[str]:
    """``--modes a,b,c`` as a list; an unknown name is a usage error naming the known ones."""
    modes = text.split(",")
    unknown = [m for m in modes if m not in known]
    if unknown:
        parser.error(f"unknown modes {unknown}; known: {', '.join(known)}")
    return modes


def pin_plan(core: int) -> tuple[set[int], set[int]]:
    """(the main thread's cores, every other thread's): ``core`` alone, and the cores left
    once it and its SMT siblings are taken out.

    Why pin: on the lent H100 VM, blocks of the same work ran at two speeds (tiny launches:
    ~185 and ~265 ms per 20,000, steady within a block, switching between blocks, in every
    mode; 2026-11-25), the mark of the main thread landing on a different core when a block
    starts the profiler's threads. Pinned, every mode runs its program thread on the same
    core, and the profiler's threads (CUPTI's, PM drain, NVML) on the others, as they would
    on an idle many-core host."""
    path = f"/sys/devices/system/cpu/cpu{core}/topology/thread_siblings_list"
    siblings = {core}
    try:
        with open(path, encoding="ascii") as f:
            for part in f.read().strip().split(","):
                lo, _, hi = part.partition("-")
                siblings.update(range(int(lo), int(hi or lo) + 1))
    except OSError:
        pass
    others = set(os.sched_getaffinity(0)) - siblings
    return {core}, others or {core}


_CALIBRATION = None


def calibration_ms() -> float:
    """Time of a fixed piece of CPU work that releases the interpreter lock (a numpy sort of
    400,000 numbers): how fast the program's core runs right now.

    Why: on the lent VM the program thread's own CPU time for the same step varied 2x between
    blocks even when pinned (H100, 2026-11-25: 236-514 ms), so the core's speed, not the
    profiler, dominated every ratio. A reading just before and after each timed step lets a
    step be scaled to the run's typical speed. The sort holds no lock the profiler's threads
    want, so their work on other cores does not slow it."""
    global _CALIBRATION
    import numpy as np

    if _CALIBRATION is None:
        _CALIBRATION = np.random.default_rng(0).random(400_000)
    t0 = time.perf_counter_ns()
    np.sort(_CALIBRATION)
    return (time.perf_counter_ns() - t0) / 1e6


def steal_ms(core: int | None) -> float:
    """CPU time the hypervisor took from ``core`` so far (/proc/stat, 10 ms ticks); 0 if
    unknown."""
    if core is None:
        return 0.0
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                if line.startswith(f"cpu{core} "):
                    fields = line.split()
                    return float(fields[8]) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        pass
    return 0.0


def run_block(tool: Untraced, step: Callable[[], None], steps: int, warm: int,
              pin: tuple[set[int], set[int]] | None = None) -> dict[str, Any]:
    """Start the tool, ``warm`` unmeasured steps, ``steps`` timed ones, stop (untimed).

    With ``pin``: threads the tool starts get the other cores (a thread inherits its
    creator's affinity), then the main thread moves to its own core for the steps. Each
    timed step has the calibration (:func:`calibration_ms`) just before and after it, and
    the steal time of the pinned core during it."""
    if pin is not None:
        os.sched_setaffinity(0, pin[1])
    tool.start()
    core = None
    if pin is not None:
        os.sched_setaffinity(0, pin[0])
        core = min(pin[0])
    for _ in range(warm):
        step()
    wall, cpu, cal, steal, ended = [], [], [], [], []
    for _ in range(steps):
        before = calibration_ms()
        stolen = steal_ms(core)
        tool.begin()
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        step()
        wall.append(time.perf_counter_ns() - t0)
        cpu.append(time.thread_time_ns() - c0)
        tool.end()
        ended.append(time.perf_counter_ns() - t0)  # + the cycle's end (perfdiff: decode)
        steal.append(steal_ms(core) - stolen)
        cal.append((before + calibration_ms()) / 2)
    extra = tool.stop()
    return {"step_ms": [t / 1e6 for t in wall], "cpu_ms": [t / 1e6 for t in cpu],
            "with_end_ms": [t / 1e6 for t in ended],
            "calibration_ms": cal, "steal_ms": steal, **extra}


def add_scaled(blocks: list[dict[str, Any]]) -> None:
    """``scaled_ms``: each step at the run's median core speed (step x median calibration /
    its own calibration); ``unstolen_ms``: the step less the steal time of its core."""
    cals = sorted(c for b in blocks for c in b["calibration_ms"])
    typical = cals[len(cals) // 2]
    for b in blocks:
        b["scaled_ms"] = [t * typical / c for t, c in zip(b["step_ms"], b["calibration_ms"],
                                                         strict=True)]
        b["unstolen_ms"] = [t - s for t, s in zip(b["step_ms"], b["steal_ms"], strict=True)]


def schedule(modes: list[str], rounds: int) -> list[list[str]]:
    """Round r runs every mode once, the order rotated by r; torch.profiler rounds last.

    Why last: once kineto has run, CUPTI stamps records in its clock for the rest of the
    process (docs/howto/collect.md), which spoilt every later perfdiff block (H100,
    2026-11-25: "CUPTI timestamps advanced 2.10x")."""
    early = [m for m in modes if m != "torch.profiler"]
    late = [m for m in modes if m == "torch.profiler"]
    order = [early[r % len(early):] + early[:r % len(early)] for r in range(rounds)]
    return order + [["untraced", *late] for _ in range(rounds if late else 0)]


def summarise(blocks: list[dict[str, Any]], modes: list[str], key: str = "step_ms",
              ) -> dict[str, Any]:
    """Per mode: median over rounds of (mode's median step / the round's untraced one - 1),
    every round's figure, and the pooled median step; each mode minus the floor, per round."""
    rounds = sorted({b["round"] for b in blocks})

    def ratios(mode: str) -> dict[int, float]:
        out = {}
        for r in rounds:
            base = [b for b in blocks if b["round"] == r and b["mode"] == "untraced"]
            this = [b for b in blocks if b["round"] == r and b["mode"] == mode]
            if base and this:
                out[r] = statistics.median(this[0][key]) / statistics.median(base[0][key]) - 1
        return out

    out: dict[str, Any] = {}
    floor = ratios("floor") if "floor" in modes else {}
    for mode in modes:
        steps = [t for b in blocks if b["mode"] == mode for t in b[key]]
        entry: dict[str, Any] = {"median_step_ms": round(statistics.median(steps), 3),
                                 "steps": len(steps)}
        if mode != "untraced":
            per = ratios(mode)
            if per:
                entry["overhead_pct_median"] = round(100 * statistics.median(per.values()), 2)
                entry["overhead_pct_rounds"] = [round(100 * v, 2) for v in per.values()]
            above = [per[r] - floor[r] for r in per if r in floor]
            if mode != "floor" and above:
                entry["above_floor_pp_median"] = round(100 * statistics.median(above), 2)
        out[mode] = entry
    return out


def run_rounds(torch: Any, modes: list[str], step: Callable[[], None], args: Any,
               ) -> tuple[list[dict[str, Any]], tuple[set[int], set[int]] | None]:
    """Every round of ``schedule`` (``args.rounds``, ``args.steps``, ``args.warm``,
    ``args.pin``), one line printed per block; the blocks with ``scaled_ms`` added."""
    import json

    pin = pin_plan(args.pin) if args.pin >= 0 else None
    tools = {m: make_tool(m, torch) for m in modes}
    blocks = []
    for r, order in enumerate(schedule(modes, args.rounds)):
        for mode in order:
            block = run_block(tools[mode], step, args.steps, args.warm, pin)
            block.update(mode=mode, round=r)
            blocks.append(block)
            print(json.dumps({k: v for k, v in block.items() if not k.endswith("_ms")})
                  + f" steps {[round(t, 1) for t in block['step_ms']]}", flush=True)
    add_scaled(blocks)
    return blocks, pin


def write_result(result: dict[str, Any], blocks: list[dict[str, Any]], modes: list[str],
                 pin: tuple[set[int], set[int]] | None, path: str | None) -> None:
    """Add the summaries (raw, CPU, scaled, less steal) and the blocks, print the raw and
    scaled ones, write the JSON if asked."""
    import json

    result.update({"pin": None if pin is None else [sorted(c) for c in pin],
                   **{f"summary_{key[:-3]}": summarise(blocks, modes, key)
                      for key in ("cpu_ms", "scaled_ms", "unstolen_ms", "with_end_ms")},
                   "blocks": blocks})
    print(json.dumps(result["summary"]))
    print("scaled", json.dumps(result["summary_scaled"]))
    print("with_end", json.dumps(result["summary_with_end"]))
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
