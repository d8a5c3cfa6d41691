"""Cycles in order: each side's cycle times in run order, so drift, bimodality and outliers show.

One panel per side on a shared time axis: warm-up cycles shaded (they are left out of every
statistic), runs separated by dashed lines, cycles during which the collector held the
interpreter for more than 1 ms marked ×, cycles the collector left untraced to measure its own
overhead drawn as hollow circles (not shaded as warm-up: they sit among the measured cycles,
but no statistic uses them), cycles overlapped by a stretch without PM samples marked ▽ (their
kernels have no tensor/DRAM values). The measured mean is the dotted line.
"""

from __future__ import annotations

from typing import Any

from perfdiff.analysis.figure_data import CycleTrace
from perfdiff.analysis.model import Comparison, SideSummary
from perfdiff.report.figures.style import SIDE_COLOURS, new_figure, wrap_title
from perfdiff.report.format import fmt_interval, fmt_ms, fmt_pct


def _spans(flags: tuple[bool, ...]) -> list[tuple[int, int]]:
    """Consecutive runs of True as (first, last) positions."""
    spans: list[tuple[int, int]] = []
    start = None
    for i, flag in enumerate((*flags, False)):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            spans.append((start, i - 1))
            start = None
    return spans


STALL_LABEL = {"hold": "collector stall (held the interpreter > 1 ms)",
               "warning": "collector stall (buffer hand-over)"}


def title(comparison: Comparison, traces: tuple[CycleTrace, CycleTrace]) -> str:
    n, a, change = comparison.normal, comparison.abnormal, comparison.cycle_time
    text = (f"Cycles in order: mean cycle {fmt_ms(n.cycle_ms_mean)} ms → "
            f"{fmt_ms(a.cycle_ms_mean)} ms")
    if change.comparable:
        text += (f" ({fmt_pct(change.delta_pct, signed=True)}, 95 % interval "
                 f"{fmt_interval(change.ci_low_pct, change.ci_high_pct, 'pct')}, "
                 f"{change.verdict})")
    marks = []
    for trace in traces:
        stalls, holes = sum(trace.stalled), sum(trace.missing_pm)
        if stalls:
            marks.append(f"{stalls} {trace.label} cycle(s) with a collector stall")
        if holes:
            marks.append(f"{holes} {trace.label} cycle(s) partly without PM samples")
    return text + ("; " + ", ".join(marks) if marks else "")


def y_range(traces: tuple[CycleTrace, CycleTrace]) -> tuple[float, float]:
    """The measured cycles' range, padded: a 0.5 s warm-up cycle would flatten the rest."""
    measured = [ms for t in traces for ms, w in zip(t.cycle_ms, t.warmup, strict=True) if not w]
    values = measured or [ms for t in traces for ms in t.cycle_ms] or [0.0, 1.0]
    low, high = min(values), max(values)
    pad = 0.08 * (high - low) or 0.05 * abs(high) or 1.0
    return max(0.0, low - pad), high + pad


def _panel(ax: Any, trace: CycleTrace, side: SideSummary, colour: str,
           limits: tuple[float, float]) -> None:
    xs = list(range(len(trace.cycle_ms)))
    above = [i for i, ms in enumerate(trace.cycle_ms) if ms > limits[1]]
    if above:
        ax.plot(above, [limits[1]] * len(above), "^", color="#555555", ms=6, clip_on=False,
                label=f"{len(above)} cycle(s) above the scale (longest "
                f"{fmt_ms(max(trace.cycle_ms[i] for i in above))} ms)")
    for first, last in _spans(trace.warmup):
        ax.axvspan(first - 0.5, last + 0.5, color="#eeeeee", lw=0, zorder=0,
                   label="warm-up (not in statistics)" if first == _spans(trace.warmup)[0][0]
                   else None)
    for i in range(1, len(trace.segment)):
        if trace.segment[i] != trace.segment[i - 1]:
            ax.axvline(i - 0.5, color="#555555", ls="--", lw=0.8)
    starts = [i for i in range(len(trace.segment))
              if i == 0 or trace.segment[i] != trace.segment[i - 1]]
    if len(starts) > 1:
        for i in starts:
            ax.annotate(trace.segment[i], xy=(i, 1.0), xycoords=("data", "axes fraction"),
                        va="bottom", ha="left", fontsize=7, color="#555555")
    ax.plot(xs, trace.cycle_ms, color=colour, lw=0.9, marker=".", ms=3, label=side.label)
    ax.axhline(side.cycle_ms_mean, color=colour, ls=":", lw=1.0,
               label=f"mean of measured cycles {fmt_ms(side.cycle_ms_mean)} ms")
    untraced = [i for i, f in enumerate(trace.untraced) if f]
    if untraced:
        ax.plot(untraced, [trace.cycle_ms[i] for i in untraced], "o", mfc="white",
                mec="#555555", ms=5, zorder=3,
                label="untraced (measures perfdiff's overhead; not in statistics)")
    stalled = [i for i, f in enumerate(trace.stalled) if f]
    if stalled:
        ax.plot(stalled, [trace.cycle_ms[i] for i in stalled], "x", color="#c0392b", ms=7,
                mew=1.5, label=STALL_LABEL[trace.stalled_by])
    holes = [i for i, f in enumerate(trace.missing_pm) if f]
    if holes:
        ax.plot(holes, [trace.cycle_ms[i] for i in holes], "v", mfc="none", mec="#8e44ad",
                ms=7, label="stretch without PM samples")
    ax.set_ylim(*limits)
    ax.set_ylabel(f"{side.label}\ncycle time (ms)", fontsize=8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    ax.grid(axis="y", color="#eeeeee", lw=0.6)


def draw(comparison: Comparison, traces: tuple[CycleTrace, CycleTrace]) -> tuple[Any, str]:
    fig = new_figure(5.2)
    text = title(comparison, traces)
    fig.suptitle(wrap_title(text), x=0.01, ha="left", fontsize=10)
    axes = fig.subplots(2, 1, sharex=True, sharey=True)
    sides = (comparison.normal, comparison.abnormal)
    limits = y_range(traces)
    for ax, trace, side, colour in zip(axes, traces, sides, SIDE_COLOURS, strict=True):
        _panel(ax, trace, side, colour, limits)
    axes[-1].set_xlabel("cycle, in run order (runs one after another)", fontsize=8)
    return fig, text
