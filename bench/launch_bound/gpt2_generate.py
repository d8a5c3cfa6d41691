"""Launch-bound third-party program: HF GPT-2 ``generate`` at batch 1, timed in ONE process.

Why one process with alternating blocks: this VM's host speed varies between processes
(bare medians of the same program 191-327 ms over seven processes, gpu-notes), so only
in-process alternation measures a profiler's cost. Each round runs one block of steps per
mode, in an order that rotates from round to round; a block starts its mode, runs one
unmeasured step, times ``--steps`` steps (``generate`` of 32 new tokens, then a synchronize)
and stops its mode (start and stop are outside the timed steps).

Modes:
- ``untraced``: nothing.
- ``floor``: CUPTI CONCURRENT_KERNEL activity alone, buffers handed back untouched (ctypes
  callbacks that do no work): what any CUPTI-based kernel trace costs.
- ``perfdiff``: perfdiff's collector as ``perfdiff collect --cycle-range step -- CMD`` runs
  it in a user program: activity (kernels, memcpy, memset) with raw intake, PM sampling
  (2 metrics, 20 us), NVML (10 ms), a cycle per step with its two boundary marks.
- ``torch.profiler``: ``profile(activities=[CPU, CUDA])``.

Overhead of a mode in a round = median step of the mode / median step of the round's
untraced block - 1; reported: the median over rounds, and all rounds.

Usage: python bench/launch_bound/gpt2_generate.py [--rounds 12] [--steps 2]
           [--attn sdpa|eager] [--modes untraced,floor,perfdiff,torch.profiler] [--json OUT]
Model: transformers GPT2Config() (12 layers, 768 wide), random weights, fp16; prompt of 16
tokens; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

MODES = ("untraced", "floor", "perfdiff", "torch.profiler")


def build_model(torch: Any, attn: str) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, GPT2Config

    torch.manual_seed(0)
    cfg = GPT2Config()
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    model = model.to(device="cuda", dtype=torch.float16).eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, 16), device="cuda")
    return model, prompt


def make_step(torch: Any, model: Any, prompt: Any) -> Any:
    def step() -> None:
        with torch.no_grad():
            model.generate(prompt, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                           pad_token_id=0, attention_mask=torch.ones_like(prompt))
        torch.cuda.synchronize()
    return step


class Floor:
    """CUPTI kernel activity, buffers recycled without being read."""

    def __init__(self) -> None:
        from cupti import cupti

        from perfdiff.collect.raw_intake import RawIntake

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


class Perfdiff:
    """perfdiff's sources as a user program gets them (inject/child.py), one cycle per step."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def start(self) -> None:
        from perfdiff.collect.boundary_marks import TorchBoundaryMarker
        from perfdiff.collect.cupti_activity import CuptiActivityBackend
        from perfdiff.collect.cycles import CycleLog
        from perfdiff.collect.environment import torch_device_info
        from perfdiff.collect.nvml import NvmlSampler, load_nvml
        from perfdiff.collect.pm_sampling import DEFAULT_INTERVAL_NS, DEFAULT_METRICS, PmSampler

        self.trace = CuptiActivityBackend(trace_api=False, trace_memory=True)
        self.trace.start()
        self.marker = TorchBoundaryMarker(self.torch, 0)
        self.log = CycleLog(clock_ns=self.trace.clock_ns, mark=self.marker.mark)
        nvml = load_nvml()
        uuid = torch_device_info(self.torch, 0, nvml).uuid or None
        self.samplers = [
            PmSampler(DEFAULT_METRICS, DEFAULT_INTERVAL_NS, 0, self.trace.clock_ns),
            NvmlSampler(0, self.trace.clock_ns, 0.010, nvml=nvml, uuid=uuid),
        ]
        for sampler in self.samplers:
            sampler.start()

    def begin(self) -> None:
        self.log.begin_cycle("step", False)

    def end(self) -> None:
        self.log.end_cycle()

    def stop(self) -> dict[str, Any]:
        from perfdiff.collect.pm_sampling import coverage_warning

        self.torch.cuda.synchronize()
        series = [s for sampler in self.samplers for s in sampler.stop()]
        raw = self.trace.stop()
        from perfdiff.collect.program_marks import launches_from_marks

        problems: list[str] = []
        cycles = self.log.table(launches_from_marks(raw, self.marker.stream_ids, self.log,
                                                    problems))
        holds = sorted(e - s for s, e, _ in raw.handovers)
        kernels = raw.columns.kernels.size if raw.columns is not None else 0
        pm = [s for s in series if s.source == "pm_sampling"]
        cover = None
        if pm and cycles.index.size:
            span = (int(cycles.start_ns[0]), int(cycles.end_ns[-1]))
            cover = coverage_warning(pm[0].timestamps_ns, pm[0].interval_ns or 1, span)
        return {"kernels": int(kernels), "dropped": raw.dropped_records,
                "buffers": len(holds), "hold_ms_max": holds[-1] / 1e6 if holds else 0.0,
                "pm_samples": int(pm[0].timestamps_ns.size) if pm else 0,
                "pm_coverage_warning": cover, "warnings": self.trace.warnings + problems}


