"""``--format json``: the whole :class:`Comparison` in a versioned envelope.

Why an envelope with its own version (pipx's idea): scripts that parse our output can check
``format`` and ``version`` and refuse what they do not know, independently of the run-file
schema. Names are kept in full here (tables shorten them). NaN and infinities become ``null``
(strict JSON has neither), so every JSON parser reads the output.

Version history: 1.0 (perfdiff 0.1.0) first format; 1.1 adds ``ci_low_pct`` / ``ci_high_pct``
(95 % interval of the change of GPU busy time) to each entry of ``devices`` (issue 17); 1.2
adds ``headline`` (the cycle-time change split by kernel family, GPU idle and overlap),
``replacements`` (what replaced what), ``described`` (changes described, not tested, with
few cycles), ``by`` (kernel, family, op or module: what a row is) and rows whose
``func_type`` is ``family`` or ``replaced`` (issue 23). Readers of 1.1 can ignore the new keys.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from perfdiff import __version__
from perfdiff.analysis.model import Comparison

# The code calls the function's share of cycle time "cycle share" and a metric's time-weighted
# mean while the function ran "metric mean"; the JSON keeps the LatencyPrism names (beta, mu) it
# has always had, so scripts that parse it do not break. Code field name -> JSON key.
JSON_KEY_OF_FIELD: dict[str, str] = {
    "cycle_share_pct_normal": "beta_normal",
    "cycle_share_pct_abnormal": "beta_abnormal",
    "delta_cycle_share_pp": "delta_beta",
    "z_cycle_share": "z_beta",
    "p_cycle_share": "p_beta",
    "u_p_cycle_share": "u_p_beta",
    "metric_mean_normal": "mu_normal",
    "metric_mean_abnormal": "mu_abnormal",
    "delta_metric_mean": "delta_mu",
    "z_metric_mean": "z_mu",
    "z_log_metric_mean": "z_log_mu",
    "p_metric_mean": "p_mu",
    "u_p_metric_mean": "u_p_mu",
}


def _json_fields(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """``asdict``'s dict factory: a dataclass's fields under their JSON keys (order kept)."""
    return {JSON_KEY_OF_FIELD.get(name, name): value for name, value in items}

JSON_FORMAT = "perfdiff.comparison"
JSON_FORMAT_VERSION = "1.2"


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
    body = clean_json(asdict(comparison, dict_factory=_json_fields))
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
