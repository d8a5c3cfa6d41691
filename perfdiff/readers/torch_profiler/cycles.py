"""Steps and ranges -> cycles, and which cycle each GPU event belongs to.

Why its own module: the cycle rule has three sources (``ProfilerStep#N``, ``--cycle-range
NAME`` on CPU or GPU annotations, and the period-detection fallback of
``perfdiff.schema.periods``) and one assignment (by launch time, or by GPU start for GPU
ranges); keeping them together keeps the error hints and the [start, end) rule consistent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from perfdiff.readers.cycle_range import CycleRange
from perfdiff.readers.torch_profiler.columns import GpuColumns
from perfdiff.readers.torch_profiler.events import BadTrace
from perfdiff.readers.torch_profiler.spellings import CPU_RANGE, GPU_RANGE, STEP_OPERATOR
from perfdiff.schema.model import IntArray
from perfdiff.schema.periods import cycle_bounds_ns, detect_period

STEP_PATTERN = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass(frozen=True)
class CycleSpans:
    index: list[int]
    start: list[int]
    end: list[int]
    label: str  # the cycles' kind, as the report's "cycle definition" says it
    by_gpu_time: bool  # gpu_user_annotation ranges: kernels by their own start time
    device: list[int]
    source: str = ""  # how the cycles were cut, in words (the run file's cycles_from)


Range = tuple[str, str, int, int, int]  # kind, name, start ns, end ns, device (or pid)


def cut_cycles(ranges: list[Range], cycle_range: str | None,
            warnings: list[str]) -> tuple[CycleSpans, str]:
    """The cycles (spans) and how work is assigned to them ("launch" or "gpu")."""
    if cycle_range is None:
        return _step_cycles(ranges, warnings), "launch"
    chosen = CycleRange.parse(cycle_range)  # not an expression: a usage error, every kind
    for kind, mode in ((CPU_RANGE, "launch"), (GPU_RANGE, "gpu")):
        found = sorted((start, end, dev, name) for cat, name, start, end, dev in ranges
                       if cat == kind and chosen.matches(name))
        if found:
            found = _outermost(found, kind, warnings)
            names = sorted({name for *_, name in found})
            shown = names[0] if len(names) == 1 else f"{len(names)} names matching {cycle_range!r}"
            return CycleSpans(list(range(len(found))), [f[0] for f in found],
                               [f[1] for f in found], shown, mode == "gpu",
                               [f[2] for f in found] if mode == "gpu" else [],
                               f"{kind} ranges matching {cycle_range!r}"), mode
    raise BadTrace(f"no user_annotation or gpu_user_annotation range whose whole name matches "
               f"{cycle_range!r}" + _range_hint(ranges))


def _step_cycles(ranges: list[Range], warnings: list[str]) -> CycleSpans:
    """``ProfilerStep#N`` ranges (user annotations; torch 1.8/1.9: CPU operators)."""
    for kind in (CPU_RANGE, STEP_OPERATOR):
        steps = sorted((int(m.group(1)), start, end) for cat, name, start, end, _ in ranges
                       if cat == kind and (m := STEP_PATTERN.match(name)))
        if steps:
            steps = _unique_steps(steps, warnings)
            return CycleSpans([s[0] for s in steps], [s[1] for s in steps],
                               [s[2] for s in steps], "ProfilerStep", False, [],
                               "ProfilerStep#N")
    raise BadTrace("no ProfilerStep#N ranges (call prof.step() each iteration under a "
               "torch.profiler schedule), so there are no cycles; pass --cycle-range "
               "REGEX to take user_annotation/record_function ranges as the cycle"
               + _range_hint(ranges))


def has_steps(ranges: list[Range]) -> bool:
    """Whether the trace marks its iterations with ``ProfilerStep#N``."""
    return any(cat in (CPU_RANGE, STEP_OPERATOR) and STEP_PATTERN.match(name)
               for cat, name, *_ in ranges)


def _outermost(found: list[tuple[int, int, int, str]], kind: str,
               warnings: list[str]) -> list[tuple[int, int, int, str]]:
    """Matching ranges inside another matching range (same device) are not cycles of their
    own: a cycle holds the work of the outer one, so keeping both would count it twice."""
    kept: list[tuple[int, int, int, str]] = []
    last_end: dict[int, int] = {}
    for span in found:
        start, end, dev, _ = span
        if start < last_end.get(dev, start):
            continue
        kept.append(span)
        last_end[dev] = end
    if len(kept) != len(found):
        warnings.append(f"{len(found) - len(kept)} {kind} ranges matching --cycle-range lie "
                        "inside another matching range; the outer ones are the cycles")
    return kept


def _range_hint(ranges: list[Range]) -> str:
    """The most frequent range names of the trace, for the one-line error."""
    counts: dict[str, int] = {}
    for _, name, *_ in ranges:
        if not STEP_PATTERN.match(name):
            counts[name] = counts.get(name, 0) + 1
    names = sorted(counts, key=lambda n: (-counts[n], n))[:5]
    if not names:
        return ""
    return " (ranges in this trace, most frequent first: " + ", ".join(
        f"{n[:60]!r} x{counts[n]}" for n in names) + ")"


