"""Format versions of the run file, and the migration chain between them.

History (keep one line per version, newest last):
- 1.0 (perfdiff 0.1.0): first format. Columnar kernel/memcpy/memset/cycle tables per run,
  interned kernel names, metric series from CUPTI PM sampling and NVML.
- 1.1 (perfdiff 0.1.0): optional cycle columns ``mark_start_ns`` / ``mark_end_ns`` (GPU start
  times of the cycle boundary marks); absent in 1.0 files, which load unchanged.
- 1.2 (perfdiff 0.1.0): optional cycle column ``return_ns`` (when the timed call returned to
  Python, on the trace's clock); absent in older files, which load unchanged.
- 1.3 (perfdiff 0.1.0): optional cycle columns ``traced`` (0 for the cycles the collector left
  untraced to measure its own overhead) and ``hold_ns`` (how long the collector held the
  interpreter inside the cycle); absent in older files, which load unchanged.
- 1.4 (perfdiff 0.1.0): optional kernel columns ``op_id`` / ``module_id`` and the top-level
  label table ``ops`` (the framework op and module that launched each kernel, from a
  torch.profiler trace); absent in older files, which load unchanged.

A reader accepts any MINOR of a MAJOR it knows (minors only add optional fields) and refuses
unknown MAJORs. Migrations are small pure functions ``dict -> dict`` from one version to the
next, applied in order, each tested with an old file (asv's approach).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CURRENT_VERSION = "1.4"
SUPPORTED_MAJORS: tuple[int, ...] = (1,)

# (from_major) -> function producing the next major's dict. Empty while only v1 exists.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def parse_version(text: object) -> tuple[int, int] | None:
    """``"1.0"`` -> (1, 0); anything malformed -> None."""
    if not isinstance(text, str):
        return None
    parts = text.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])
