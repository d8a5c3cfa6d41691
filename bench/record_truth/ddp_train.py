"""(e) A two-rank torchrun DDP training loop, bf16 autocast or fp32, as a user writes it.

timm ViT-S/16 (random weights: nothing is downloaded) wrapped in
``DistributedDataParallel``, batch 64 per rank of random 224x224 images, AdamW, cross-entropy,
``loss.item()`` every step. The program imports no perfdiff: under ``perfdiff collect`` its
cycles come from its optimizer steps. ``--slow-rank R --slow-matmuls K`` makes rank R run K
extra 4096x4096 matrix products (in the step's precision) before each forward: a straggler
planted on purpose, which the other rank waits for in DDP's gradient all-reduce (issue 26).

Every rank times its own steps (steptimer.py, an optimizer post-step hook); rank 0 prints
``STEPTIMER {json}`` (what bench/record_truth/untraced_check.py reads, set against the run
of rank 0), every rank prints ``RANKTIMER {json}`` with its rank.

Usage: python3 -m torch.distributed.run --nproc-per-node 2 bench/record_truth/ddp_train.py
           [--precision bf16|fp32] [--steps 40] [--batch 64] [--slow-rank 1 --slow-matmuls 250]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from steptimer import StepTimer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", choices=("bf16", "fp32"), default="bf16")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--model", default="vit_small_patch16_224")
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-matmuls", type=int, default=0)
    args = parser.parse_args()
    import timm
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = timm.create_model(args.model, pretrained=False, num_classes=1000).to(device).train()
    model = DistributedDataParallel(model, device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=device).manual_seed(1 + rank)
    images = torch.randn(args.batch, 3, 224, 224, device=device, generator=gen)
    labels = torch.randint(0, 1000, (args.batch,), device=device, generator=gen)
    loss_fn = torch.nn.CrossEntropyLoss()
    slow = args.slow_matmuls if rank == args.slow_rank else 0
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    a = torch.randn(4096, 4096, device=device, dtype=dtype) if slow else None
    timer = StepTimer()
    timer.hook_optimizers()
    amp = (torch.autocast("cuda", dtype=torch.bfloat16) if args.precision == "bf16"
           else contextlib.nullcontext())
    for _ in range(args.steps):
        for _ in range(slow):
            assert a is not None
            a = torch.tanh(a @ a)
        with amp:
            loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
    extra = {"program": "ddp_train", "precision": args.precision, "batch": args.batch,
             "rank": rank, "slow_matmuls": slow}
    print("RANKTIMER " + json.dumps(timer.summary(**extra)), flush=True)
    if rank == 0:
        timer.print_summary(**extra)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
