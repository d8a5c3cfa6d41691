"""(b) A torchvision CNN training loop, AMP (fp16 autocast, GradScaler) or fp32, unmodified.

ResNet-50 (``torchvision.models.resnet50(weights=None)``: random weights, nothing downloaded),
batch 64 of random 224x224 images, SGD with momentum, cross-entropy, ``loss.item()`` every step.
The program imports no perfdiff: under ``perfdiff collect`` its cycles are found from its
optimizer steps (GradScaler.step calls the optimizer's step, which fires torch's post-step
hooks). Its own timer (steptimer.py) prints ``STEPTIMER {json}`` at the end.

Usage: python bench/record_truth/cnn_train.py [--precision amp|fp32] [--steps 40] [--batch 64]
           [--trace OUT.pt.trace.json.gz]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from steptimer import StepTimer, profiled


def make_step(precision: str = "amp", batch: int = 64) -> Callable[[], None]:
    """One training step of the loop below (model, data and optimizer built once); also used
    by detach_probe.py, which times the same step in blocks."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(batch, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    amp = precision == "amp"
    scaler = torch.amp.GradScaler("cuda", enabled=amp)

    def step() -> None:
        ctx = (torch.autocast("cuda", dtype=torch.float16) if amp
               else contextlib.nullcontext())
        with ctx:
            loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        loss.item()

    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", choices=("amp", "fp32"), default="amp")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--trace", help="torch.profiler trace of 3 steps (after 7) to here")
    args = parser.parse_args()
    step = make_step(args.precision, args.batch)
    timer = StepTimer()
    timer.hook_optimizers()
    prof = profiled(args.trace, active=3)
    with prof if prof is not None else contextlib.nullcontext():
        for _ in range(args.steps):
            step()
            if prof is not None:
                prof.step()
    timer.print_summary(program="cnn_train", precision=args.precision, model="resnet50",
                        batch=args.batch)

if __name__ == "__main__":
    main()
