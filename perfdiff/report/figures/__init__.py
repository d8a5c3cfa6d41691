"""Figures of a comparison (matplotlib, the ``plots`` extra): PNG and SVG, deterministic.

Five figures, each titled with its finding (the title is also the alt text beside its link):

- ``what-changed``: forest plot of the change of time per cycle per function (forest.py);
- ``cycles``: both sides' cycle times in run order (cycles.py);
- ``where-it-ran``: per-device change of GPU busy time, multi-GPU inputs only (devices.py);
- ``why``: μ distributions of the key findings' metric moves (why.py), when any moved;
- ``inventory``: functions that appeared or vanished (inventory.py), when any did.

Why matplotlib is imported only here, inside functions: it is optional, and importing it costs
about half a second that text reports should not pay. These modules draw only what
:class:`Comparison` and :class:`perfdiff.analysis.figure_data.FigureData` hold: no statistics.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfdiff.analysis.figure_data import FigureData
from perfdiff.analysis.model import Comparison
from perfdiff.errors import UsageError

if TYPE_CHECKING:
    from perfdiff.output import OutputFile

INSTALL_HINT = "pip install 'perfdiff[plots]'"
ORDER = ("what-changed", "cycles", "where-it-ran", "why", "inventory")


class PlotsUnavailableError(UsageError):
    """matplotlib is not installed (the ``plots`` extra): the option cannot be honoured here."""


def plotting_available() -> bool:
    """Whether matplotlib can be imported (``--format html`` then draws no figures)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def ensure_plotting() -> None:
    """Fail before any work is done when ``--plots`` cannot be honoured (one line)."""
    if not plotting_available():
        raise PlotsUnavailableError(
            f"--plots needs matplotlib, which is not installed; install it with: {INSTALL_HINT}"
        )


@dataclass(frozen=True)
class RenderedFigure:
    """One figure: its key (file stem, anchor), its title (the finding) and its bytes."""

    key: str
    title: str
    svg: str  # "" when not asked for
    png: bytes  # b"" when not asked for


@dataclass(frozen=True)
class WrittenFigure:
    key: str
    title: str
    png: Path
    svg: Path


def _drawers(comparison: Comparison, data: FigureData) -> list[tuple[str, Callable[[], Any]]]:
    from perfdiff.report.figures import cycles, devices, forest, inventory, why

    drawers: list[tuple[str, Callable[[], Any]]] = [
        ("what-changed", lambda: forest.draw(comparison, data.forest)),
        ("cycles", lambda: cycles.draw(comparison, data.traces)),
    ]
    if devices.applies(comparison):
        drawers.append(("where-it-ran", lambda: devices.draw(comparison)))
    if data.spreads:
        drawers.append(("why", lambda: why.draw(comparison, data.spreads)))
    if comparison.inventory:
        drawers.append(("inventory", lambda: inventory.draw(comparison)))
    return drawers


def render_figures(comparison: Comparison, data: FigureData,
                   formats: Sequence[str] = ("png", "svg")) -> list[RenderedFigure]:
    """Every figure that applies to this comparison, in :data:`ORDER`."""
    ensure_plotting()
    import matplotlib

    matplotlib.use("Agg")
    from perfdiff.report.figures.style import rc_context, save

    out = []
    with rc_context("draw"):
        for key, draw in _drawers(comparison, data):
            fig, title = draw()
            png = save(fig, "png", key) if "png" in formats else b""
            if png:
                # laid out once, by the PNG's (Agg) text metrics: the SVG keeps that layout
                fig.set_layout_engine("none")
            svg = save(fig, "svg", key).decode("utf-8") if "svg" in formats else ""
            out.append(RenderedFigure(key, title, svg, png))
    return out


def figure_files(figures: Sequence[RenderedFigure], folder: Path) -> list[OutputFile]:
    """``<key>.png`` and ``<key>.svg`` for each figure in ``folder``, in that order, for the
    one output helper to write with the report (together or not at all)."""
    from perfdiff.output import output_file

    files = []
    for fig in figures:
        files.append(output_file(folder / f"{fig.key}.png", fig.png, "a figure"))
        files.append(output_file(folder / f"{fig.key}.svg", fig.svg, "a figure"))
    return files


def write_figures(figures: Sequence[RenderedFigure], folder: Path, *,
                  inputs: Sequence[str | os.PathLike[str]] = ()) -> list[WrittenFigure]:
    """``<key>.png`` and ``<key>.svg`` for each figure in ``folder`` (created if needed),
    all written through the one output helper (together, never over an input)."""
    from perfdiff.output import write_together

    written = write_together(figure_files(figures, folder), inputs=inputs)
    return [WrittenFigure(fig.key, fig.title, png, svg)
            for fig, png, svg in zip(figures, written[::2], written[1::2], strict=True)]


__all__ = [
    "INSTALL_HINT",
    "ORDER",
    "PlotsUnavailableError",
    "RenderedFigure",
    "WrittenFigure",
    "ensure_plotting",
    "figure_files",
    "plotting_available",
    "render_figures",
    "write_figures",
]
