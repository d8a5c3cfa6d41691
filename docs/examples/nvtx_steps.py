"""A training loop that marks each iteration with an NVTX range named ``step``.

Nothing here knows about perfdiff: the ranges are the ones Nsight Systems users already
write. Record it with::

    perfdiff collect -o nvtx.json.gz --cycle-range step -- python docs/examples/nvtx_steps.py

Both common NVTX spellings are used (the ``nvtx`` package when installed, else
``torch.cuda.nvtx``); ranges with other names (``forward``, ``backward``) nest inside.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    try:
        import nvtx
    except ImportError:
        with torch.cuda.nvtx.range(name):
            yield
        return
    with nvtx.annotate(name):
        yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.width, args.width), torch.nn.GELU(),
        torch.nn.Linear(args.width, args.width),
    ).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.width, device="cuda")
    y = torch.randn(args.batch, args.width, device="cuda")
    for step in range(args.steps):
        with nvtx_range("step"):
            with nvtx_range("forward"):
                loss = F.mse_loss(model(x), y)
            with nvtx_range("backward"):
                loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
