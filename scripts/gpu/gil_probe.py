"""Issue 28 item 2: do perfdiff's samplers hold the program's interpreter while it runs?

One process, one thread of "program": a Python loop that launches a few bf16 matmuls every
~2 ms (never synchronizing, so the loop never waits for the GPU) and stamps every iteration on
CUPTI's clock. A gap between two iterations longer than 1 ms is time some other thread held the
interpreter lock. Phases of ``--seconds`` each: nothing else running; perfdiff's PmSampler at
20 us (its drain thread decodes ~60,000-sample images while the loop runs: does
``pm_sampling_decode_data`` release the lock?); NVML (perfdiff's default sampler). Prints one
``GILPROBE {json}`` line: per phase the iterations, gaps > 1 ms (count, max, and their times),
and for PM each decode call (start, host ms, from the drain thread) so gaps can be matched
with decodes.

Usage: python scripts/gpu/gil_probe.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def loop(seconds: float, clock: Any, x: Any) -> dict[str, Any]:
    gaps: list[tuple[int, int]] = []
    n = 0
    end = time.perf_counter() + seconds
    next_launch = 0.0
    last = clock()
    while True:
        now_s = time.perf_counter()
        if now_s >= end:
            break
        if now_s >= next_launch:
            for _ in range(4):
                x = (x @ x).clamp_(-1, 1)
            next_launch = now_s + 0.002
        sum(range(200))
        now = clock()
        if now - last > 1_000_000:
            gaps.append((last, now - last))
        last = now
        n += 1
    return {"iterations": n, "gaps_over_1ms": len(gaps),
            "gap_max_ms": round(max((g for _, g in gaps), default=0) / 1e6, 3),
            "gaps": [(s, round(g / 1e6, 3)) for s, g in gaps[:40]], "x": x}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    import torch
    from cupti import cupti

    from perfdiff.collect.cupti import pm_sampling as pm
    from perfdiff.collect.settings import DEFAULT_METRICS

    def clock() -> int:
        return int(cupti.get_timestamp())

    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    out: dict[str, Any] = {}
    r = loop(a.seconds, clock, x)
    x = r.pop("x")
    out["none"] = r
    torch.cuda.synchronize()
    sampler = pm.PmSampler(tuple(DEFAULT_METRICS), 20_000, 0, clock)
    sampler.start()
    r = loop(a.seconds, clock, x)
    x = r.pop("x")
    torch.cuda.synchronize()
    stop_began = time.perf_counter()
    series = sampler.stop()
    r["stop_s"] = round(time.perf_counter() - stop_began, 3)
    r["samples"] = len(series[0].timestamps_ns) if series else 0
    r["decodes"] = [{"began": d[0], "host_ms": round(d[1] / 1e6, 1), "samples": d[3],
                     "drainer": d[8]} for d in sampler.decode_log]
    out["pm"] = r
    try:
        from perfdiff.collect.nvml.nvml_process import NvmlDefaultSampler
        from perfdiff.collect.nvml.sampler import load_nvml

        nv = NvmlDefaultSampler(0, clock, 0.01, nvml=load_nvml(), uuid=None)
        nv.start()
        r = loop(a.seconds, clock, x)
        r.pop("x")
        nv.stop()
        out["nvml"] = r
    except Exception as exc:  # a probe: say it and go on
        out["nvml"] = {"error": f"{type(exc).__name__}: {exc}"}
    print("GILPROBE " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
