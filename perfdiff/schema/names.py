"""Kernel names in the three forms a user can ask for: short, full (demangled), mangled.

Why in ``schema``: a run file interns each kernel name once (``RunFile.strings``, mangled as
CUPTI reported it and demangled); which form a table groups and shows by is a property of those
names, needed by ``analysis`` (rows grouped by name) and ``report`` alike.
"""

from __future__ import annotations

import re
from collections import Counter
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


def template_arguments(demangled: str) -> str:
    """The template arguments of a kernel's own name (``""`` when it has none).

    ``void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)`` ->
    ``cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4``; only the list attached to the
    function itself, before its parameter list, is taken.
    """
    text = _one_line(demangled).replace("(anonymous namespace)", "anon")
    depth, opened, last = 0, -1, ""
    for pos, ch in enumerate(text):
        if ch == "(" and depth == 0:
            break
        if ch in "<(":
            if depth == 0:
                opened = pos
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
            if depth == 0 and ch == ">" and opened >= 0:
                last = text[opened + 1:pos]
    return last.strip()


_QUALIFIER = re.compile(r"\b[A-Za-z_]\w*::")


def _compact(arguments: str) -> str:
    """Template arguments without namespace qualifiers and with spaces collapsed."""
    text = _QUALIFIER.sub("", arguments)
    text = re.sub(r"\s+", " ", text).replace(" >", ">").replace("< ", "<")
    return text.strip()


def distinct_short_names(demangled: list[str]) -> list[str]:
    """Short names that tell apart every distinct kernel of ``demangled``.

    The rule (docs/reference/kernel-names.md): a kernel's short name is its bare function name
    (:func:`base_name`) when no other kernel of the list has that bare name; kernels sharing
    one (every ``cutlass::Kernel2<...>``, every ``device_kernel<...>``) keep their template
    arguments, namespaces dropped; any that still collide keep the whole demangled name. So
    two rows of a table are one kernel exactly when their demangled names are equal:
    launches of one kernel with different grids or blocks (launch configuration) are one
    row, kernels that differ by a template argument never are.
    """
    unique = sorted(set(demangled))
    bare = {name: base_name(name) for name in unique}
    shared = Counter(bare.values())
    chosen: dict[str, str] = {}
    for name in unique:
        if shared[bare[name]] == 1:
            chosen[name] = bare[name]
            continue
        arguments = template_arguments(name)
        chosen[name] = f"{bare[name]}<{_compact(arguments)}>" if arguments else name
    taken = Counter(chosen.values())
    for name in unique:
        if taken[chosen[name]] > 1:
            chosen[name] = _one_line(name)
    return [chosen[name] for name in demangled]


def kernel_name(run_file: RunFile, name_id: int, style: NameStyle) -> str:
    """The name of an interned kernel in the requested style."""
    entry = run_file.strings[name_id]
    if style == "mangled":
        return entry.mangled
    demangled = entry.demangled or entry.mangled
    return demangled if style == "full" else base_name(demangled)


__all__ = ["NameStyle", "base_name", "distinct_short_names", "kernel_name",
           "template_arguments"]
