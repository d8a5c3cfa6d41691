"""Overhead of perfdiff collection on gpt-infer: bare vs perfdiff (all sources) vs torch.profiler.

Method: one driver process runs ROUNDS rounds; each round starts three child processes in
turn (bare, perfdiff, torch.profiler), so slow drift of the machine (clocks, temperature)
hits every mode alike. Every child times each cycle the same way, with
``time.perf_counter_ns`` around the cycle on the host (a gpt-infer cycle ends with the
next-token ids copied to the host, so it waits for its GPU work). Overhead of a mode is
median(cycle time) / median(bare cycle time) - 1 over all measured cycles of all rounds;
the per-round ratios, and their median, are reported too. The order of the modes rotates
from round to round, so no mode always runs first or last.

- bare: the workload alone.
- floor (``--alternate`` only): CUPTI concurrent-kernel activity alone, its buffers recycled
  unread: the cost any CUPTI kernel trace has (issue 13's floor).
- perfdiff: ``run_collection`` with CUPTI activity (kernels, memcpy, memset, launch API
  records), PM sampling (2 default metrics, 5 us) and NVML (10 ms): what
  ``perfdiff collect`` runs.
- torch.profiler: ``profile(activities=[CPU, CUDA])``, default options.
- perfdiff-trace, perfdiff-trace-nvml, perfdiff-trace-pm: perfdiff with only some sources,
  to see where the overhead comes from (``--modes`` picks the modes); perfdiff-api: all
  sources, with launch API records instead of cycle boundary marks (the default before
  2026-11-22; see perfdiff/collect/cycles/boundary_marks.py); perfdiff-trace-nomem: without memcpy
  and memset records; perfdiff-trace-alltraced, perfdiff-alltraced: no untraced cycles;
  perfdiff-nopm, perfdiff-detach: no PM sampling, with CUPTI attached (kinds off) or detached
  (``--detach-untraced``) in the untraced cycles.

Second design (``--alternate BLOCKS``): one process per instrumented mode, alternating blocks
of bare cycles and cycles under the mode on the same model (see ``child_alternating``).

``--workload train-step`` times the built-in training step instead (issue 28's second
overhead figure); gpt-infer is the default.

Usage: python bench/overhead.py [--workload gpt-infer] [--rounds 5] [--cycles 40]
           [--modes a,b,...] [--json OUT.json]
       python bench/overhead.py --alternate 8 --cycles 60 [--modes perfdiff,torch.profiler]
       python bench/overhead.py --child MODE --cycles N   (one child, prints JSON)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

WARMUP = 5


class TimingMarker:
    """Wraps another marker; records each cycle's host duration in ns."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.durations: list[tuple[bool, int]] = []

    @contextlib.contextmanager
    def cycle(self, label: str = "", *, warmup: bool = False) -> Iterator[None]:
        with self.inner.cycle(label, warmup=warmup):
            t0 = time.perf_counter_ns()
            yield
            self.durations.append((warmup, time.perf_counter_ns() - t0))


# the built-in workload every child times (--workload)
WORKLOAD = "gpt-infer"


def _child() -> list[str]:
    """A child process's argv head: this script, the workload chosen in main()."""
    return [sys.executable, __file__, "--workload", WORKLOAD]


def settings_for(mode: str) -> Any:
    """The collection settings of a perfdiff mode (which sources are on)."""
    from perfdiff.collect.session import CollectSettings

    return {
        "perfdiff": CollectSettings(),
        "perfdiff-trace": CollectSettings(pm_sampling=False, nvml=False),
        "perfdiff-trace-nvml": CollectSettings(pm_sampling=False),
        "perfdiff-trace-pm": CollectSettings(nvml=False),
        "perfdiff-api": CollectSettings(trace_api=True),
        # where perfdiff-trace's cost above the CUPTI floor comes from (issue 13)
        "perfdiff-trace-nomem": CollectSettings(pm_sampling=False, nvml=False,
                                                trace_memory=False),
        "perfdiff-trace-alltraced": CollectSettings(pm_sampling=False, nvml=False,
                                                    untraced_every=0),
        "perfdiff-alltraced": CollectSettings(untraced_every=0),
        # CUPTI detached in the untraced runs (issue 28; perfdiff/collect/cupti/detached.py)
        "perfdiff-nopm": CollectSettings(pm_sampling=False),
        "perfdiff-detach": CollectSettings(pm_sampling=False, detach_untraced=True),
    }[mode]


