"""The programs' own step timer, shared: host time between optimizer steps (or marked steps).

Why an optimizer hook and not a profiler: the acceptance check compares perfdiff's cycle times
with what the program sees when nothing records it, so the timer must cost nothing and run the
same bare and recorded. ``torch.optim.optimizer.register_optimizer_step_post_hook`` fires after
every ``Optimizer.step`` of every optimizer; the program does not have to be changed.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any


class StepTimer:
    """Host timestamps of step ends; ``summary`` gives the median steady step."""

    def __init__(self, skip: int = 5) -> None:
        self.ends: list[float] = []
        self.skip = skip

    def mark(self, *_: Any) -> None:
        self.ends.append(time.perf_counter())

    def hook_optimizers(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        register_optimizer_step_post_hook(self.mark)

    def steps_ms(self) -> list[float]:
        return [1e3 * (b - a) for a, b in zip(self.ends, self.ends[1:], strict=False)]

    def summary(self, **extra: Any) -> dict[str, Any]:
        steps = self.steps_ms()
        steady = steps[self.skip:] or steps
        return {**extra, "steps": len(self.ends),
                "median_step_ms": round(statistics.median(steady), 4) if steady else None,
                "step_ms": [round(s, 4) for s in steps],
                # perf_counter at each step end: lines the steps up with probe_site's events
                "ends": [round(e, 6) for e in self.ends]}

    def print_summary(self, **extra: Any) -> None:
        print("STEPTIMER " + json.dumps(self.summary(**extra)), flush=True)


def profiled(path: str | None, active: int, wait: int = 5, warmup: int = 2) -> Any:
    """A torch.profiler (CPU+CUDA, no shapes, no stacks) writing ``path`` (gzipped) after
    ``active`` steps, or None. Only for the torch.profiler side of a comparison.

    ``STEPTIMER_PROFILE_ALL=1``: every step after wait and warm-up, until the program ends
    (the trace is written when the profiler exits, after the timer's last step): the whole-run
    cost of torch.profiler beside perfdiff's (issue 28, ``issue28.sh var`` variant T)."""
    if not path:
        return None
    if os.environ.get("STEPTIMER_PROFILE_ALL") == "1":
        active = 10**9
    import gzip
    import shutil

    import torch

    def ready(prof: Any) -> None:
        raw = path.removesuffix(".gz")
        prof.export_chrome_trace(raw)
        if path.endswith(".gz") and os.path.exists(raw):
            with open(raw, "rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
            os.remove(raw)

    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    return torch.profiler.profile(
        activities=acts, record_shapes=False, with_stack=False,
        schedule=torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1),
        on_trace_ready=ready)
