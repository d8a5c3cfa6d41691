"""What perfdiff's own Python costs a program at each NVTX cycle boundary, on the CPU.

Why: with ``--cycle-range``, the program's own step timer holds everything perfdiff does in
the range wrappers outside the cycle's two stamps (before the start stamp in the push, after
the end stamp in the pop). On a 0.24 ms CUDA-graph step that was 50-80 us, so the untraced
cycles read 17-24 % less than the program's timer (H100/H200, issue 28). This replays the
child's real path (ChildCollector -> NvtxCycles wrappers -> Recorder -> CycleLog ->
UntracedCycles) with the fake CUPTI backend and a stand-in ``torch.cuda.nvtx`` that does
nothing itself, so what is timed is perfdiff's work alone.

Per step it records the program's timer (host clock after each range closed, as
bench/record_truth/cuda_graph_mlp.py) and the cycle's own stamps; outside = step - cycle.
Usage: python bench/nvtx_boundary/boundary_cost.py [--steps N] [--untraced-every N|chosen]
       [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import itertools
import json
import pstats
import statistics
import tempfile
import time
import types
from collections.abc import Iterator
from typing import Any

from perfdiff.collect.cycles.nvtx_cycles import NvtxCycles
from perfdiff.collect.inject.child import ChildCollector
from perfdiff.collect.inject.config import InjectConfig
from tests.support.fake_cupti import FAKE_BACKEND, FakeTrace


def stand_in_nvtx() -> types.ModuleType:
    """``torch.cuda.nvtx`` as torch defines it in Python (``range`` calls push/pop through
    the module), with no-op C calls."""
    module = types.ModuleType("torch.cuda.nvtx")

    def range_push(msg: str) -> int:
        return 0

    def range_pop() -> int:
        return 0

    @contextlib.contextmanager
    def nvtx_range(msg: str, *args: Any, **kwargs: Any) -> Iterator[None]:
        module.range_push(msg.format(*args, **kwargs))
        try:
            yield
        finally:
            module.range_pop()

    module.range_push = range_push  # type: ignore[attr-defined]
    module.range_pop = range_pop  # type: ignore[attr-defined]
    module.range = nvtx_range  # type: ignore[attr-defined]
    return module


def run(steps: int, every: int | None, patched: bool) -> dict[str, Any]:
    module = stand_in_nvtx()
    with tempfile.TemporaryDirectory() as folder:
        config = InjectConfig(shard_dir=folder, backend=FAKE_BACKEND, cycle_range="step", warmup=5,
                              untraced_every=every)
        collector = ChildCollector(config, FakeTrace())
        collector.trace.start()
        if patched:
            NvtxCycles(collector.recorder, "step", collector.log.clock_ns).patch_torch_nvtx(module)
        clock = time.monotonic_ns  # FakeTrace's clock: the cycles' stamps are on it too
        marks = [clock()]
        for _ in range(steps):
            with module.range("step"):
                pass
            marks.append(clock())
        collector.trace.stop()
    log = collector.log
    step_ns = [b - a for a, b in itertools.pairwise(marks)]
    out: dict[str, Any] = {"steps": steps, "patched": patched,
                           "step_us_median": round(statistics.median(step_ns) / 1e3, 3)}
    if not patched:
        return out
    untraced = set(collector.core.untraced.positions)
    kinds: dict[str, list[tuple[float, float]]] = {"traced": [], "untraced": []}
    steps: dict[str, list[float]] = {"traced": [], "untraced": []}
    for i, (start, end) in enumerate(zip(log.starts, log.ends, strict=True)):
        if i < 5:
            continue
        kind = "untraced" if i in untraced else "traced"
        # before the start stamp (the push), after the end stamp (the pop)
        kinds[kind].append(((start - marks[i]) / 1e3, (marks[i + 1] - end) / 1e3))
        steps[kind].append((marks[i + 1] - marks[i]) / 1e3)
    for kind, parts in kinds.items():
        if parts:
            outside = sorted(a + b for a, b in parts)
            out[f"{kind}_cycles"] = len(parts)
            # the program's timer over the steps of this kind (set against the bare step)
            out[f"step_us_{kind}_median"] = round(statistics.median(steps[kind]), 3)
            out[f"outside_us_{kind}_median"] = round(statistics.median(outside), 3)
            out[f"outside_us_{kind}_p90"] = round(outside[int(0.9 * len(outside))], 3)
            out[f"push_us_{kind}_median"] = round(statistics.median(a for a, _ in parts), 3)
            out[f"pop_us_{kind}_median"] = round(statistics.median(b for _, b in parts), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--untraced-every", default="chosen")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    every = None if args.untraced_every == "chosen" else int(args.untraced_every)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        run(args.steps, every, True)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
        return
    bare = run(args.steps, every, False)
    patched = run(args.steps, every, True)
    print(json.dumps({"bare": bare, "perfdiff": patched,
                      "untraced_every": args.untraced_every}, indent=1))


if __name__ == "__main__":
    main()
