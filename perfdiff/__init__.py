"""perfdiff: find which GPU kernels made a run slower, and why.

The package is a pipeline: collect -> run file (schema) -> table -> statistics (analysis)
-> report. The public API for user programs is tiny: :func:`cycle` and :func:`mark_cycle`
(see ``perfdiff.markers``); they cost nothing when no collector is active.
"""

from __future__ import annotations

__version__ = "0.1.0"

from perfdiff.markers import cycle, end_cycle, mark_cycle

__all__ = ["__version__", "cycle", "end_cycle", "mark_cycle"]
