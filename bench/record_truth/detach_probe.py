"""Issue 28: what an *untraced* cycle still costs a host-bound program, CUPTI state by state,
in ONE process, and whether detaching CUPTI (``cuptiFinalize``) between traced stretches
would give it back.

Why: on the lent H200 (2026-11-28 20:05 UTC) the host-bound ResNet-50 AMP loop of
``cnn_train.py`` stepped 31.9-32.1 ms bare and 34.3-37.7 ms in perfdiff's *untraced* cycles
(+7-18 %), fp32 +0-5 %, so `perfdiff compare` AMP -> fp32 read -4 to -7 % where the bare
programs changed +3.5 %; the CUDA-graph MLP's untraced replays were +4-16 % over bare with
PM on or off, but +2-3 % with perfdiff's Python side alone (fake backend). Across processes
those few percent drown in the host's drift, so the states are switched inside one process,
in blocks of ``--block`` steps, rounds in turn:

- ``bare``: before CUPTI is touched (the first blocks), and ``detached`` after each
  ``cuptiFinalize``;
- ``traced``: perfdiff's backend as a found-cycle user program has it once its marks took
  over (kernel, memcpy, memset kinds; no API kinds), spooled;
- ``off``: its untraced state (``pause()``: those kinds off, CUPTI attached);
- ``off_pm``: the same with PM sampling running (40 us, the user-program default);
- ``detached``: ``stop()``, then ``cupti.finalize()``; the next ``traced`` block starts a new
  backend (CUPTI attaches again), and both switches are timed.

One ``DETACHPROBE {json}`` line at the end. Usage: python bench/record_truth/detach_probe.py
[--block 10] [--rounds 3] [--warm 10] [--precision amp|fp32]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warm", type=int, default=10)
    p.add_argument("--precision", choices=("amp", "fp32"), default="amp")
    a = p.parse_args()
    import torch
    from cnn_train import make_step
    from cupti import cupti

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
    from perfdiff.collect.cupti.pm_sampling import PmSampler
    from perfdiff.collect.settings import DEFAULT_METRICS

    step = make_step(a.precision)  # cnn_train.py's own step

    rows: dict[str, list[float]] = {}
    order: list[str] = []
    switches: dict[str, list[float]] = {}

    def block(name: str) -> None:
        step()  # the first step after a switch pays the switch: not counted
        times = []
        for _ in range(a.block):
            t0 = time.perf_counter()
            step()
            times.append(1e3 * (time.perf_counter() - t0))
        rows.setdefault(name, []).extend(times)
        order.append(f"{name}:{statistics.median(times):.2f}")
        print(f"block {name} median {statistics.median(times):.2f} ms", flush=True)

    def timed(name: str, action: Any) -> Any:
        t0 = time.perf_counter()
        out = action()
        switches.setdefault(name, []).append(round(1e3 * (time.perf_counter() - t0), 3))
        return out

    spool = tempfile.mkdtemp(prefix="detachprobe-")

    def new_backend() -> CuptiActivityBackend:
        backend = CuptiActivityBackend(trace_memory=True, trace_api=False, spool_dir=spool)
        backend.start()
        return backend

    for _ in range(a.warm):
        step()
    torch.cuda.synchronize()
    block("bare")
    block("bare")
    errors: list[str] = []
    kernels = 0
    for r in range(a.rounds):
        try:
            backend = timed("attach", new_backend)
            block("traced")
            timed("pause", backend.pause)
            block("off")
            pm = PmSampler(DEFAULT_METRICS, 40_000, 0, backend.clock_ns)
            pm.start()
            block("off_pm")
            pm.stop()
            timed("resume", backend.resume)
            block("traced")
            raw = timed("stop", backend.stop)
            kernels += (int(raw.columns.kernels.size) if raw.columns is not None
                        else len(raw.kernels))
            timed("finalize", cupti.finalize)
            block("detached")
        except Exception as exc:
            errors.append(f"round {r}: {type(exc).__name__}: {exc}")
            print("ERROR", errors[-1], flush=True)
            break
    summary = {name: {"median_ms": round(statistics.median(v), 3), "n": len(v)}
               for name, v in rows.items()}
    print("DETACHPROBE " + json.dumps({
        "precision": a.precision, "summary": summary, "order": order, "errors": errors,
        "switch_ms": switches, "kernels": kernels,
        "steps": {k: [round(x, 3) for x in v] for k, v in rows.items()}}), flush=True)


if __name__ == "__main__":
    main()
