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

from perfdiff.collect.settings import COLLECT_LIMITS
from perfdiff.errors import UsageError
from perfdiff.ranges import Limit

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
                "--run-cv-pct": _PCT, "--host-run-cv-pct": _PCT, "--fail-on-regression": _GATE},
    "bench": {"--alpha": _ALPHA, "--noise-floor-pct": _PCT,
              "--min-delta-us": Limit(0.0, 1e9, "us"), "--spread-factor": Limit(0.0, 1000.0),
              "--fail-on-regression": _GATE},
    "kernels": {"--top": Limit(1, 10**9, whole=True), "--run": _INDEX, "--cycle": _INDEX},
    "ranks": {"--alpha": _ALPHA, "--threshold": _PCT, "--gpu-cv-pct": _PCT,
              "--top": Limit(1, 10**9, whole=True)},
    "collect": dict(COLLECT_LIMITS),  # also what the settings objects check
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
    if not limit.allows(value):
        shown = raw if raw.isprintable() and len(raw) <= 40 else ascii(raw[:40])
        raise UsageError(f"{command}: {name} {shown} is not a usable value; give "
                         f"{limit.describe()}")


__all__ = ["OPTION_LIMITS", "Limit", "check_numeric_options"]
