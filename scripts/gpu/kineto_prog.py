"""One program, recorded two ways: under torch.profiler (a Kineto trace) or under perfdiff.

Why one file: issue 15's acceptance compares a torch.profiler trace with a ``perfdiff collect``
recording of the *same* program; the step function is shared, only the recording differs.
``--mode profiler`` runs torch.profiler with a schedule (wait 1, warm-up 4, active STEPS) and
writes ``export_chrome_trace`` to ``--out`` (.json.gz); ``--mode perfdiff`` wraps each step in
``perfdiff.cycle()`` (run it as ``perfdiff collect --warmup 5 -o X -- python kineto_prog.py``).
Either way the step first runs ``--settle-s`` seconds unmeasured (``settle``), so that both
sources measure a GPU in the same steady state rather than two phases of its warm-up ramp.

``--mode both`` does the two in ONE process (``both``): settle, then a perfdiff recording of
5 warm-up + STEPS cycles by perfdiff's own collector in-process (``run_collection`` with the
step as a workload, ``--run-file``), then a short untraced re-settle, then the torch.profiler
trace of the same schedule as profiler mode (``--out``). Why: single kernels differ by up to
~4 % from one process to the next on the same clock (bench/README.md, torch.profiler
section), so two separate processes compare processes, not the two readers. perfdiff must
come first: after Kineto has run, CUPTI stamps the process's records in Kineto's clock.

``--gap-ms`` (default 0) sleeps that many milliseconds after every step, inside the step's
cycle (profiler mode: before ``prof.step()``; perfdiff mode: inside ``with perfdiff.cycle()``,
after the step; and in ``settle``). Why: a GPU busy 100 % of the time settles at its power cap
(gpt-normal on the H100: 674-680 W, throttle reason 0x4 SW power cap, SM clock 1785-1830 MHz),
where the clock follows power draw, so the two sources' different host overhead gives them
different clocks and per-kernel times a few % apart. A duty cycle below 100 % (a few ms idle
per step, each step synchronizes first) keeps the steady state below the cap, at the clock
the GPU boosts to, the same for both sources. The idle gap lies inside the step, so it adds
to the step's wall time (and to ``[GPU idle]``) but to no kernel's time. Measured with
``--gap-ms 5`` (kineto_record.sh's default): every recording's NVML read 1980 MHz with no
throttle reason, 219-354 W, and gpt-normal's kernels agreed within 1.3 % instead of 4.3 %.

Sizes are chosen so that each step is GPU-bound (GPU work of several ms against well under a
millisecond of launches): a host-bound step's time moves with the profiler's own CPU overhead,
which a perfdiff recording does not have. Programs (``--model``):
- ``gpt``: forward of a small decoder-only transformer in fp16 (gpt-infer style); abnormal:
  the hand-written attention instead of SDPA.
- ``train``: a training step (bf16 autocast, cross-entropy, backward, fused AdamW); abnormal:
  the per-parameter AdamW loop instead of the fused kernel.
- ``hf``: Hugging Face GPT-2 (random init from a config, no download), forward in fp16;
  abnormal: ``attn_implementation="eager"`` instead of ``"sdpa"``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParams, run_cycles
from perfdiff.markers import CycleMarker

WAIT, WARMUP = 1, 4


def gpt_step(torch: Any, abnormal: bool) -> Callable[[], None]:
    from perfdiff.collect.workloads._transformer import ModelShape, build_model

    shape = ModelShape(layers=2, d_model=1024, heads=16, vocab=8192, max_seq=1024, dropout=0.0,
                       attention="manual" if abnormal else "sdpa")
    model = build_model(torch, shape).to(device="cuda", dtype=torch.float16).eval()
    tokens = torch.randint(0, 8192, (32, 1024), device="cuda")

    def step() -> None:
        with torch.no_grad():
            model(tokens).argmax(-1)[:, -1].cpu()

    return step


def train_step(torch: Any, abnormal: bool) -> Callable[[], None]:
    from perfdiff.collect.workloads._transformer import ModelShape, build_model

    # 64 x 512 tokens at d_model 1024 (was 16 x 512 at 768): at the smaller size the GPU was
    # busy only 35-51 % of each step's kernel span, so each tool's own host overhead set where
    # the GPU idled, and a GEMM after idle ran longer (its duration against the GPU's busy
    # share of the 200 us before it: Spearman -0.5 to -0.8 in all four recordings of
    # 2026-11-25): torch.profiler and perfdiff then measured the same kernel 2-4 % apart.
    shape = ModelShape(layers=1, d_model=1024, heads=16, vocab=8192, max_seq=512, dropout=0.1,
                       attention="sdpa")
    model = build_model(torch, shape).to(device="cuda").train()
    kwargs: dict[str, Any] = {"foreach": False} if abnormal else {"fused": True}
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, **kwargs)
    inputs = torch.randint(0, 8192, (64, 512), device="cuda")
    targets = torch.randint(0, 8192, (64, 512), device="cuda")

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(inputs)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, 8192).float(),
                                                     targets.view(-1))
        loss.backward()
        opt.step()
        loss.item()

    return step


def hf_step(torch: Any, abnormal: bool) -> Callable[[], None]:
    from transformers import GPT2Config, GPT2LMHeadModel

    impl = "eager" if abnormal else "sdpa"
    config = GPT2Config(n_layer=2, n_embd=768, n_head=12, n_positions=1024, vocab_size=8192,
                        attn_implementation=impl)
    model = GPT2LMHeadModel(config).to(device="cuda", dtype=torch.float16).eval()
    used = getattr(model.config, "_attn_implementation", "?")
    print(f"kineto_prog: hf attention {used} (asked {impl})", file=sys.stderr)
    tokens = torch.randint(0, 8192, (16, 1024), device="cuda")

    def step() -> None:
        with torch.no_grad():
            model(input_ids=tokens).logits.argmax(-1)[:, -1].cpu()

    return step


PROGRAMS = {"gpt": gpt_step, "train": train_step, "hf": hf_step}


def gapped(step: Callable[[], None], gap_ms: float) -> Callable[[], None]:
    """``step`` followed by ``gap_ms`` ms of sleep (GPU idle: the step synchronizes first).

    Why: a duty cycle below 100 % keeps the GPU's steady state below its power cap, so both
    sources see it at the same clock (module docstring).
    """
    if gap_ms <= 0:
        return step
    gap_s = gap_ms / 1e3

    def run() -> None:
        step()
        time.sleep(gap_s)

    return run


def settle(step: Callable[[], None], torch: Any, seconds: float, steps_wanted: int = 0,
           ) -> int:
    """Run ``step`` until the GPU has been busy ``seconds``, before anything is measured.

    Why: a process that measures its first steps right after start sees the GPU still leaving
    idle (clocks, power and temperature move for seconds under a new load; gpt-normal's SDPA
    kernel went 405 -> 495 us per step over 25 steps in the first, unsettled recording), and
    two processes caught in different phases of that ramp disagree by a few %. ``step`` is the
    gapped step (``--gap-ms``), so the settle runs at the duty cycle that is measured after it.
    Each step synchronizes (``.cpu()`` or ``.item()``), so wall time here is GPU-busy time
    plus the gap. Nothing of this is traced by torch.profiler (it runs before the profiler
    starts); under ``perfdiff collect`` its kernels lie before the first cycle (outside every
    cycle; kineto_trim.py drops them). One line per second of mean step time goes to stderr, to
    show when the GPU became steady (wall time, so host work, the gap and perfdiff's buffer
    intake count too: on the H100 gpt's step time stayed within 2-3 % from the 2nd second on).
    A program whose steady state is the GPU's power cap still sees its clock move
    (fixtures/README.md); ``--gap-ms`` is there to keep it below the cap.

    ``steps_wanted`` > 0 (``--settle-steps``) runs exactly that many steps instead: both sources
    then start measuring from the same model state (weights, optimizer moments, RNG: dropout
    masks and data are the same step for step), where a timed settle leaves the two processes
    some hundreds of steps apart. Returns the number of steps run.
    """
    if seconds <= 0 and steps_wanted <= 0:
        return 0
    start = last = time.monotonic()
    steps = since = 0
    while (steps < steps_wanted) if steps_wanted > 0 else (time.monotonic() - start < seconds):
        step()
        steps += 1
        since += 1
        now = time.monotonic()
        if now - last >= 1.0:
            print(f"kineto_prog: settle {now - start:5.1f} s: {1e3 * (now - last) / since:.3f} "
                  f"ms per step", file=sys.stderr)
            last, since = now, 0
    torch.cuda.synchronize()
    print(f"kineto_prog: settled {steps} steps in {time.monotonic() - start:.1f} s",
          file=sys.stderr)
    return steps


IN_PROCESS = ("in-process: recorded by perfdiff.collect.session.run_collection in the process "
              "that then traced the same program with torch.profiler (kineto_prog.py --mode "
              "both: settle, perfdiff recording, torch.profiler trace, in that order)")


@dataclass(frozen=True)
class InProcessParams(WorkloadParams):
    """The program and how it was run, as the run file's workload parameters."""

    model: str = "gpt"
    variant: str = "normal"
    settle_s: float = 20.0
    settle_steps: int = 0
    gap_ms: float = 0.0
    trace: str = ""  # the torch.profiler trace this process writes after the recording


class InProcessSteps(Workload):
    """The program's (gapped) step as a perfdiff workload: one cycle per step.

    Why a workload and not ``perfdiff.cycle()``: ``--mode both`` records with perfdiff's own
    collector (``run_collection``, the path of ``perfdiff collect gpt-infer``) inside this
    process, so that the recording and the torch.profiler trace that follows share every
    process-level condition (memory placement, allocator state, library handles). ``setup``
    runs the settle: the collector calls it before tracing starts, so the settle's kernels are
    never recorded (no trimming, unlike the separate-process recordings).
    """

    name = "kineto_prog.py --mode both"
    summary = "a kineto_prog.py step, recorded in the process that traces it with torch.profiler"
    params_class = InProcessParams
    idle_between_cycles = True  # every step synchronizes (.cpu() / .item()), then sleeps

    def __init__(self, params: InProcessParams, step: Callable[[], None], torch: Any) -> None:
        super().__init__(params)
        self._step = step
        self._torch = torch
        self.settled = 0

    def setup(self, device: str) -> None:
        p = self.params
        assert isinstance(p, InProcessParams)
        self.settled = settle(self._step, self._torch, p.settle_s, p.settle_steps)

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        run_cycles(marker, plan, self._step)


def record_in_process(workload: InProcessSteps, steps: int, run_file_out: Path,
                      sources: Any = None, environment: Any = None) -> Any:
    """Record ``steps`` measured cycles (after 5 warm-up) with perfdiff's collector, here.

    Settings as the separate-process recordings had (``perfdiff collect --no-pm --warmup 5``):
    no PM sampling (torch.profiler does not PM-sample either), NVML polled, memcpy/memset
    traced, cycle boundary marks (the built-in workloads' default), one measured cycle in 8
    left untraced. ``sources``/``environment`` default to the real ones (``open_sources``);
    the CPU test passes fakes. Returns the sources (the caller checks their tracing is off).
    """
    from perfdiff.cli.collect import summary_line
    from perfdiff.collect.session import CollectSettings, run_collection
    from perfdiff.schema.io import save_run_file

    # the fixed pattern of the fixtures recorded beside torch.profiler (fixtures/kineto)
    settings = CollectSettings(pm_sampling=False, untraced_every=8)
    device = "cuda:0"
    if sources is None:
        from perfdiff.collect.sources import open_sources

        opened = open_sources(settings)
        sources, environment, device = opened.sources, opened.environment, opened.device
    for warning in sources.warnings:
        print(f"kineto_prog: perfdiff warning: {warning}", file=sys.stderr)
    command = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])
    outcome = run_collection(workload, CyclePlan(measured=steps, warmup=5), sources,
                             environment, settings, device=device,
                             extra_params={"recorded": IN_PROCESS, "collect_command": command})
    run_file = outcome.run_file
    params = {**run_file.workload.params, "settled_steps": workload.settled}
    run_file = replace(run_file, workload=replace(run_file.workload, params=params,
                                                  command=(Path(sys.executable).name,
                                                           *sys.argv)))
    path = save_run_file(run_file, run_file_out)
    print(f"kineto_prog: {summary_line(run_file, path)}", file=sys.stderr)
    for warning in run_file.collection.warnings:
        print(f"kineto_prog: perfdiff warning: {warning}", file=sys.stderr)
    if outcome.error is not None or outcome.interrupted:
        raise RuntimeError(f"perfdiff recording incomplete: {run_file.status.reason}")
    return sources


