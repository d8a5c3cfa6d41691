"""An unmodified ``model.generate`` loop (issue 14): GPT-2 small, random init, greedy decode.

Every call generates exactly ``--new`` tokens (``min_new_tokens``), so each call launches the
same kernels. Prints how many ``generate`` calls it made, to check one cycle per call under
``--cycle-function transformers.generation.utils:GenerationMixin.generate``.
usage: python scripts/gpu/cycles_generate.py [--calls 6] [--new 24] [--batch 4] [--prompt 32]
"""

from __future__ import annotations

import argparse
import json

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--new", type=int, default=24)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=32)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).to("cuda", torch.bfloat16).eval()
    ids = torch.randint(0, 50257, (a.batch, a.prompt), device="cuda")
    mask = torch.ones_like(ids)
    tokens = 0
    for _ in range(a.calls):
        out = model.generate(ids, attention_mask=mask, max_new_tokens=a.new,
                             min_new_tokens=a.new, do_sample=False, pad_token_id=0)
        tokens += int(out.shape[1] - ids.shape[1])
    torch.cuda.synchronize()
    print("GENERATE " + json.dumps({"calls": a.calls, "new_tokens_per_call": tokens // a.calls}),
          flush=True)


if __name__ == "__main__":
    main()
