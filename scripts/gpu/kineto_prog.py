"""One program, recorded two ways: under torch.profiler (a Kineto trace) or under perfdiff.

Why one file: issue 15's acceptance compares a torch.profiler trace with a ``perfdiff collect``
recording of the *same* program; the step function is shared, only the recording differs.
``--mode profiler`` runs torch.profiler with a schedule (wait 1, warm-up 4, active STEPS) and
writes ``export_chrome_trace`` to ``--out`` (.json.gz); ``--mode perfdiff`` wraps each step in
``perfdiff.cycle()`` (run it as ``perfdiff collect --warmup 5 -o X -- python kineto_prog.py``).
Either way the step first runs ``--settle-s`` seconds unmeasured (``settle``), so that both
sources measure a GPU in the same steady state rather than two phases of its warm-up ramp.

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
import sys
import time
from collections.abc import Callable
from typing import Any

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

    shape = ModelShape(layers=1, d_model=768, heads=12, vocab=8192, max_seq=512, dropout=0.1,
                       attention="sdpa")
    model = build_model(torch, shape).to(device="cuda").train()
    kwargs: dict[str, Any] = {"foreach": False} if abnormal else {"fused": True}
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, **kwargs)
    inputs = torch.randint(0, 8192, (16, 512), device="cuda")
    targets = torch.randint(0, 8192, (16, 512), device="cuda")

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
           ) -> None:
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
    some hundreds of steps apart.
    """
    if seconds <= 0 and steps_wanted <= 0:
        return
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(PROGRAMS), required=True)
    parser.add_argument("--variant", choices=["normal", "abnormal"], default="normal")
    parser.add_argument("--mode", choices=["profiler", "perfdiff"], required=True)
    parser.add_argument("--steps", type=int, default=25, help="active (measured) steps")
    parser.add_argument("--out", default="trace.json.gz", help="trace file (profiler mode)")
    parser.add_argument("--settle-s", type=float, default=20.0,
                        help="run the step untraced this many seconds first (GPU steady state)")
    parser.add_argument("--settle-steps", type=int, default=0,
                        help="settle exactly this many steps instead of --settle-s seconds")
    parser.add_argument("--gap-ms", type=float, default=0.0,
                        help="sleep this many ms after every step, inside its cycle (keeps the "
                             "GPU below its power cap)")
    args = parser.parse_args()
    import torch

    torch.manual_seed(0)
    step = gapped(PROGRAMS[args.model](torch, args.variant == "abnormal"), args.gap_ms)
    settle(step, torch, args.settle_s, args.settle_steps)
    total = WAIT + WARMUP + args.steps
    if args.mode == "perfdiff":
        import perfdiff

        for _ in range(total):
            with perfdiff.cycle():
                step()
        return 0
    from torch.profiler import ProfilerActivity, profile, schedule

    sched = schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                 on_trace_ready=lambda p: p.export_chrome_trace(args.out)) as prof:
        for _ in range(total):
            step()
            prof.step()
    with contextlib.suppress(Exception):
        torch.cuda.synchronize()
    print(f"kineto_prog: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
