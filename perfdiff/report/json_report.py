"""``--format json``: the whole :class:`Comparison` in a versioned envelope.

Why an envelope with its own version (pipx's idea): scripts that parse our output can check
``format`` and ``version`` and refuse what they do not know, independently of the run-file
schema. Names are kept in full here (tables shorten them). NaN and infinities become ``null``
(strict JSON has neither), so every JSON parser reads the output.

Version history: 1.0 (perfdiff 0.1.0) first format; 1.1 adds ``ci_low_pct`` / ``ci_high_pct``
(95 % interval of the change of GPU busy time) to each entry of ``devices`` (issue 17).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from perfdiff import __version__
from perfdiff.analysis.model import Comparison

JSON_FORMAT = "perfdiff.comparison"
JSON_FORMAT_VERSION = "1.1"


def clean_json(value: Any) -> Any:
    """Recursively: tuples -> lists, non-finite floats -> None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value


def comparison_to_dict(comparison: Comparison) -> dict[str, Any]:
    """The envelope as a plain dict (what :func:`render_json` serialises)."""
    body = clean_json(asdict(comparison))
    # environment pairs read better as objects; key order is kept (Python dicts are ordered)
    body["normal"]["environment"] = dict(comparison.normal.environment)
    body["abnormal"]["environment"] = dict(comparison.abnormal.environment)
    return {
        "format": JSON_FORMAT,
        "version": JSON_FORMAT_VERSION,
        "tool_version": __version__,
        "comparison": body,
    }


def render_json(comparison: Comparison) -> str:
    """Deterministic, indented JSON text (ends with a newline)."""
    return json.dumps(comparison_to_dict(comparison), indent=2, allow_nan=False,
                      ensure_ascii=False) + "\n"
