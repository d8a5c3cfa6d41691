"""Where it ran: each device's change of GPU busy time per cycle, with its 95 % interval.

Only for inputs with several devices (ranks): the straggler stands out as the one row far from
the others. Collective kernels are not counted as busy time there (analysis/collectives.py).
"""

from __future__ import annotations

import math
from typing import Any

from perfdiff.analysis.model import Comparison, DeviceSummary
from perfdiff.report.figures.style import VERDICT_COLOURS, new_figure, wrap_title
from perfdiff.report.format import fmt_interval, fmt_ms, fmt_pct
from perfdiff.report.markdown_text import device_text


def applies(comparison: Comparison) -> bool:
    """Several devices (or processes) and comparable cycles."""
    return len(comparison.devices) > 1 and comparison.cycle_time.comparable


def _change_text(d: DeviceSummary) -> str:
    return (f"{fmt_pct(d.delta_pct, signed=True)} "
            f"{fmt_interval(d.ci_low_pct, d.ci_high_pct, 'pct')}")


def title(comparison: Comparison) -> str:
    ranked = sorted(comparison.devices, key=lambda d: -abs(d.delta_pct)
                    if math.isfinite(d.delta_pct) else 0.0)
    head = ranked[0]
    where = device_text(head.device, head.pid, comparison)
    text = (f"Where it ran: {where} GPU busy time {fmt_ms(head.busy_ms_normal)} → "
            f"{fmt_ms(head.busy_ms_abnormal)} ms per cycle ({_change_text(head)}, {head.verdict})")
    others = [f"{device_text(d.device, d.pid, comparison)} {fmt_pct(d.delta_pct, signed=True)}"
              for d in ranked[1:4]]
    return text + ("; " + ", ".join(others) if others else "")


def draw(comparison: Comparison) -> tuple[Any, str]:
    devices = list(comparison.devices)
    fig = new_figure(1.6 + 0.4 * len(devices))
    text = title(comparison)
    fig.suptitle(wrap_title(text), x=0.01, ha="left", fontsize=10)
    ax = fig.subplots(1, 1)
    ax.axvline(0.0, color="#444444", lw=0.8)
    for y, d in enumerate(devices):
        colour = VERDICT_COLOURS.get(d.verdict, "#7f7f7f")
        if math.isfinite(d.ci_low_pct) and math.isfinite(d.ci_high_pct):
            ax.plot([d.ci_low_pct, d.ci_high_pct], [y, y], color=colour, lw=2.0)
        ax.plot([d.delta_pct], [y], "o", color=colour, ms=6)
        ax.annotate(f"{d.verdict}  {_change_text(d)}", xy=(1.01, y),
                    xycoords=("axes fraction", "data"), va="center", fontsize=8, color=colour)
    labels = [device_text(d.device, d.pid, comparison) for d in devices]
    ax.set_yticks(range(len(devices)), labels, fontsize=8)
    ax.set_ylim(len(devices) - 0.5, -0.5)
    ax.set_xlabel("change of GPU busy time per cycle (%), abnormal vs normal; "
                  "bars: 95 % intervals", fontsize=8)
    ax.grid(axis="x", color="#eeeeee", lw=0.6)
    return fig, text
