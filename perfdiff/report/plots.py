"""``--plots DIR``: PNGs of the cycle-time distributions and of the top functions' time per cycle.

Why matplotlib is imported inside the function: it is an optional extra (``perfdiff[plots]``);
``compare`` must work without it, and importing it costs ~0.5 s that text reports should not
pay. The Agg backend is forced: no display is needed (CI, ssh). Plots draw only numbers the
:class:`Comparison` already holds: they cannot disagree with the report.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from perfdiff.analysis.model import Comparison
from perfdiff.errors import InputError, UsageError
from perfdiff.report.format import display_name

TOP_FUNCTIONS = 10


class PlotsUnavailableError(UsageError):
    """matplotlib is not installed (the ``plots`` extra): the option cannot be honoured here."""


def ensure_plotting() -> None:
    """Fail before any work is done when ``--plots`` cannot be honoured."""
    _pyplot()


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotsUnavailableError(
            "--plots needs matplotlib, which is not installed; "
            "install it with: pip install 'perfdiff[plots]'"
        ) from exc
    return plt


def _cycle_distribution(comparison: Comparison, plt: Any, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    data = [list(comparison.normal.cycle_ms_desc), list(comparison.abnormal.cycle_ms_desc)]
    labels = [comparison.normal.label, comparison.abnormal.label]
    ax.boxplot(data, showmeans=True)
    ax.set_xticks([1, 2], labels)
    for i, values in enumerate(data, start=1):
        ax.scatter([i] * len(values), values, s=8, alpha=0.5)
    ax.set_ylabel("cycle time (ms)")
    ax.set_title("Cycle time distribution")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def _top_functions(comparison: Comparison, plt: Any, path: Path) -> None:
    picked: list[tuple[str, float, float, float, float]] = []
    seen: set[tuple[str, str, int | None]] = set()
    for row in comparison.rows:
        key = (row.function, row.device, row.pid)
        if key in seen or math.isnan(row.time_ms_normal):
            continue
        seen.add(key)
        picked.append((display_name(row.function, 48), row.time_ms_normal,
                       row.time_ms_abnormal, row.time_ci_low_ms, row.time_ci_high_ms))
        if len(picked) == TOP_FUNCTIONS:
            break
    fig, ax = plt.subplots(figsize=(9, 1.0 + 0.45 * max(len(picked), 1)))
    ys = list(range(len(picked)))
    ax.barh([y - 0.2 for y in ys], [p[1] for p in picked], height=0.4,
            label=comparison.normal.label)
    ax.barh([y + 0.2 for y in ys], [p[2] for p in picked], height=0.4,
            label=comparison.abnormal.label)
    ax.set_yticks(ys, [p[0] for p in picked], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time per cycle (ms)")
    ax.set_title("Top functions: mean time per cycle")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def write_plots(comparison: Comparison, folder: Path) -> list[Path]:
    """Write ``cycle_times.png`` and ``top_functions.png`` into ``folder``; return the paths."""
    plt = _pyplot()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{folder}: cannot create the plots folder ({exc.strerror})") from exc
    cycles, functions = folder / "cycle_times.png", folder / "top_functions.png"
    _cycle_distribution(comparison, plt, cycles)
    _top_functions(comparison, plt, functions)
    return [cycles, functions]
