"""What one stack sample of the found-function learner costs
(perfdiff/collect/cycles/found_function.py).

Why: the learning thread reads the main thread's stack every 5 ms while the program runs, and
each read holds the interpreter lock, so its cost lands inside whatever the program was doing
(a measured cycle, possibly). The docstring promises a few tens of microseconds at most.

Two figures, each on a main-thread stack of DEPTH frames (a recursion parked in a busy loop):
1. per sample, timed in the sampling thread: ``sys._current_frames()`` + the walk
   (``main_stack``) and the window's bookkeeping (``StackWindow.add``);
2. what the main thread loses: a pure-Python busy loop's rate with the learner's sampling at
   its interval (``SAMPLE_INTERVAL_S``) vs without, over ROUNDS alternated rounds.

Run from the repository root (about 30 s)::

    PYTHONPATH=$PWD python bench/found_function/sample_cost.py \
        > bench/found_function/results/sample_cost.txt
"""

from __future__ import annotations

import platform
import statistics
import sys
import threading
import time

from perfdiff.collect.cycles.found_function import SAMPLE_INTERVAL_S, StackWindow, main_stack

SAMPLES = 2_000
ROUNDS = 6
BUSY_S = 1.0


def _deep(depth: int, body: threading.Event, done: threading.Event, busy: bool) -> None:
    if depth > 1:
        _deep(depth - 1, body, done, busy)
        return
    body.set()
    if not busy:
        done.wait()  # parked, lock released (a program waiting on the GPU)
    while not done.is_set():  # busy in Python: the sampler must take the lock from it
        sum(range(200))


def per_sample(depth: int, busy: bool) -> tuple[float, float, float]:
    """(median, p99, max) microseconds of one sample: walk + StackWindow.add."""
    main_ident = threading.get_ident()
    ready, done = threading.Event(), threading.Event()
    costs: list[float] = []

    def sampler() -> None:
        ready.wait()
        window = StackWindow()
        for _ in range(SAMPLES):
            began = time.perf_counter_ns()
            stack = main_stack(main_ident)
            window.add(stack)
            costs.append((time.perf_counter_ns() - began) / 1e3)
            del stack
            if len(window) >= 200:
                window.release()
                window = StackWindow()
            time.sleep(0.0005)
        window.release()
        done.set()

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    _deep(depth, ready, done, busy)
    thread.join()
    costs.sort()
    return statistics.median(costs), costs[int(0.99 * len(costs))], costs[-1]


def busy_rate(sampling: bool, depth: int) -> float:
    """Busy-loop iterations per second on the main thread, with or without sampling."""
    main_ident = threading.get_ident()
    stop = threading.Event()

    def sampler() -> None:
        window = StackWindow()
        while not stop.is_set():
            window.add(main_stack(main_ident))
            if len(window) >= 200:
                window.release()
                window = StackWindow()
            stop.wait(SAMPLE_INTERVAL_S)
        window.release()

    thread = threading.Thread(target=sampler, daemon=True) if sampling else None
    count = 0

    def busy(level: int) -> None:
        nonlocal count
        if level > 1:
            busy(level - 1)
            return
        end = time.perf_counter() + BUSY_S
        while time.perf_counter() < end:
            sum(range(200))
            count += 1

    if thread is not None:
        thread.start()
    busy(depth)
    stop.set()
    if thread is not None:
        thread.join()
    return count / BUSY_S


def main() -> None:
    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# per sample (us): main_stack + StackWindow.add, {SAMPLES} samples; main thread "
          "parked (lock free) or busy in Python (the span then includes lock hand-overs and "
          "this shared host's scheduling)")
    for busy in (False, True):
        for depth in (20, 100, 300):
            med, p99, worst = per_sample(depth, busy)
            print(f"{'busy  ' if busy else 'parked'} depth {depth:4d}: median {med:6.1f}  "
                  f"p99 {p99:6.1f}  max {worst:7.1f}")
    print(f"# main thread busy loop, sampling every {SAMPLE_INTERVAL_S * 1e3:g} ms vs none, "
          f"{ROUNDS} alternated rounds of {BUSY_S:g} s, depth 100")
    off, on = [], []
    for _ in range(ROUNDS):
        off.append(busy_rate(False, 100))
        on.append(busy_rate(True, 100))
    loss = 100 * (1 - statistics.median(on) / statistics.median(off))
    print(f"without: median {statistics.median(off):,.0f}/s  with: median "
          f"{statistics.median(on):,.0f}/s  loss {loss:+.2f} %")


if __name__ == "__main__":
    sys.setrecursionlimit(10_000)
    main()