def check_tracing_off(sources: Any, step: Callable[[], None], flush: Callable[[], None],
                      ) -> str:
    """Raise unless perfdiff's CUPTI activity is off: no kind enabled, and one more step
    followed by a flush of every CUPTI buffer hands perfdiff nothing.

    Why: torch.profiler must see the GPU without perfdiff's tracing still running (its cost
    would land in the trace's kernels), and perfdiff's buffers must all be taken in before
    Kineto registers its own. Returns a line for the log.
    """
    trace = sources.trace
    enabled = list(getattr(trace, "_enabled", []))  # CuptiActivityBackend's enabled kinds
    intake = getattr(trace, "intake", None)
    before = (trace.records_so_far(), len(intake.handovers) if intake is not None else 0)
    step()
    flush()
    after = (trace.records_so_far(), len(intake.handovers) if intake is not None else 0)
    if enabled or after != before:
        raise RuntimeError(f"perfdiff's CUPTI activity is still on after the recording "
                           f"(kinds enabled {enabled}; records, hand-overs {before} -> {after})")
    return (f"perfdiff tracing off: no activity kind enabled; a step and a flush handed it "
            f"nothing ({after[0]} records, {after[1]} hand-overs, unchanged)")


def profile_steps(step: Callable[[], None], torch: Any, steps: int, out: str,
                  stamps: list[int] | None = None) -> None:
    """torch.profiler over wait + warm-up + ``steps`` steps, exported as a chrome trace.

    ``stamps`` (``--mode both``) gets ``time.perf_counter_ns()`` when the schedule's active
    steps begin and when the last of them has run (before the export), to read NVML over the
    traced steps only."""
    from torch.profiler import ProfilerActivity, profile, schedule

    sched = schedule(wait=WAIT, warmup=WARMUP, active=steps, repeat=1)
    total = WAIT + WARMUP + steps
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for i in range(total):
            if i == WAIT + WARMUP and stamps is not None:
                stamps.append(time.perf_counter_ns())
            step()
            if i == total - 1 and stamps is not None:
                stamps.append(time.perf_counter_ns())
            prof.step()
    with contextlib.suppress(Exception):
        torch.cuda.synchronize()
    print(f"kineto_prog: wrote {out}", file=sys.stderr)


