"""Every numeric option's sane range, as data, checked on the command line before anything runs.

Why a table read from argv: ``bench --fail-on-regression 5 --noise-floor-pct nan`` exited 0 on
a 33 % slowdown (every comparison with NaN is false, so nothing was ever "above the floor"),
``--min-delta-us nan`` the same, and ``compare --run-cv-pct 1e308`` crashed with exit 70. Click
reads ``nan``, ``inf`` and ``1e308`` as floats and only some options had bounds. One table,
checked on the raw command line by both doors (the typer app and compare's fast parser), so a
NaN, an infinity, a negative or an absurd value of any numeric option is a usage error (exit
2, one line naming the option, the value and the range) whichever door runs the line.

The bounds are generous on purpose: they separate a typo or a hostile value from any setting a
user could mean (a 1,000 % threshold is already meaningless); finer rules (a PM interval the
GPU supports) stay with the settings object that knows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfdiff.errors import UsageError


@dataclass(frozen=True)
class Limit:
    """An option's range (inclusive unless ``low_open``) and whether it is a whole number."""

    low: float
    high: float
    unit: str = ""
    whole: bool = False
    low_open: bool = False

    def describe(self) -> str:
        low = f"above {self.low:g}" if self.low_open else f"from {self.low:g}"
        kind = "a whole number" if self.whole else "a number"
        return f"{kind} {low} to {self.high:g}{' ' + self.unit if self.unit else ''}"


_PCT = Limit(0.0, 1000.0, "%")
_ALPHA = Limit(0.0, 1.0)
_GATE = Limit(0.0, 1e6, "%")
_COUNT = Limit(0, 10**9, whole=True)
_INDEX = Limit(-1, 2**62, whole=True)

# --max-input-gib: every command that reads inputs (perfdiff.cli.input_limit takes it out of
# the line before the parsers see it); up to 1 PiB, as PERFDIFF_MAX_INPUT_GIB
_GIB = Limit(0.0, float(1 << 20), "GiB", low_open=True)

OPTION_LIMITS: dict[str, dict[str, Limit]] = {
    "compare": {"--top": _COUNT, "--rows": _COUNT, "--alpha": _ALPHA, "--threshold": _PCT,
                "--run-cv-pct": _PCT, "--fail-on-regression": _GATE},
    "bench": {"--alpha": _ALPHA, "--noise-floor-pct": _PCT,
              "--min-delta-us": Limit(0.0, 1e9, "us"), "--spread-factor": Limit(0.0, 1000.0),
              "--fail-on-regression": _GATE},
    "kernels": {"--top": Limit(1, 10**9, whole=True), "--run": _INDEX, "--cycle": _INDEX},
    "ranks": {"--alpha": _ALPHA, "--threshold": _PCT, "--gpu-cv-pct": _PCT,
              "--top": Limit(1, 10**9, whole=True)},
    "collect": {"--cycles": Limit(0, 10**8, whole=True), "--warmup": Limit(0, 10**8, whole=True),
                "--sample-interval-ns": Limit(1, 10**12, "ns", whole=True),
                "--nvml-interval-ms": Limit(0.0, 1e6, "ms", low_open=True),
                "--contend": Limit(0.0, 1.0),
                "--contend-period-ms": Limit(0.0, 1e6, "ms", low_open=True),
                "--device": Limit(0, 4096, whole=True),
                "--cycle-ms": Limit(0.0, 1e7, "ms", low_open=True),
                "--runs": Limit(1, 10**4, whole=True),
                "--untraced-every": Limit(0, 10**9, whole=True)},
}
for _command in ("compare", "kernels", "bench", "ranks", "merge", "import"):
    OPTION_LIMITS.setdefault(_command, {})["--max-input-gib"] = _GIB


def check_numeric_options(argv: list[str]) -> None:
    """Raise :class:`UsageError` at the first numeric option of ``argv`` (the command line
    without the program name) whose value is not a finite number in its range. Values that
    are not numbers at all are left to the parser, which says so in its own words."""
    if not argv or argv[0] not in OPTION_LIMITS:
        return
    command, limits = argv[0], OPTION_LIMITS[argv[0]]
    i = 1
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return
        name, eq, inline = token.partition("=")
        limit = limits.get(name)
        if limit is not None:
            raw = inline if eq else (argv[i + 1] if i + 1 < len(argv) else None)
            if raw is not None:
                _check(command, name, raw, limit)
            i += 1 if eq else 2
            continue
        i += 1


def _check(command: str, name: str, raw: str, limit: Limit) -> None:
    try:
        value = float(raw.strip().replace("_", "x"))  # "1_0" is not a number here
    except ValueError:
        return  # not a number: the parser's own message
    ok = math.isfinite(value) and (limit.low < value if limit.low_open else limit.low <= value) \
        and value <= limit.high and (not limit.whole or value == math.floor(value))
    if not ok:
        shown = raw if raw.isprintable() and len(raw) <= 40 else ascii(raw[:40])
        raise UsageError(f"{command}: {name} {shown} is not a usable value; give "
                         f"{limit.describe()}")


__all__ = ["OPTION_LIMITS", "Limit", "check_numeric_options"]
