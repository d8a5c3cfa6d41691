"""Issue 28: what makes a recorded timm bf16 step slower, CUPTI state by state, in ONE process.

Why in one process: bare timm bf16 processes on the lent H200 step at 22-37 ms (the host's
speed drifts between processes), so a cost of a few ms cannot be bisected across processes.
Within one process the speed holds (the hold probe's untraced phases read 112,454 and
111,716 launches/s, H200 2026-11-28). This program runs the timm ViT-S bf16 loop of
``timm_train.py`` and switches perfdiff's own CUPTI backend (``CuptiActivityBackend``, spooled
as in a user program) between states, in blocks of ``--block`` steps, rounds in turn:

- ``bare``: before CUPTI is touched (first blocks only: it cannot be returned to, except
  through ``cuptiFinalize`` at the end, ``final``);
- ``traced``: every kind perfdiff enables for found cycles (kernel, memcpy, memset, runtime
  and driver with only the launch call ids kept);
- ``paused``: perfdiff's untraced cycle (``pause()``: record kinds off, launch ids off, the
  runtime and driver kinds left on);
- ``off``: every kind off (CUPTI still attached);
- ``kernel``: the kernel kind alone.

Per step: host time between optimizer steps, time in the garbage collector. One
``COSTPROBE {json}`` line at the end. Usage: python bench/record_truth/cost_probe.py
[--block 10] [--rounds 4] [--warm 15] [--precision bf16]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


class GcClock:
    """Seconds spent in the garbage collector (gc.callbacks)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0
        self._t = 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._t
            self.count += 1


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--warm", type=int, default=15)
    p.add_argument("--precision", default="bf16")
    a = p.parse_args()
    import timm
    import torch
    from cupti import cupti

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend

    torch.manual_seed(0)
    model = timm.create_model("vit_small_patch16_224", pretrained=False,
                              num_classes=1000).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    images = torch.randn(64, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (64,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    amp = (torch.autocast("cuda", dtype=torch.bfloat16) if a.precision == "bf16"
           else contextlib.nullcontext())
    gcc = GcClock()

    def step() -> None:
        with amp:
            loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()

    rows: dict[str, list[float]] = {}
    gc_ms: dict[str, list[float]] = {}
    order: list[str] = []

    def block(name: str) -> None:
        t = time.perf_counter()
        g0 = gcc.total
        step()  # the first step after a switch pays the switch: not counted
        times = []
        for _ in range(a.block):
            t0 = time.perf_counter()
            g = gcc.total
            step()
            times.append(1e3 * (time.perf_counter() - t0))
            gc_ms.setdefault(name, []).append(1e3 * (gcc.total - g))
        rows.setdefault(name, []).extend(times)
        order.append(f"{name}:{statistics.median(times):.2f}")
        print(f"block {name} median {statistics.median(times):.2f} ms gc "
              f"{1e3 * (gcc.total - g0):.2f} ms threads {threading.active_count()} "
              f"tasks {len(os.listdir('/proc/self/task'))} ({time.perf_counter() - t:.1f} s)",
              flush=True)

    for _ in range(a.warm):
        step()
    torch.cuda.synchronize()
    for _ in range(2):
        block("bare")
    spool = tempfile.mkdtemp(prefix="costprobe-")
    backend = CuptiActivityBackend(trace_memory=True, trace_api=True, spool_dir=spool)
    backend.start()
    kinds = list(backend._enabled)
    api = {cupti.ActivityKind.RUNTIME, cupti.ActivityKind.DRIVER}
    errors: list[str] = []

    def to_traced() -> None:
        backend.resume()

    def all_off() -> None:
        backend.pause()
        for kind in kinds:
            if kind in api:
                cupti.activity_disable(kind)

    def from_all_off() -> None:  # api kinds back on (their ids: restricted, then launch ids off)
        for kind in kinds:
            if kind in api:
                cupti.activity_enable(kind)
        backend._restrict_api_records()
        backend._toggle_kept_api(0)

    def kernel_only() -> None:  # from paused: the kernel kind alone
        for kind in kinds:
            if kind in api:
                cupti.activity_disable(kind)
        cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)

    def from_kernel_only() -> None:
        cupti.activity_disable(cupti.ActivityKind.CONCURRENT_KERNEL)
        from_all_off()

    for r in range(a.rounds):
        try:
            block("traced")
            backend.pause()
            block("paused")
            all_off()  # pause again is harmless: flush, kinds already off
            block("off")
            from_all_off()
            kernel_only()
            block("kernel")
            from_kernel_only()
            to_traced()
        except Exception as exc:
            errors.append(f"round {r}: {type(exc).__name__}: {exc}")
            print("ERROR", errors[-1], flush=True)
            break
    raw = backend.stop()
    final_err = None
    try:
        cupti.finalize()
        for _ in range(2):
            block("final")
    except Exception as exc:
        final_err = f"{type(exc).__name__}: {exc}"
    summary = {name: {"median_ms": round(statistics.median(v), 3), "n": len(v),
                      "gc_ms_per_step": round(statistics.mean(gc_ms[name]), 3)}
               for name, v in rows.items()}
    print("COSTPROBE " + json.dumps({
        "precision": a.precision, "summary": summary, "order": order, "errors": errors,
        "final_error": final_err, "kernels": int(raw.columns.kernels.size)
        if raw.columns is not None else len(raw.kernels),
        "steps": {k: [round(x, 3) for x in v] for k, v in rows.items()}}), flush=True)


if __name__ == "__main__":
    main()
