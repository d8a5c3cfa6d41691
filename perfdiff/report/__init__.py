"""Comparison -> markdown / JSON / terminal. Pure functions: no statistics, no file reading.

Why pure renderers (pyinstrument's idea): every output format is one small module that takes
the typed :class:`perfdiff.analysis.model.Comparison` and returns text, so a renderer cannot
change a number and golden tests can pin each format byte for byte.
"""

from __future__ import annotations

from perfdiff.report.json_report import JSON_FORMAT_VERSION, render_json
from perfdiff.report.markdown import render_markdown
from perfdiff.report.terminal import render_terminal

__all__ = ["JSON_FORMAT_VERSION", "render_json", "render_markdown", "render_terminal"]
