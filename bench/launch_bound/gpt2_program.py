"""The launch-bound third-party program as a user would run it: HF GPT-2 ``generate`` steps.

Each step is an NVTX range named ``step`` (``torch.cuda.nvtx``), so
``perfdiff collect --cycle-range step -- python bench/launch_bound/gpt2_program.py`` cuts
one cycle per step; the program does not import perfdiff. It prints the median of its own
step times (host wall clock) at the end, so bare runs give the untraced step time.

Usage: python bench/launch_bound/gpt2_program.py [--attn sdpa|eager] [--steps 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--attn", default="sdpa")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config

    torch.manual_seed(0)
    cfg = GPT2Config()
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=args.attn)
    model = model.to(device="cuda", dtype=torch.float16).eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, 16), device="cuda")
    mask = torch.ones_like(prompt)
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        with torch.cuda.nvtx.range("step"), torch.no_grad():
            model.generate(prompt, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                           pad_token_id=0, attention_mask=mask)
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"attn": args.attn, "steps": args.steps,
                      "median_step_ms": round(1e3 * statistics.median(times[3:]), 2)}))


if __name__ == "__main__":
    main()