class Profiler:
    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def start(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self.prof.__enter__()

    def stop(self) -> dict[str, Any]:
        self.prof.__exit__(None, None, None)
        return {}


def run_block(mode: str, tools: dict[str, Any], step: Any, steps: int) -> dict[str, Any]:
    tool = tools.get(mode)
    if tool is not None:
        tool.start()
    step()  # first step after a switch: not measured
    times = []
    for _ in range(steps):
        if mode == "perfdiff":
            tool.begin()
        t0 = time.perf_counter_ns()
        step()
        times.append(time.perf_counter_ns() - t0)
        if mode == "perfdiff":
            tool.end()
    extra = tool.stop() if tool is not None else {}
    return {"mode": mode, "step_ms": [t / 1e6 for t in times], **extra}


def summarise(blocks: list[dict[str, Any]], modes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in modes:
        if mode == "untraced":
            continue
        ratios = []
        for r in sorted({b["round"] for b in blocks}):
            base = [b for b in blocks if b["round"] == r and b["mode"] == "untraced"]
            this = [b for b in blocks if b["round"] == r and b["mode"] == mode]
            if base and this:
                ratios.append(statistics.median(this[0]["step_ms"])
                              / statistics.median(base[0]["step_ms"]) - 1)
        out[mode] = {"overhead_pct_median": round(100 * statistics.median(ratios), 2),
                     "overhead_pct_rounds": [round(100 * x, 2) for x in ratios]}
    for mode in modes:
        steps = [t for b in blocks if b["mode"] == mode for t in b["step_ms"]]
        out.setdefault(mode, {})["median_step_ms"] = round(statistics.median(steps), 2)
    if "floor" in out and "perfdiff" in out:
        above = [p - f for p, f in zip(out["perfdiff"]["overhead_pct_rounds"],
                                       out["floor"]["overhead_pct_rounds"], strict=True)]
        out["perfdiff_above_floor_pp"] = {"median": round(statistics.median(above), 2),
                                          "rounds": [round(x, 2) for x in above]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--attn", default="sdpa")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--json")
    args = parser.parse_args()
    modes = args.modes.split(",")
    import torch

    model, prompt = build_model(torch, args.attn)
    step = make_step(torch, model, prompt)
    for _ in range(3):
        step()
    tools: dict[str, Any] = {"floor": Floor(), "perfdiff": Perfdiff(torch),
                             "torch.profiler": Profiler(torch)}
    blocks = []
    # torch.profiler last: once it has run, CUPTI stamps records in kineto's clock for the
    # rest of the process (docs/howto/collect.md), which spoilt every later perfdiff block
    # (H100, 2026-11-25: "CUPTI timestamps advanced 2.10x").
    early = [m for m in modes if m != "torch.profiler"]
    late = [m for m in modes if m == "torch.profiler"]
    schedule = [early[r % len(early):] + early[:r % len(early)] for r in range(args.rounds)]
    schedule += [["untraced", *late] for _ in range(args.rounds if late else 0)]
    for r, order in enumerate(schedule):
        for mode in order:
            block = run_block(mode, tools, step, args.steps)
            block["round"] = r
            blocks.append(block)
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v)
                              for k, v in block.items() if k != "step_ms"})
                  + f" median {statistics.median(block['step_ms']):.1f} ms", flush=True)
    summary = summarise(blocks, modes)
    result = {"attn": args.attn, "rounds": args.rounds, "steps": args.steps,
              "gpu": torch.cuda.get_device_name(0), "summary": summary, "blocks": blocks}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    sys.exit(main())
