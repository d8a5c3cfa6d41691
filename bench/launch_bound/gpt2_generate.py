"""Launch-bound third-party program: HF GPT-2 ``generate`` at batch 1, timed in ONE process.

Why one process with alternating blocks: this VM's host speed varies between processes
(bare medians of the same program 191-327 ms over seven processes, gpu-notes), so only
in-process alternation measures a profiler's cost. Each round runs one block of steps per
mode, in an order that rotates from round to round; a block starts its mode, runs one
unmeasured step, times ``--steps`` steps (``generate`` of 32 new tokens, then a synchronize)
and stops its mode (start and stop are outside the timed steps).

Modes: ``tools.py`` (untraced, floor, activity, marks, nvml, pm, perfdiff, pm_alone,
torch.profiler); ``perfdiff`` is the collector as ``perfdiff collect --cycle-range step --
CMD`` runs it in a user program. ``--steps 1 --warm 0`` alternates the modes step by step
(finest alternation: this VM's host speed drifts within seconds).

Overhead of a mode in a round = median step of the mode / median step of the round's
untraced block - 1; reported: the median over rounds, and all rounds.

Usage: python bench/launch_bound/gpt2_generate.py [--rounds 12] [--steps 2] [--warm 1]
           [--attn sdpa|eager] [--modes untraced,floor,perfdiff,torch.profiler] [--json OUT]
Model: transformers GPT2Config() (12 layers, 768 wide), random weights, fp16; prompt of 16
tokens; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tools import PARTS, chosen_modes, run_rounds, summarise, write_result


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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--warm", type=int, default=1)
    parser.add_argument("--attn", default="sdpa")
    parser.add_argument("--modes", default="untraced,floor,perfdiff,torch.profiler")
    parser.add_argument("--pin", type=int, default=-1,
                        help="run the program thread on this core, other threads elsewhere")
    parser.add_argument("--json")
    args = parser.parse_args()
    modes = chosen_modes(parser, args.modes, PARTS)
    import torch

    model, prompt = build_model(torch, args.attn)
    step = make_step(torch, model, prompt)
    for _ in range(3):
        step()
    blocks, pin = run_rounds(torch, modes, step, args)
    write_result({"attn": args.attn, "rounds": args.rounds, "steps": args.steps,
                  "warm": args.warm, "gpu": torch.cuda.get_device_name(0),
                  "summary": summarise(blocks, modes)}, blocks, modes, pin, args.json)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    sys.exit(main())
