"""A small DistributedDataParallel training job, one process per GPU, for ``torchrun``.

Each iteration is an NVTX range named ``step``; every rank records its own GPU::

    perfdiff collect -o ddp.json.gz --cycle-range step -- \
        torchrun --nproc-per-node 2 docs/examples/ddp_train.py --steps 40

The merged run file names the devices GPU 0 .. K-1 by rank (docs/howto/multi-gpu.md).
The loss is read on the host every step, as a training loop that logs it does, so a step's
cycle time is the step's real time.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4096)
    args = parser.parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.GELU()]
    model = DistributedDataParallel(torch.nn.Sequential(*layers).to(device),
                                    device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    generator = torch.Generator(device=device).manual_seed(1 + dist.get_rank())
    x = torch.randn(args.batch, args.width, device=device, generator=generator)
    y = torch.randn(args.batch, args.width, device=device, generator=generator)
    for step in range(args.steps):
        with torch.cuda.nvtx.range("step"):
            opt.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            value = loss.item()
        if dist.get_rank() == 0 and step % 10 == 0:
            print(f"step {step} loss {value:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
