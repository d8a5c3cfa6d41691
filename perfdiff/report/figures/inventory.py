"""Inventory: functions that appeared or vanished, with their time per cycle.

They are not compared against zero (a new kernel has no "before"); the bar is its time per
cycle on the side where it exists, coloured by which side that is.
"""

from __future__ import annotations

from typing import Any

from perfdiff.analysis.model import Comparison
from perfdiff.report.figures.style import VERDICT_COLOURS, new_figure, wrap_title
from perfdiff.report.format import display_name, fmt_ms
from perfdiff.report.markdown_text import count

MAX_ROWS = 20
NAME_WIDTH = 60


def title(comparison: Comparison) -> str:
    inv = comparison.inventory
    appeared = [i for i in inv if i.change == "appeared"]
    vanished = [i for i in inv if i.change == "vanished"]
    parts = []
    for items, word in ((appeared, "appeared"), (vanished, "vanished")):
        if items:
            top = max(items, key=lambda i: i.time_ms_per_cycle)
            parts.append(f"{count(len(items), 'function')} {word} (largest: "
                         f"{display_name(top.function, NAME_WIDTH)}, "
                         f"{fmt_ms(top.time_ms_per_cycle)} ms per cycle)")
    return "Inventory: " + "; ".join(parts)


def draw(comparison: Comparison) -> tuple[Any, str]:
    shown = sorted(comparison.inventory, key=lambda i: (-i.time_ms_per_cycle, i.function))
    shown = shown[:MAX_ROWS]
    fig = new_figure(1.4 + 0.3 * len(shown))
    text = title(comparison)
    fig.suptitle(wrap_title(text), x=0.01, ha="left", fontsize=10)
    ax = fig.subplots(1, 1)
    ys = list(range(len(shown)))
    colours = [VERDICT_COLOURS[i.change] for i in shown]
    ax.barh(ys, [i.time_ms_per_cycle for i in shown], color=colours, height=0.6)
    for y, item in zip(ys, shown, strict=True):
        ax.annotate(f"{item.change}  {fmt_ms(item.time_ms_per_cycle)} ms", xy=(1.01, y),
                    xycoords=("axes fraction", "data"), va="center", fontsize=8,
                    color=VERDICT_COLOURS[item.change])
    ax.set_yticks(ys, [f"{display_name(i.function, NAME_WIDTH)} ({i.device})" for i in shown],
                  fontsize=8)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.set_xlabel("time per cycle on the side where it ran (ms)", fontsize=8)
    ax.grid(axis="x", color="#eeeeee", lw=0.6)
    return fig, text
