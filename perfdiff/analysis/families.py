"""Kernel family, precision and engine from a kernel's name (rules: ``family_rules.py``).

Why from the name: a run file or a trace knows a kernel by its name only; the name says which
library built it (cuBLAS, CUTLASS, cuDNN, Tensile, MIOpen, Triton, ATen) and usually its data
type and whether it runs on tensor cores. That is what lets a report say "the bf16
tensor-core GEMMs were replaced by fp32 SIMT GEMMs" instead of listing two dozen names.
Pseudo-functions (memcpy, memset, GPU idle) are classified by their type, not their name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from perfdiff.analysis.family_rules import (
    COPY,
    ENGINE_RULES,
    FAMILY_RULES,
    LIBRARY_RULES,
    OTHER,
    PRECISION_RULES,
)
from perfdiff.analysis.known_kernels import FAMILY_OF_KNOWN

_CASE_SENSITIVE = "(?-i)"
TRANSFER_TYPES = frozenset({"memcpy", "memset"})


@dataclass(frozen=True)
class KernelClass:
    """What a kernel is: its family, and its precision and engine where the name says so
    ("" where it does not)."""

    family: str
    precision: str = ""
    engine: str = ""
    library: str = ""  # which library built it, where the name says so (not in ``label``)

    @property
    def label(self) -> str:
        """``GEMM (bf16, tensor core)``; the family alone when nothing else is known."""
        detail = ", ".join(part for part in (self.precision, self.engine) if part)
        return f"{self.family} ({detail})" if detail else self.family


def _compile(rules: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    out = []
    for label, pattern in rules:
        if pattern.startswith(_CASE_SENSITIVE):
            out.append((label, re.compile(pattern[len(_CASE_SENSITIVE):])))
        else:
            out.append((label, re.compile(pattern, re.IGNORECASE)))
    return tuple(out)


_FAMILIES = _compile(FAMILY_RULES)
_PRECISIONS = _compile(PRECISION_RULES)
_ENGINES = _compile(ENGINE_RULES)
_LIBRARIES = _compile(LIBRARY_RULES)


def _first(rules: tuple[tuple[str, re.Pattern[str]], ...], name: str) -> str:
    for label, pattern in rules:
        if pattern.search(name):
            return label
    return ""


@lru_cache(maxsize=65536)
def classify(name: str, func_type: str = "kernel") -> KernelClass:
    """Family, precision and engine of a kernel (or copy/memset for a transfer).

    A known kernel whose name says nothing (``known_kernels.py``: exact names with a cited
    body) takes its family from that table; the name rules give everything else."""
    if func_type in TRANSFER_TYPES:
        return KernelClass(COPY)
    family = FAMILY_OF_KNOWN.get(name) or _first(_FAMILIES, name) or OTHER
    return KernelClass(family, _first(_PRECISIONS, name), _first(_ENGINES, name),
                       _first(_LIBRARIES, name))


def family_of(name: str, func_type: str = "kernel") -> str:
    """The family alone (see :func:`classify`)."""
    return classify(name, func_type).family
