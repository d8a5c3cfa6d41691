"""One look for every figure, and byte-stable output.

Why fixed settings: figures are attached to tickets and may be pinned in docs; the same input
must give the same file on any machine. DejaVu Sans ships with matplotlib (no system fonts),
sizes are fixed, SVG ids come from a fixed salt (per figure, so that several SVGs inlined in
one HTML page do not share ids), text stays text in the SVG (searchable, testable), and no
date or version is written into the files. ``text.parse_math`` is off: kernel names hold
``$`` and ``_`` that must print as they are.
"""

from __future__ import annotations

import io
import textwrap
from typing import Any

VERDICT_COLOURS = {
    "slower": "#c0392b",
    "faster": "#1f6fb4",
    "no change": "#7f7f7f",
    "insufficient data": "#b5b5b5",
    "appeared": "#d35400",
    "vanished": "#2471a3",
}
SIDE_COLOURS = ("#1f6fb4", "#d35400")  # normal, abnormal
BAND_COLOUR = "#d9d9d9"
WIDTH_IN = 10.0
DPI = 100
TITLE_WIDTH = 95  # characters per title line at the title's font size

RC: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 9,
    "figure.titlesize": 11,
    "svg.fonttype": "none",
    "svg.hashsalt": "perfdiff",
    "text.parse_math": False,
    "path.simplify": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def rc_context(salt: str) -> Any:
    """matplotlib's settings for a figure; ``salt`` makes its SVG ids its own."""
    import matplotlib

    params: Any = {**RC, "svg.hashsalt": f"perfdiff-{salt}"}
    return matplotlib.rc_context(params)


def wrap_title(text: str, width: int = TITLE_WIDTH) -> str:
    """A title over at most a few lines (names are long; the figure width is fixed)."""
    return "\n".join(textwrap.wrap(text, width, break_long_words=True)) or text


def new_figure(height_in: float) -> Any:
    """A figure not registered with pyplot (no global state, no display)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")


def save(fig: Any, fmt: str, salt: str) -> bytes:
    """The figure as PNG or SVG bytes, without dates or versions."""
    buffer = io.BytesIO()
    with rc_context(salt):
        if fmt == "svg":
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
        else:
            fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()
