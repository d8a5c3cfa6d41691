"""What each part of perfdiff's collector costs per launch, in ONE process (issue 13).

A "step" is ``--launches`` launches of a one-element ``add_`` (the host-bound extreme: each
launch is ~8 us of host work on the H100 VM) and a synchronize. Each round runs one block per
mode (``tools.py``: untraced, floor, activity, marks, nvml, pm, perfdiff, pm_alone), the
order rotating; a block is ``--warm`` unmeasured steps and ``--steps`` timed ones. Reported
per mode: the median over rounds of its overhead against the round's untraced block, in %
and in us per launch, and the median of (mode - floor) per round.

Usage: python bench/launch_bound/parts.py [--rounds 12] [--steps 3] [--warm 1]
           [--launches 20000] [--modes ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tools import PARTS, run_rounds, summarise, write_result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warm", type=int, default=1)
    parser.add_argument("--launches", type=int, default=20_000)
    parser.add_argument("--modes", default=",".join(m for m in PARTS if m != "torch.profiler"))
    parser.add_argument("--pin", type=int, default=-1,
                        help="run the program thread on this core, other threads elsewhere")
    parser.add_argument("--json")
    args = parser.parse_args()
    modes = args.modes.split(",")
    import torch

    x = torch.zeros(1, device="cuda")

    def step() -> None:
        for _ in range(args.launches):
            x.add_(1)
        torch.cuda.synchronize()

    for _ in range(3):
        step()
    blocks, pin = run_rounds(torch, modes, step, args)
    summary = summarise(blocks, modes)
    base = summary["untraced"]["median_step_ms"] * 1000 / args.launches
    for entry in summary.values():
        if "overhead_pct_median" in entry:
            entry["us_per_launch"] = round(base * entry["overhead_pct_median"] / 100, 3)
    summary["untraced"]["us_per_launch_base"] = round(base, 3)
    write_result({"launches": args.launches, "rounds": args.rounds, "steps": args.steps,
                  "gpu": torch.cuda.get_device_name(0), "summary": summary},
                 blocks, modes, pin, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
