"""How long each NVML read perfdiff polls takes on this GPU (issue 13: NVML's share).

Why: the block benchmark put NVML polling at +2.4-18 points of a launch-bound step whether
polled from a thread or from its own process; a read that is slow in the driver (and maybe
holds a lock that launches want) would explain a cost that a second process does not avoid.
Prints per quantity the median and 99th percentile of ``--reads`` reads, in microseconds.

Usage: python scripts/gpu/nvml_cost_probe.py [--reads 300] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time

from perfdiff.collect.nvml.sampler import _quantities, device_handle, load_nvml


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--json")
    args = parser.parse_args()
    nv = load_nvml()
    handle = device_handle(nv, 0, None)
    out = {}
    for q in _quantities():
        times = []
        for _ in range(args.reads):
            t0 = time.perf_counter_ns()
            q.read(nv, handle)
            times.append((time.perf_counter_ns() - t0) / 1e3)
        times.sort()
        out[q.name] = {"median_us": round(times[len(times) // 2], 1),
                       "p99_us": round(times[int(len(times) * 0.99)], 1),
                       "max_us": round(times[-1], 1)}
        print(q.name, out[q.name], flush=True)
    print("poll of all", round(sum(v["median_us"] for v in out.values()), 1), "us (medians)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
