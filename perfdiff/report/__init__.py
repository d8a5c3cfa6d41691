"""Comparison -> markdown / JSON / terminal. Pure functions: no statistics, no file reading.

Why pure renderers (pyinstrument's idea): every output format is one small module that takes
the typed :class:`perfdiff.analysis.model.Comparison` and returns text, so a renderer cannot
change a number and golden tests can pin each format byte for byte.
"""

from __future__ import annotations

from typing import Any

from perfdiff.report.json_report import JSON_FORMAT_VERSION, render_json
from perfdiff.report.markdown import render_markdown


def __getattr__(name: str) -> Any:
    """``render_terminal`` on first use: it imports rich (0.1 s, 15 MiB), which a report
    written to a file or a pipe never needs."""
    if name == "render_terminal":
        from perfdiff.report.terminal import render_terminal

        return render_terminal
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["JSON_FORMAT_VERSION", "render_json", "render_markdown", "render_terminal"]
