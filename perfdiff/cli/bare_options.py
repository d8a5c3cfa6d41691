"""Options that take a value but may also be given bare: ``compare ... --plots``.

Why a rewrite of argv: the command-line parser under typer has no optional option values, and
``--plots DIR`` must keep working while ``--plots`` alone means "the folder beside the
report". A bare occurrence (last, or followed by another option) becomes ``--plots=``; the
command reads the empty value as "the default folder". ``--plots DIR`` and ``--plots=DIR``
are left alone.
"""

from __future__ import annotations

BARE_OPTIONS: dict[str, frozenset[str]] = {"compare": frozenset({"--plots"})}


def expand_bare_options(argv: list[str]) -> list[str]:
    """``argv`` (without the program name) with bare options given an empty value."""
    if not argv or argv[0] not in BARE_OPTIONS:
        return argv
    bare = BARE_OPTIONS[argv[0]]
    out: list[str] = []
    for i, token in enumerate(argv):
        if token == "--":
            return out + argv[i:]
        following = argv[i + 1] if i + 1 < len(argv) else None
        if token in bare and (following is None or following.startswith("-")):
            out.append(token + "=")
        else:
            out.append(token)
    return out
