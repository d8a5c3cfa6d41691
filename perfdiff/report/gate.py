"""The lines ``--fail-on-regression`` prints, one per regression found by
:func:`perfdiff.analysis.gate.find_regressions` (which decides what counts).

Names are the report's compacted display names: a CI log line should not hold a 500-character
C++ signature the report itself never shows (``--format json`` has them in full).
"""

from __future__ import annotations

from collections.abc import Sequence

from perfdiff.analysis.gate import Regression
from perfdiff.report.format import PROSE_NAME_WIDTH, display_name, fmt_pct, fmt_pp


def regression_line(found: Regression) -> str:
    """One regression as the CI log shows it."""
    threshold = f"(threshold {fmt_pct(found.threshold_pct)})"
    if found.kind == "cycle time":
        return f"mean cycle time {fmt_pct(found.size, signed=True)} {threshold}"
    name = display_name(found.function, PROSE_NAME_WIDTH)
    if found.kind == "share of cycle":
        return f"{name} on {found.device} share of cycle time {fmt_pp(found.size)} {threshold}"
    if found.kind == "appeared":
        return f"{name} on {found.device} appeared, {fmt_pct(found.size)} of cycle time {threshold}"
    return f"{name} on {found.device} {fmt_pct(found.size, signed=True)} of cycle time {threshold}"


def regression_lines(found: Sequence[Regression]) -> list[str]:
    """Every regression's line, in the order found."""
    return [regression_line(r) for r in found]


__all__ = ["regression_line", "regression_lines"]