def trace_kernels(path: str) -> int:
    """GPU kernel events in a written chrome trace (0: Kineto recorded none)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return sum(1 for e in doc.get("traceEvents", []) if e.get("cat") == "kernel")


def nvml_summary(series: list[Any], lo_ns: int, hi_ns: int) -> str:
    """SM clock, power and throttle reasons read by NVML between ``lo_ns`` and ``hi_ns``."""
    import numpy as np

    parts = []
    size = 0
    for m in series:
        t = np.asarray(m.timestamps_ns)
        v = np.asarray(m.values)[(t >= lo_ns) & (t <= hi_ns)]
        size = max(size, v.size)
        if not v.size:
            continue
        if m.name == "nvml.throttle_reasons":
            parts.append(f"throttle {sorted({hex(int(x)) for x in v})}")
        elif m.name in ("nvml.sm_clock", "nvml.power", "nvml.temperature"):
            parts.append(f"{m.name[5:]} {v.min():g}-{v.max():g} {m.unit}")
    return f"{size} samples: " + ", ".join(parts)


def both(step: Callable[[], None], torch: Any, args: argparse.Namespace) -> int:
    """Settle, perfdiff recording, short re-settle, torch.profiler trace: one process.

    Order: perfdiff first. Once Kineto has run in a process, CUPTI stamps every later record
    in Kineto's clock (docs/howto/collect.md), so a perfdiff recording after it would be
    wrong; a trace after perfdiff is not affected (perfdiff registers no timestamp callback
    and switches all its activity kinds off at stop, which ``check_tracing_off`` verifies).
    The re-settle (``--between-s``) runs the step again, untraced, after the run file is
    written: the GPU idles while perfdiff builds and saves it, and the trace should start
    from the same steady state as the recording did.
    """
    from cupti import cupti

    from perfdiff.collect.nvml.nvml_process import NvmlDefaultSampler

    params = InProcessParams(model=args.model, variant=args.variant, settle_s=args.settle_s,
                             settle_steps=args.settle_steps, gap_ms=args.gap_ms,
                             trace=Path(args.out).name)
    sources = record_in_process(InProcessSteps(params, step, torch), args.steps,
                                Path(args.run_file))
    print(f"kineto_prog: {check_tracing_off(sources, step, lambda: cupti.activity_flush_all(1))}",
          file=sys.stderr)
    settle(step, torch, args.between_s)
    nvml = NvmlDefaultSampler(0, time.perf_counter_ns, 0.01)
    nvml.start()
    stamps: list[int] = []
    profile_steps(step, torch, args.steps, args.out, stamps)
    series = nvml.stop()
    print(f"kineto_prog: NVML over the trace's active steps ({nvml.mode} sampler): "
          f"{nvml_summary(series, stamps[0], stamps[-1])}", file=sys.stderr)
    kernels = trace_kernels(args.out)
    print(f"kineto_prog: the trace holds {kernels} kernel events", file=sys.stderr)
    if kernels == 0:
        print("kineto_prog: error: torch.profiler recorded no kernel after perfdiff's "
              "recording in this process", file=sys.stderr)
        return 1
    return 0


def cupti_on_early(torch: Any) -> Callable[[], None]:
    """Switch CUPTI activity (kernels, memcpy, memset) on right after CUDA initialisation,
    before the program allocates anything, as ``perfdiff collect``'s child does (it starts
    CUPTI inside torch's lazy CUDA initialisation); returns the function that switches it off.

    Why (``--cupti-early``, profiler mode only): the separate-process train recordings of
    2026-11-27 read one memory-bound bf16 sum reduce kernel 2.0-2.5 % slower under ``perfdiff
    collect`` than the torch.profiler process did, in all four pairs, while one process
    recording both read it alike. In every other process CUPTI starts after the model's tensors
    exist; if CUPTI's own device allocations at start move where those tensors land, a trace
    taken with CUPTI started early should read the kernel as the perfdiff recording does.
    """
    from cupti import cupti

    from perfdiff.collect.cupti.raw_intake import RawIntake

    torch.cuda.init()
    intake = RawIntake.for_cupti(cupti, lambda: int(cupti.get_timestamp()))
    intake.register()
    kinds = (cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.MEMCPY,
             cupti.ActivityKind.MEMSET)
    for kind in kinds:
        cupti.activity_enable(kind)

    def off() -> None:
        cupti.activity_flush_all(1)
        for kind in kinds:
            cupti.activity_disable(kind)
        print(f"kineto_prog: early CUPTI off after {intake.records} records", file=sys.stderr)

    return off


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(PROGRAMS), required=True)
    parser.add_argument("--variant", choices=["normal", "abnormal"], default="normal")
    parser.add_argument("--mode", choices=["profiler", "perfdiff", "both"], required=True)
    parser.add_argument("--steps", type=int, default=25, help="active (measured) steps")
    parser.add_argument("--out", default="trace.json.gz",
                        help="trace file (profiler and both modes)")
    parser.add_argument("--run-file", default="run.json.gz",
                        help="perfdiff run file (both mode)")
    parser.add_argument("--between-s", type=float, default=3.0,
                        help="both mode: run the step untraced this many seconds between the "
                             "perfdiff recording and the torch.profiler trace")
    parser.add_argument("--settle-s", type=float, default=20.0,
                        help="run the step untraced this many seconds first (GPU steady state)")
    parser.add_argument("--settle-steps", type=int, default=0,
                        help="settle exactly this many steps instead of --settle-s seconds")
    parser.add_argument("--gap-ms", type=float, default=0.0,
                        help="sleep this many ms after every step, inside its cycle (keeps the "
                             "GPU below its power cap)")
    parser.add_argument("--cupti-early", choices=["no", "model", "settle"], default="no",
                        help="profiler mode: CUPTI activity on from CUDA initialisation until "
                             "the model is built, or until the settle ends (cupti_on_early)")
    args = parser.parse_args()
    import torch

    torch.manual_seed(0)
    early_off = cupti_on_early(torch) if args.cupti_early != "no" else None
    step = gapped(PROGRAMS[args.model](torch, args.variant == "abnormal"), args.gap_ms)
    if args.mode == "both":
        return both(step, torch, args)  # settles inside the recording's setup
    if early_off is not None and args.cupti_early == "model":
        early_off()
    settle(step, torch, args.settle_s, args.settle_steps)
    if early_off is not None and args.cupti_early == "settle":
        early_off()
    total = WAIT + WARMUP + args.steps
    if args.mode == "perfdiff":
        import perfdiff

        for _ in range(total):
            with perfdiff.cycle():
                step()
        return 0
    profile_steps(step, torch, args.steps, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
