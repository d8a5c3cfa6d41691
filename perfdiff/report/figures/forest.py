"""What changed: a forest plot of the change of time per cycle, one row per function.

Each row is a change with its 95 % interval as an error bar, coloured and labelled by verdict;
the practical-threshold band is shaded (a change inside it never counts); the cycle time's own
change sits on top. Rows come from :func:`perfdiff.analysis.figure_data.forest_rows`: the
report's key findings first, with the same numbers as the text.
"""

from __future__ import annotations

import math
from typing import Any

from perfdiff.analysis.figure_data import Forest, ForestRow
from perfdiff.analysis.model import Comparison
from perfdiff.report.figures.style import BAND_COLOUR, VERDICT_COLOURS, new_figure, wrap_title
from perfdiff.report.format import (
    NA,
    display_name,
    fmt_interval,
    fmt_ms,
    fmt_pct,
    fmt_pp,
)
from perfdiff.report.markdown_text import device_text

NAME_WIDTH = 56


def value_text(row: ForestRow) -> str:
    """``+2.512 ms [+2.215, +2.792]``: the numbers the report prints for this change."""
    if row.unit == "pp":
        return fmt_pp(row.delta)
    interval = fmt_interval(row.low, row.high)
    text = f"{fmt_ms(row.delta, signed=True)} ms"
    return text if interval == NA else f"{text} {interval}"


def title(comparison: Comparison, forest: Forest) -> str:
    """The finding, in one sentence: the first key finding and the cycle time."""
    change = comparison.cycle_time
    cycle = (f"cycle time {fmt_pct(change.delta_pct, signed=True)} "
             f"{fmt_interval(change.ci_low_pct, change.ci_high_pct, 'pct')} ({change.verdict})"
             if change.comparable else "cycle times not compared (cut differently)")
    first = next((r for r in forest.rows if r.is_finding), None)
    if first is None:
        return f"What changed: no function changed beyond the threshold; {cycle}"
    name = display_name(first.function, NAME_WIDTH)
    what = "per cycle" if first.unit == "ms" else "of cycle time"
    interval = (f" (95 % interval {fmt_interval(first.low, first.high)} ms)"
                if first.unit == "ms" else "")
    amount = (f"{fmt_ms(first.delta, signed=True)} ms" if first.unit == "ms"
              else fmt_pp(first.delta))
    return f"What changed: {name} {first.verdict}, {amount} {what}{interval}; {cycle}"


def _row_label(row: ForestRow, comparison: Comparison, several_devices: bool) -> str:
    name = display_name(row.function, NAME_WIDTH)
    if several_devices:
        name += f" on {device_text(row.device, row.pid, comparison)}"
    return name


def _draw_rows(ax: Any, rows: list[ForestRow], labels: list[str], threshold: float) -> None:
    ys = list(range(len(rows)))
    ax.axvspan(-threshold, threshold, color=BAND_COLOUR, alpha=0.6, lw=0, zorder=0)
    ax.axvline(0.0, color="#444444", lw=0.8, zorder=1)
    for y, row in zip(ys, rows, strict=True):
        colour = VERDICT_COLOURS.get(row.verdict, "#7f7f7f")
        if math.isfinite(row.low) and math.isfinite(row.high):
            ax.plot([row.low, row.high], [y, y], color=colour, lw=2.0, zorder=2,
                    solid_capstyle="butt")
            ax.plot([row.low, row.low], [y - 0.18, y + 0.18], color=colour, lw=1.2, zorder=2)
            ax.plot([row.high, row.high], [y - 0.18, y + 0.18], color=colour, lw=1.2, zorder=2)
        marker = "D" if row.is_finding else "o"
        ax.plot([row.delta], [y], marker=marker, color=colour, ms=6, zorder=3, ls="none")
        ax.annotate(f"{row.verdict}  {value_text(row)}", xy=(1.01, y),
                    xycoords=("axes fraction", "data"), va="center", ha="left", fontsize=8,
                    color=colour)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", color="#eeeeee", lw=0.6)


def draw(comparison: Comparison, forest: Forest) -> tuple[Any, str]:
    """The figure and its title (the title states the finding)."""
    rows = list(forest.rows)
    n = max(len(rows), 1)
    has_cycle = forest.cycle is not None
    height = 1.6 + 0.32 * n + (0.8 if has_cycle else 0.0)
    fig = new_figure(height)
    text = title(comparison, forest)
    fig.suptitle(wrap_title(text), x=0.01, ha="left", fontsize=10)
    if has_cycle:
        ax_cycle, ax = fig.subplots(2, 1, height_ratios=[0.9, n * 0.32])
    else:
        ax = fig.subplots(1, 1)
    several = len({(r.device, r.pid) for r in rows}) > 1
    if has_cycle and forest.cycle is not None:
        _draw_rows(ax_cycle, [forest.cycle], ["cycle time"], forest.threshold)
        ax_cycle.set_title("Cycle time (ms per cycle)", loc="left", fontsize=8)
    if rows:
        labels = [_row_label(r, comparison, several) for r in rows]
        _draw_rows(ax, rows, labels, forest.threshold)
    unit = ("change of time per cycle (ms), abnormal − normal" if forest.unit == "ms"
            else "change of share of cycle time (percentage points)")
    band = (f"shaded: practical threshold ±{fmt_ms(forest.threshold)} ms" if forest.unit == "ms"
            else f"shaded: ±{fmt_pct(forest.threshold)} of cycle time")
    ax.set_xlabel(f"{unit}; {band}; bars: 95 % intervals; ◆ key finding", fontsize=8)
    return fig, text
