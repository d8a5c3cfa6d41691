"""What the collector cost this run, from its own untraced cycles; and its holds per cycle.

Why: the collector leaves one measured cycle in N untraced (``perfdiff.collect.overhead``),
so each run file carries cycle times with and without tracing, from the same process. The
overhead is median(traced cycle) / median(untraced cycle) - 1, with a 95 % bootstrap interval
(percentile, 2,000 resamples of each group, fixed seed: the report is deterministic). It is
a statement about this run, printed beside the comparison, never a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfdiff.schema.model import CycleTable, RunFile

HOLD_WARN_NS = 1_000_000
_RESAMPLES = 2_000


@dataclass(frozen=True)
class SelfOverhead:
    """Traced vs untraced cycle time of one run file (all its runs pooled)."""

    traced_median_ms: float
    untraced_median_ms: float
    overhead_pct: float
    low_pct: float
    high_pct: float
    traced_cycles: int
    untraced_cycles: int


def _durations(run_file: RunFile, traced: bool) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
    parts = []
    for run in run_file.runs:
        c = run.cycles
        if c.traced is None:
            continue
        flag = np.asarray(c.traced) == (1 if traced else 0)
        if traced:
            flag &= ~np.asarray(c.warmup, dtype=bool)
        parts.append((np.asarray(c.end_ns) - np.asarray(c.start_ns))[flag].astype(np.float64))
    return np.concatenate(parts) if parts else np.zeros(0)


def self_overhead(run_file: RunFile) -> SelfOverhead | None:
    """The run's self-measured overhead, or None without untraced (or traced) cycles."""
    traced = _durations(run_file, True)
    untraced = _durations(run_file, False)
    if traced.size == 0 or untraced.size == 0:
        return None
    rng = np.random.default_rng(0)
    t = np.median(rng.choice(traced, (_RESAMPLES, traced.size)), axis=1)
    u = np.median(rng.choice(untraced, (_RESAMPLES, untraced.size)), axis=1)
    ratios = 100 * (t / u - 1)
    point = 100 * (float(np.median(traced)) / float(np.median(untraced)) - 1)
    return SelfOverhead(
        traced_median_ms=float(np.median(traced)) / 1e6,
        untraced_median_ms=float(np.median(untraced)) / 1e6,
        overhead_pct=point, low_pct=float(np.percentile(ratios, 2.5)),
        high_pct=float(np.percentile(ratios, 97.5)), traced_cycles=int(traced.size),
        untraced_cycles=int(untraced.size),
    )


def self_overhead_notes(run_file: RunFile, source: str) -> list[str]:
    """Report lines: the self-measured overhead, and measured cycles the collector held the
    interpreter in for more than 1 ms."""
    notes = []
    found = self_overhead(run_file)
    if found is not None:
        notes.append(
            f"{source}: perfdiff's tracing overhead on this run {found.overhead_pct:+.1f} % "
            f"(95 % interval {found.low_pct:+.1f} to {found.high_pct:+.1f} %): median cycle "
            f"{found.traced_median_ms:.3f} ms traced vs {found.untraced_median_ms:.3f} ms in "
            f"{found.untraced_cycles} untraced cycle(s) ({found.traced_cycles} traced); "
            "PM and NVML sampling run in both, so their cost is not in this figure"
        )
    held = 0
    longest = 0
    for run in run_file.runs:
        c = run.cycles
        over = held_cycles(c)
        if over is None:
            continue
        held += int(over.sum())
        hold = np.asarray(c.hold_ns)[~np.asarray(c.warmup, dtype=bool)]
        longest = max(longest, int(hold.max()) if hold.size else 0)
    if held:
        notes.append(f"{source}: perfdiff held the interpreter for more than 1 ms inside "
                     f"{held} measured cycle(s) (up to {longest / 1e6:.1f} ms), which those "
                     "cycles include")
    return notes


def held_cycles(cycles: CycleTable) -> np.ndarray | None:
    """Per cycle: did the collector hold the interpreter inside it for more than 1 ms?

    One rule for the report's note (``self_overhead_notes``) and the cycles figure
    (``figure_data``), so the figure marks exactly the cycles the note counts: measured ones
    only. None when the run file has no ``hold_ns`` (before schema 1.3).
    """
    if cycles.hold_ns is None:
        return None
    measured = ~np.asarray(cycles.warmup, dtype=bool)
    held: np.ndarray = (np.asarray(cycles.hold_ns) > HOLD_WARN_NS) & measured
    return held


__all__ = ["HOLD_WARN_NS", "SelfOverhead", "held_cycles", "self_overhead", "self_overhead_notes"]