def detected_cycles(kernels: GpuColumns, names: list[str], ranges: list[Range],
                    warnings: list[str], gpu_start: IntArray,
                    replayed: bool) -> tuple[CycleSpans, str]:
    """No ProfilerStep and no --cycle-range: cycles where the kernel sequence repeats
    (perfdiff.schema.periods, the rule perfdiff collect uses for unmarked programs), in the
    order the kernels ran on the GPU, each cycle bounded by its kernels' GPU starts.

    Why the GPU's clock, not the launches': a graph replay gives hundreds of kernels one launch
    time (launch times can neither order them nor bound a cycle), and an eager program whose
    CPU runs ahead of the GPU (SGLang prefill+decode: launches 0.76 ms apart, the GPU 13.7 ms
    per period, 440 ms behind by the end) would get cycles 18 times shorter than the work in
    them. On the GPU's clock a cycle lasts as long as its work took to run, gaps included.
    """
    name_ids = {name: i for i, name in enumerate(names)}
    launch_ns = gpu_start
    known = launch_ns != NO_LAUNCH
    order = np.argsort(launch_ns[known], kind="stable")
    ids = np.asarray([name_ids[n] for n in kernels.name], dtype=np.int64)[known][order]
    times = launch_ns[known][order]
    period = detect_period(ids, times)
    if not period.found:
        raise BadTrace("no ProfilerStep#N ranges and " + period.describe() + "; pass "
                   "--cycle-range NAME to take a user_annotation/record_function range as "
                   "the cycle" + _range_hint(ranges))
    start, end = cycle_bounds_ns(period, times)
    what = "the kernel sequence as run on the GPU" + (" (CUDA/HIP graph replays)"
                                                      if replayed else "")
    warnings.append(f"no ProfilerStep#N in the trace: cycles from {what}, "
                    f"{period.describe()}")
    start, end = _without_empty(start, end, warnings)
    n = int(start.size)
    return CycleSpans(list(range(n)), start.tolist(), end.tolist(), "detected period",
                       False, [], f"detected period of {what}"), "gpu-start"


def _without_empty(start: IntArray, end: IntArray,
                   warnings: list[str]) -> tuple[IntArray, IntArray]:
    """Detected cycles that last no time (launches with one timestamp) are no cycles."""
    empty = end <= start
    if empty.all():
        raise BadTrace("every detected cycle lasts 0 ns (its launches share one timestamp); "
                   "pass --cycle-range REGEX to take record_function ranges as the cycle")
    if empty.any():
        warnings.append(f"{int(empty.sum())} detected cycles last 0 ns and were left out")
    return start[~empty], end[~empty]


def _unique_steps(steps: list[tuple[int, int, int]],
                  warnings: list[str]) -> list[tuple[int, int, int]]:
    """One span per step number (a step seen twice, e.g. two profilers: the first kept)."""
    seen: dict[int, tuple[int, int, int]] = {}
    for step in steps:
        seen.setdefault(step[0], step)
    if len(seen) != len(steps):
        warnings.append(f"{len(steps) - len(seen)} ProfilerStep ranges repeat a step number; "
                        "the first of each was kept")
    return sorted(seen.values(), key=lambda s: s[1])


def assign_cycles(spans: CycleSpans, times: np.ndarray, devices: np.ndarray) -> np.ndarray:
    """Cycle index of each time (its launch, or its GPU start for GPU ranges), -1 outside."""
    if not spans.index or times.size == 0:
        return np.full(times.shape, -1, dtype=np.int64)
    start = np.asarray(spans.start, dtype=np.int64)
    end = np.asarray(spans.end, dtype=np.int64)
    index = np.asarray(spans.index, dtype=np.int64)
    if spans.by_gpu_time:
        out = np.full(times.shape, -1, dtype=np.int64)
        for i, (s, e, d) in enumerate(zip(spans.start, spans.end, spans.device, strict=True)):
            inside = (times >= s) & (times <= e) & (devices == d) & (out < 0)
            out[inside] = index[i]
        return out
    order = np.argsort(start, kind="stable")
    start, end, index = start[order], end[order], index[order]
    pos = np.searchsorted(start, times, side="right") - 1
    valid = (pos >= 0) & (times != NO_LAUNCH)
    clipped = np.clip(pos, 0, None)
    inside = valid & (times < end[clipped])  # [start, end): as HTA assigns iterations
    return np.where(inside, index[clipped], -1).astype(np.int64)


NO_LAUNCH = np.iinfo(np.int64).min  # a GPU event whose launch is not in the trace


def launch_times(correlation: list[int], launches: dict[int, int]) -> IntArray:
    return np.fromiter((launches.get(c, NO_LAUNCH) for c in correlation), dtype=np.int64,
                       count=len(correlation))
