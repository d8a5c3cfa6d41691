"""Per-call cost of ``--cycle-function`` on the CPU: a watched call and an unrelated call.

Watches ``Engine.other`` (decorated, as ``generate`` is) with a recorder that stamps nothing,
so the number is the cost of the watching itself (sys.monitoring callbacks on 3.12+, the
wrapper on 3.11) plus an empty begin/end. The program's other functions must not pay at all.
usage: PYTHONPATH=. python bench/cycle_function/call_cost.py [--calls 200000]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import types
from typing import Any

from perfdiff.collect.cycles.anchor_function import AnchorFunction


def _deco(func: Any) -> Any:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


class Engine:
    @_deco
    def other(self) -> int:
        return 0


def unrelated(x: int) -> int:
    return x


class NullRecorder:
    def begin_cycle(self, label: str, warmup: bool) -> None:
        return None

    def end_cycle(self, *, completed: bool = True) -> None:
        return None


def per_call_ns(func: Any, calls: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter_ns()
        for i in range(calls):
            func(i)
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200_000)
    calls = ap.parse_args().calls
    module = types.ModuleType("bench_module")
    module.Engine = Engine  # type: ignore[attr-defined]
    engine = Engine()
    before = (per_call_ns(unrelated, calls), per_call_ns(lambda i: engine.other(), calls))
    anchor = AnchorFunction(NullRecorder(), "bench_module:Engine.other")
    anchor.attach(module)
    method = Engine.other  # 3.11: the attribute was replaced by the wrapper
    after = (per_call_ns(unrelated, calls), per_call_ns(lambda i: method(engine), calls))
    anchor.uninstall()
    print(f"Python {sys.version.split()[0]}: unrelated call {before[0]:.0f} -> {after[0]:.0f} ns; "
          f"watched call {before[1]:.0f} -> {after[1]:.0f} ns ({anchor.calls} cycles)")
    optimizer_hook_cost()


def optimizer_hook_cost(steps: int = 2000) -> None:
    """``optimizer.step()`` of a one-parameter SGD on the CPU, with and without the global
    post-step hook that cuts optimizer-step cycles (``found_cycles.py``)."""
    try:
        import torch
    except ImportError:
        print("torch not installed: optimizer hook not measured")
        return
    import torch.optim.optimizer as optimizer_module

    from perfdiff.collect.cycles.found_cycles import FoundCycles

    param = torch.nn.Parameter(torch.zeros(1))
    param.grad = torch.zeros(1)
    opt = torch.optim.SGD([param], lr=0.1)

    def per_step() -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter_ns()
            for _ in range(steps):
                opt.step()
            best = min(best, (time.perf_counter_ns() - start) / steps)
        return best

    bare = per_step()
    found = FoundCycles(time.perf_counter_ns)
    found.hook_optimizers(optimizer_module)
    hooked = per_step()
    print(f"optimizer.step() (SGD, 1 parameter, CPU): {bare / 1e3:.1f} -> {hooked / 1e3:.1f} us "
          f"with the step hook ({found.optimizer_log.completed} cycles)")


if __name__ == "__main__":
    main()
