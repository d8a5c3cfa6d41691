"""Is this path an Nsight Systems export or report? Asked by the door of every input.

Why its own module: the door (``readers.dispatch``) runs this detector on every input, run
files included; here it imports only what the answer needs, so a run file's ``compare`` does
not import the reader's modules (bench/README.md, issue 25).
"""

from __future__ import annotations

from pathlib import Path

from perfdiff.readers.nsys.database import is_sqlite_file
from perfdiff.readers.nsys.rep import is_report


def is_nsys_input(path: str | Path) -> bool:
    """Whether ``path`` is an nsys report (by its suffix: only nsys reads it) or a SQLite
    file (by its first bytes; whether it is an nsys export is checked when it is read)."""
    p = Path(path)
    return p.is_file() and (is_report(p) or is_sqlite_file(p))


__all__ = ["is_nsys_input"]
