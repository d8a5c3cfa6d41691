"""Where the tests find the shared data (LatencyPrism incidents, seed reports).

Why relative to the repository: the shared folder sits beside the checkout (``../shared``), so
a clone elsewhere finds its own copy, and a machine without it skips those tests saying where
it looked (``-ra`` prints the reason) instead of skipping silently.
``PERFDIFF_SHARED`` overrides the location.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PERFDIFF_SHARED", REPO.parent / "shared"))


def shared(*parts: str) -> Path:
    """A path under the shared data folder (it may not exist)."""
    return SHARED.joinpath(*parts)


def missing_reason(path: Path) -> str:
    """The skip reason for a test whose shared input is absent."""
    return (f"shared data not found at {path} (expected ../shared beside the repository "
            f"{REPO}, or set PERFDIFF_SHARED)")