def child(mode: str, cycles: int) -> None:
    from perfdiff.collect.workloads import get_workload_class
    from perfdiff.collect.workloads.base import CyclePlan, Workload
    from perfdiff.markers import CycleMarker, NullMarker

    cls = get_workload_class(WORKLOAD)
    plan = CyclePlan(cycles, WARMUP)
    timing = TimingMarker(NullMarker())

    class Timed(Workload):
        """The workload with a timing marker slipped between it and the collector."""

        name = WORKLOAD
        summary = ""
        params_class = cls.params_class

        def __init__(self) -> None:
            super().__init__(cls.params_class())
            self.inner = cls(self.params)

        def setup(self, device: str) -> None:
            self.inner.setup(device)

        def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
            timing.inner = marker
            self.inner.run(timing, plan)

    workload = Timed()
    if mode.startswith("perfdiff"):
        from perfdiff.collect.session import run_collection
        from perfdiff.collect.sources import open_sources

        settings = settings_for(mode)
        opened = open_sources(settings)
        outcome = run_collection(workload, plan, opened.sources, opened.environment, settings)
        extra = {"kernels": int(outcome.run_file.runs[0].kernels.name_id.size),
                 "sources": list(outcome.run_file.collection.sources),
                 "warnings": list(outcome.run_file.collection.warnings)}
    else:
        workload.setup("cuda:0")
        extra = {}
        if mode == "bare":
            workload.run(NullMarker(), plan)
        else:
            import torch
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
                workload.run(NullMarker(), plan)
                torch.cuda.synchronize()
    measured = [d for warm, d in timing.durations if not warm]
    print(json.dumps({"mode": mode, "cycle_ns": measured, **extra}))


def cupti_floor() -> Any:
    """CUPTI kernel activity alone, buffers recycled unread (bench/launch_bound/tools.Floor):
    what any CUPTI-based kernel trace costs, the floor issue 13 sets perfdiff against. Its
    ``start()``/``stop()`` go round each block, as ``tools.run_block`` uses them."""
    import os

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch_bound"))
    from tools import Floor

    return Floor()


def child_alternating(mode: str, cycles: int, blocks: int) -> None:
    """One process, one model: blocks of bare cycles alternating with blocks under ``mode``.

    Why: between processes the bare cycle time alone moved by up to 5 % (allocation
    placement, clocks), more than the overheads being measured. Inside one process the
    model, its memory and the GPU state are shared by both kinds of block, so the ratio of
    the two medians is the overhead. The blocks go in ABBA order (bare, mode, mode, bare, ...)
    so slow drift cancels. Caveat: once CUPTI has been loaded, later bare blocks may keep some
    of its cost; the first bare block ran before any tracing and is reported on its own.
    """
    from perfdiff.collect.workloads import get_workload_class
    from perfdiff.collect.workloads.base import CyclePlan, Workload
    from perfdiff.markers import CycleMarker, NullMarker

    cls = get_workload_class(WORKLOAD)
    plan = CyclePlan(cycles, 3)
    timing = TimingMarker(NullMarker())
    inner = cls(cls.params_class())
    inner.setup("cuda:0")

    class Ready(Workload):
        """The set-up workload, timed; setup is a no-op (the model is built once)."""

        name = WORKLOAD
        summary = ""
        params_class = cls.params_class

        def __init__(self) -> None:
            super().__init__(inner.params)

        def setup(self, device: str) -> None:
            pass

        def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
            timing.inner = marker
            inner.run(timing, plan)

    floor: list[Any] = []  # the CUPTI floor tool, made at its first block

    def block(kind: str) -> list[int]:
        timing.durations = []
        if kind == "bare":
            Ready().run(NullMarker(), plan)
        elif kind == "floor":
            if not floor:
                floor.append(cupti_floor())
            floor[0].start()
            Ready().run(NullMarker(), plan)
            floor[0].stop()
        elif kind.startswith("perfdiff"):
            from perfdiff.collect.session import run_collection
            from perfdiff.collect.sources import open_sources

            settings = settings_for(kind)
            opened = open_sources(settings)
            outcome = run_collection(Ready(), plan, opened.sources, opened.environment, settings)
            if outcome.run_file.collection.warnings:
                print("warnings:", outcome.run_file.collection.warnings, file=sys.stderr)
        else:
            import torch
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
                Ready().run(NullMarker(), plan)
                torch.cuda.synchronize()
        return [d for warm, d in timing.durations if not warm]

    out: dict[str, Any] = {"mode": mode, "blocks": []}
    for b in range(blocks):
        order = ("bare", mode) if b % 2 == 0 else (mode, "bare")
        out["blocks"].append({kind: block(kind) for kind in order})
    print(json.dumps(out))


