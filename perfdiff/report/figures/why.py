"""Why: for each key finding, the resource metrics (μ) that moved with it, normal vs abnormal.

One row of panels per finding, one panel per metric: box plots of the per-cycle values on
each side, so the reader sees whether the whole distribution moved or a few cycles did. The
numbers in the panel titles are the report's (time-weighted means and the test's p).
"""

from __future__ import annotations

from typing import Any

from perfdiff.analysis.figure_data import MetricSpread
from perfdiff.analysis.model import Comparison
from perfdiff.report.figures.style import SIDE_COLOURS, new_figure, wrap_title
from perfdiff.report.format import display_name, fmt_metric, metric_name
from perfdiff.report.markdown_text import moved, p_text

NAME_WIDTH = 60


def title(spreads: tuple[MetricSpread, ...]) -> str:
    first = spreads[0]
    return (
        f"Why: while {display_name(first.function, NAME_WIDTH)} ran, "
        f"{metric_name(first.metric)} "
        f"{moved(first.metric_mean_normal, first.metric_mean_abnormal)} from "
        f"{fmt_metric(first.metric_mean_normal)} to {fmt_metric(first.metric_mean_abnormal)} "
        f"({p_text(first.p_value)})"
    )


def draw(comparison: Comparison, spreads: tuple[MetricSpread, ...]) -> tuple[Any, str]:
    functions: list[tuple[str, str, int | None]] = []
    for s in spreads:
        if (s.function, s.device, s.pid) not in functions:
            functions.append((s.function, s.device, s.pid))
    cols = max(sum(1 for s in spreads if (s.function, s.device, s.pid) == f) for f in functions)
    fig = new_figure(1.0 + 2.1 * len(functions))
    text = title(spreads)
    fig.suptitle(wrap_title(text), x=0.01, ha="left", fontsize=10)
    subfigs = fig.subfigures(len(functions), 1, squeeze=False)[:, 0]
    labels = [comparison.normal.label, comparison.abnormal.label]
    for subfig, key in zip(subfigs, functions, strict=True):
        subfig.suptitle(display_name(key[0], 110), x=0.01, ha="left", fontsize=8,
                        fontweight="bold")
        mine = [s for s in spreads if (s.function, s.device, s.pid) == key]
        axes = subfig.subplots(1, cols, squeeze=False)[0]
        for ax in axes[len(mine):]:
            ax.set_axis_off()
        for ax, spread in zip(axes, mine, strict=False):
            data = [list(spread.normal) or [float("nan")], list(spread.abnormal) or
                    [float("nan")]]
            parts = ax.boxplot(data, tick_labels=labels, widths=0.55, patch_artist=True,
                               flierprops={"ms": 3, "mec": "#666666"},
                               medianprops={"color": "#222222"})
            for patch, colour in zip(parts["boxes"], SIDE_COLOURS, strict=True):
                patch.set_facecolor(colour)
                patch.set_alpha(0.45)
            ax.set_title(
                f"{metric_name(spread.metric)}: {fmt_metric(spread.metric_mean_normal)} → "
                f"{fmt_metric(spread.metric_mean_abnormal)} ({p_text(spread.p_value)})",
                fontsize=8,
            )
            ax.tick_params(labelsize=7)
            ax.grid(axis="y", color="#eeeeee", lw=0.6)
    return fig, text
