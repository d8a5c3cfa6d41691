"""An inference loop that marks iterations with ``perfdiff.cycle()`` (and ``mark_cycle``).

The markers cost one attribute read when no collector is active, so they can stay in
production code. Record it with::

    perfdiff collect -o marks.json.gz -- python docs/examples/cycle_marks.py

Labels group cycles into cases: here one case per batch size, compared case by case.
"""

from __future__ import annotations

import argparse

import torch

import perfdiff


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--width", type=int, default=2048)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.width, 4 * args.width), torch.nn.GELU(),
        torch.nn.Linear(4 * args.width, args.width),
    ).cuda().half().eval()
    with torch.inference_mode():
        for batch in (64, 256):
            x = torch.randn(batch, args.width, device="cuda", dtype=torch.half)
            for _ in range(args.steps):
                with perfdiff.cycle(label=f"batch={batch}"):
                    out = model(x)
                    out.float().sum().item()  # the answer is needed on the host each step
        # A loop body that cannot be indented: mark_cycle() starts the next cycle.
        x = torch.randn(128, args.width, device="cuda", dtype=torch.half)
        for _ in range(args.steps):
            perfdiff.mark_cycle(label="batch=128")
            model(x).float().sum().item()
        perfdiff.end_cycle()


if __name__ == "__main__":
    main()
