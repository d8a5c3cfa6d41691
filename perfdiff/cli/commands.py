"""Imports every command module so that each registers itself on ``perfdiff.cli.app.app``.

Add one line per new command module; keep this file free of logic.
"""

from __future__ import annotations

from perfdiff.cli import (  # noqa: F401
    bench,
    collect,
    compare,
    import_trace,
    kernels,
    merge,
    ranks,
)
