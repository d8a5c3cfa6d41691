"""Kernel names in the three forms a user can ask for: short, full (demangled), mangled.

Why in ``schema``: a run file interns each kernel name once (``RunFile.strings``, mangled as
CUPTI reported it and demangled); which form a table groups and shows by is a property of those
names, needed by ``analysis`` (rows grouped by name) and ``report`` alike.
"""

from __future__ import annotations

from typing import Literal

from perfdiff.schema.model import RunFile

NameStyle = Literal["short", "full", "mangled"]


def _one_line(text: str) -> str:
    """Line breaks and tabs -> one space; other control characters -> U+FFFD."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else " " if ch.isspace() else "\ufffd"
                   for ch in text)


def base_name(demangled: str) -> str:
    """The bare function name of a demangled C++ signature, as the seeds' kernel tables show it.

    ``void at::native::elementwise_kernel<128, 2, ...>(int, ...)`` -> ``elementwise_kernel``.
    Brackets are matched, so template arguments that contain ``(...)`` or ``::`` do not
    confuse it; ``(anonymous namespace)`` is a scope, not a parameter list. Falls back to the
    whole name when nothing is left.
    """
    text = _one_line(demangled).replace("(anonymous namespace)", "anon")
    # cut at the first top-level "(" (the parameter list) and drop template arguments
    depth = 0
    kept: list[str] = []
    for ch in text:
        if ch in "<(":
            if depth == 0 and ch == "(":
                break
            depth += 1
            continue
        if ch in ">)":
            depth = max(0, depth - 1)
            continue
        if depth == 0:
            kept.append(ch)
    qualified = "".join(kept).strip()
    qualified = qualified.rsplit(" ", 1)[-1]  # drop a return type ("void ")
    short = qualified.rsplit("::", 1)[-1]
    return short or text


def kernel_name(run_file: RunFile, name_id: int, style: NameStyle) -> str:
    """The name of an interned kernel in the requested style."""
    entry = run_file.strings[name_id]
    if style == "mangled":
        return entry.mangled
    demangled = entry.demangled or entry.mangled
    return demangled if style == "full" else base_name(demangled)


__all__ = ["NameStyle", "base_name", "kernel_name"]
