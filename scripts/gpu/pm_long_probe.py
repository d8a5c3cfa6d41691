"""Issue 28 item 3: why PM sampling answers ERROR_OUT_OF_MEMORY in runs longer than ~2.5 s.

Runs perfdiff's PmSampler (20 us) beside a steady GPU load (bf16 matmuls) for ``--seconds``,
with the module's drain threshold (DECODE_AT_FILL) and image cap (MAX_IMAGE_BYTES) as given,
then prints every decode (capacity, samples, stop reason, host ms), the drain error with the
call that raised it, and the coverage of the loaded stretch. Suspect: the drain decodes only
once ~127,000 samples wait (80 % of the 2 GiB buffer) but an image holds at most ~120,000
(MAX_IMAGE_BYTES), so the first decode fills its image and the next one fails.

Usage: python scripts/gpu/pm_long_probe.py [--seconds 8] [--fill 0.8] [--max-image-mb 1400]
       [--interval-ns 20000] [--metrics both|tensor|dram] [--image-share S] [--margin M]
       [--buffer-mb MB] [--drain-period S]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--fill", type=float)
    p.add_argument("--max-image-mb", type=float)
    p.add_argument("--image-share", type=float, help="2.0 gives the drain threshold before "
                   "the fix (the buffer's 80 %% alone)")
    p.add_argument("--interval-ns", type=int, default=20_000)
    p.add_argument("--metrics", choices=("both", "tensor", "dram"), default="both")
    p.add_argument("--margin", type=float, help="IMAGE_MARGIN")
    p.add_argument("--buffer-mb", type=int, help="HARDWARE_BUFFER_BYTES in MiB")
    p.add_argument("--drain-period", type=float, help="DRAIN_PERIOD_S")
    a = p.parse_args()
    import numpy as np
    import torch
    from cupti import cupti

    from perfdiff.collect.cupti import pm_sampling as pm
    from perfdiff.collect.settings import DEFAULT_METRICS, DRAM_METRIC, TENSOR_METRIC

    if a.fill is not None:
        pm.DECODE_AT_FILL = a.fill
    if a.max_image_mb is not None:
        pm.MAX_IMAGE_BYTES = int(a.max_image_mb * 1e6)
    if a.image_share is not None:
        pm.DECODE_AT_IMAGE_SHARE = a.image_share
    if a.margin is not None:
        pm.IMAGE_MARGIN = a.margin
    if a.buffer_mb is not None:
        pm.HARDWARE_BUFFER_BYTES = a.buffer_mb * 1024 * 1024
    if a.drain_period is not None:
        pm.DRAIN_PERIOD_S = a.drain_period
    metrics = {"both": tuple(DEFAULT_METRICS), "tensor": (TENSOR_METRIC,),
               "dram": (DRAM_METRIC,)}[a.metrics]
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    sampler = pm.PmSampler(metrics, a.interval_ns, 0, lambda: int(cupti.get_timestamp()))
    sampler.start()
    t0 = int(cupti.get_timestamp())
    end = time.perf_counter() + a.seconds
    while time.perf_counter() < end:
        for _ in range(20):
            x = (x @ x).clamp_(-1, 1)
        torch.cuda.synchronize()
    t1 = int(cupti.get_timestamp())
    error = None
    if sampler._drain_error is not None:
        error = "".join(traceback.format_exception(sampler._drain_error))[-1500:]
    try:
        series = sampler.stop()
        stop_error = None
    except Exception as exc:
        series, stop_error = [], "".join(traceback.format_exception(exc))[-1500:]
    ends = np.asarray(series[0].timestamps_ns) if series else np.zeros(0, dtype=np.int64)
    covered = ends[(ends >= t0) & (ends <= t1)].size * a.interval_ns / max(1, t1 - t0)
    gaps = np.diff(ends[(ends >= t0) & (ends <= t1)]) if ends.size > 1 else np.zeros(0)
    holes = gaps[gaps > 2 * a.interval_ns]
    print("PMPROBE " + json.dumps({
        "seconds": a.seconds, "interval_ns": a.interval_ns, "metrics": a.metrics,
        "margin": pm.IMAGE_MARGIN, "buffer_bytes": pm.HARDWARE_BUFFER_BYTES,
        "image_bytes_per_sample": sampler._image_sample_bytes,
        "holes_ms": [round(float(h) / 1e6, 2) for h in holes[:20]],
        "fill": pm.DECODE_AT_FILL,
        "image_share": pm.DECODE_AT_IMAGE_SHARE, "max_image_bytes": pm.MAX_IMAGE_BYTES,
        "decodes": [{"capacity": d[2], "samples": d[3], "host_ms": round(d[1] / 1e6, 1),
                     "us_per_sample": round(d[1] / 1e3 / max(1, d[3]), 2),
                     "overflow": d[6], "reason": d[7], "drainer": d[8]}
                    for d in sampler.decode_log],
        "samples": int(ends.size), "coverage": round(covered, 4), "warnings": sampler.warnings,
        "drain_error": error, "stop_error": stop_error}), flush=True)


if __name__ == "__main__":
    main()