def alternating(modes: list[str], cycles: int, blocks: int) -> dict[str, Any]:
    """Run ``child_alternating`` once per instrumented mode; overheads against its own bare."""
    result: dict[str, Any] = {"design": "alternating blocks in one process per mode",
                              "cycles_per_block": cycles, "block_pairs": blocks}
    for mode in modes:
        proc = subprocess.run([*_child(), "--child", mode, "--alternate",
                               str(blocks), "--cycles", str(cycles)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            result[mode] = {"failed": proc.returncode, "stderr_tail": proc.stderr[-2000:]}
            print(mode, "FAILED", proc.stderr[-2000:], flush=True)
            continue
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        bare = [c for blk in data["blocks"] for c in blk["bare"]]
        inst = [c for blk in data["blocks"] for c in blk[mode]]
        pairs = [100 * (float(np.median(blk[mode])) / float(np.median(blk["bare"])) - 1)
                 for blk in data["blocks"]]
        first_bare = float(np.median(data["blocks"][0]["bare"]))
        result[mode] = {
            "bare_median_ms": round(float(np.median(bare)) / 1e6, 4),
            "mode_median_ms": round(float(np.median(inst)) / 1e6, 4),
            "overhead_pct": round(100 * (float(np.median(inst)) / float(np.median(bare)) - 1), 2),
            "median_of_block_pair_overheads_pct": round(float(np.median(pairs)), 2),
            "block_pair_overheads_pct": [round(p, 2) for p in pairs],
            "overhead_vs_first_bare_block_pct":
                round(100 * (float(np.median(inst)) / first_bare - 1), 2),
        }
        print(mode, json.dumps(result[mode]), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", default=None)
    parser.add_argument("--workload", default="gpt-infer",
                        help="the built-in workload timed (gpt-infer, train-step)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--json", default=None)
    parser.add_argument("--modes", default="bare,perfdiff,torch.profiler")
    parser.add_argument("--alternate", type=int, default=0, metavar="BLOCKS",
                        help="the in-process design: BLOCKS bare/mode block pairs per mode")
    args = parser.parse_args()
    global WORKLOAD
    WORKLOAD = args.workload
    if args.child:
        if args.alternate:
            child_alternating(args.child, args.cycles, args.alternate)
        else:
            child(args.child, args.cycles)
        return
    if args.alternate:
        summary = alternating([m for m in args.modes.split(",") if m != "bare"], args.cycles,
                              args.alternate)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(summary, fh, indent=1)
        return
    modes = tuple(args.modes.split(","))
    cycles: dict[str, list[int]] = {m: [] for m in modes}
    rounds: list[dict[str, float]] = []
    extra: dict[str, Any] = {}
    # one untimed child first: the first process after the machine starts pays for a cold
    # GPU (clocks ramping) and a cold page cache (the H100 run of 2026-11-22: +17 % and +69 %
    # in round 0), which belongs to no mode
    subprocess.run([*_child(), "--child", "bare", "--cycles", "20"], check=True,
                   capture_output=True, text=True)
    for r in range(args.rounds):
        medians = {}
        # rotate the order each round: a mode that always ran first (cold GPU, fresh page
        # cache) or last (warm GPU) would carry that position's bias into its overhead
        for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
            out = subprocess.run([*_child(), "--child", mode, "--cycles",
                                  str(args.cycles)], check=True, capture_output=True, text=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            cycles[mode] += result["cycle_ns"]
            medians[mode] = float(np.median(result["cycle_ns"]))
            if mode == "perfdiff":
                extra = {k: v for k, v in result.items() if k not in ("mode", "cycle_ns")}
        rounds.append({m: round(v / 1e6, 4) for m, v in medians.items()})
        print(f"round {r}: " + ", ".join(f"{m} {v / 1e6:.3f} ms" for m, v in medians.items()),
              flush=True)
    bare = float(np.median(cycles["bare"]))
    summary = {
        "workload": f"{WORKLOAD} (defaults)", "rounds": args.rounds,
        "cycles_per_round": args.cycles,
        "median_cycle_ms": {m: round(float(np.median(v)) / 1e6, 4) for m, v in cycles.items()},
        "overhead_pct": {m: round(100 * (float(np.median(v)) / bare - 1), 2)
                         for m, v in cycles.items() if m != "bare"},
        "per_round_overhead_pct": {
            m: [round(100 * (rd[m] / rd["bare"] - 1), 2) for rd in rounds]
            for m in modes if m != "bare"
        },
        "median_of_round_overheads_pct": {
            m: round(float(np.median([100 * (rd[m] / rd["bare"] - 1) for rd in rounds])), 2)
            for m in modes if m != "bare"
        },
        "per_round_median_ms": rounds,
        "perfdiff_run": extra,
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=1)


if __name__ == "__main__":
    main()
