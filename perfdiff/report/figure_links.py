"""Where a report links its figures: one image line per figure, in the section it belongs to.

Why a mapping handed to the renderers: the markdown report and the HTML report (which renders
the same markdown) place the same figure at the same spot; only the target differs (a relative
file path, or an inline SVG). The alt text is the figure's title: it states the finding, so a
reader without images (or a screen reader) loses nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from perfdiff.report.format import md_cell


@dataclass(frozen=True)
class FigureLink:
    target: str  # a relative URL (posix path) or an inline-figure reference
    alt: str  # the figure's title: its finding


FigureLinks = Mapping[str, FigureLink]  # figure key -> link ("what-changed", "cycles", ...)


def image_line(links: FigureLinks | None, key: str) -> list[str]:
    """``![alt](target)`` and a blank line, or nothing when there is no such figure."""
    if not links or key not in links:
        return []
    link = links[key]
    return [f"![{md_cell(link.alt)}]({quote(link.target, safe='/:.-_~')})", ""]
