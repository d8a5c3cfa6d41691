"""(a) A timm vision model's training loop, bf16 autocast or fp32, as a user writes it.

ViT-S/16 (``timm.create_model("vit_small_patch16_224")``, random weights: nothing is
downloaded), batch 64 of random 224x224 images, AdamW, cross-entropy, ``loss.item()`` every
step (as a loop that logs its loss does). The program imports no perfdiff: cycles under
``perfdiff collect`` come from its optimizer steps. Its own timer (steptimer.py, an optimizer
post-step hook) prints ``STEPTIMER {json}`` at the end: median steady step, every step.

Usage: python bench/record_truth/timm_train.py [--precision bf16|fp32] [--steps 40]
           [--batch 64] [--model vit_small_patch16_224] [--trace OUT.pt.trace.json.gz]
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
    parser.add_argument("--precision", choices=("bf16", "fp32"), default="bf16")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--model", default="vit_small_patch16_224")
    parser.add_argument("--trace", help="torch.profiler trace of 3 steps (after 7) to here")
    args = parser.parse_args()
    import timm
    import torch

    torch.manual_seed(0)
    model = timm.create_model(args.model, pretrained=False, num_classes=1000).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    images = torch.randn(args.batch, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (args.batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    timer = StepTimer()
    timer.hook_optimizers()
    prof = profiled(args.trace, active=3)
    amp = (torch.autocast("cuda", dtype=torch.bfloat16) if args.precision == "bf16"
           else contextlib.nullcontext())
    with prof if prof is not None else contextlib.nullcontext():
        for _ in range(args.steps):
            with amp:
                loss = loss_fn(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
            if prof is not None:
                prof.step()
    timer.print_summary(program="timm_train", precision=args.precision, model=args.model,
                        batch=args.batch)


if __name__ == "__main__":
    main()
