"""(d) HF GPT-2 ``generate`` at batch 1, SDPA or eager attention, timed by the program.

The same model and step as bench/launch_bound/gpt2_program.py (GPT2Config(), random weights,
fp16, 16-token prompt, 32 new tokens per ``generate``; NVTX range ``step`` per step), with its
own per-step timer (``STEPTIMER {json}``) and an optional torch.profiler trace.

Usage: python bench/record_truth/gpt2_generate.py [--attn sdpa|eager] [--steps 30]
           [--trace OUT.pt.trace.json.gz] [--active 2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from steptimer import StepTimer, profiled


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--trace")
    parser.add_argument("--active", type=int, default=2)
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config

    torch.manual_seed(0)
    cfg = GPT2Config()
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=args.attn)
    model = model.to(device="cuda", dtype=torch.float16).eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, 16), device="cuda")
    mask = torch.ones_like(prompt)
    timer = StepTimer(skip=3)
    timer.mark()
    prof = profiled(args.trace, active=args.active, wait=3, warmup=1)
    with prof if prof is not None else contextlib.nullcontext():
        for _ in range(args.steps):
            with torch.cuda.nvtx.range("step"), torch.no_grad():
                model.generate(prompt, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                               pad_token_id=0, attention_mask=mask)
                torch.cuda.synchronize()
            timer.mark()
            if prof is not None:
                prof.step()
    timer.print_summary(program="gpt2_generate", attn=args.attn)


if __name__ == "__main__":
    main()
