"""``--max-input-gib N``: the input limit (perfdiff.limits) raised for one command line.

Why taken out of the line at the door instead of declared by each command: the limit is read
where bytes are read, inside every reader, and every command that reads inputs (compare,
kernels, bench, ranks, merge, import) takes it alike; one function, called by both doors
(the fast compare parser and the typer app), sets it and hands the parsers the line without
it. Its value is checked by the one option table (perfdiff.cli.option_limits): NaN, 0,
negative or absurd sizes are one usage line. Without the option the limit is
``PERFDIFF_MAX_INPUT_GIB``'s, else 4 GiB.
"""

from __future__ import annotations

from perfdiff.cli.option_limits import OPTION_LIMITS, check_numeric_options
from perfdiff.errors import UsageError
from perfdiff.limits import MAX_INPUT_OPTION, set_max_input_gib


def take_input_limit(argv: list[str]) -> list[str]:
    """``argv`` (without the program name) less ``--max-input-gib N`` / ``=N``, the limit set
    from it; with no such option, the limit reset to the environment's."""
    set_max_input_gib(None)
    if not argv or MAX_INPUT_OPTION not in OPTION_LIMITS.get(argv[0], {}):
        return argv
    kept: list[str] = []
    gib: float | None = None
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            kept += argv[i:]
            break
        name, eq, inline = token.partition("=")
        if name != MAX_INPUT_OPTION:
            kept.append(token)
            i += 1
            continue
        if not eq and i + 1 >= len(argv):
            raise UsageError(f"{argv[0]}: {MAX_INPUT_OPTION} needs a value (a number of GiB, "
                             "e.g. 16)")
        raw = inline if eq else argv[i + 1]
        gib = _gib(argv[0], raw)
        i += 1 if eq else 2
    if gib is not None:
        set_max_input_gib(gib)
    return kept


def _gib(command: str, raw: str) -> float:
    check_numeric_options([command, MAX_INPUT_OPTION, raw])  # NaN, 0, negative, absurd
    try:
        return float(raw.strip().replace("_", "x"))
    except ValueError:
        shown = raw if raw.isprintable() and len(raw) <= 40 else ascii(raw[:40])
        raise UsageError(f"{command}: {MAX_INPUT_OPTION} {shown} is not a number; give a "
                         "number of GiB above 0 (e.g. 16)") from None


__all__ = ["take_input_limit"]
