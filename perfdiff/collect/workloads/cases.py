"""Case labels of the benchmark workloads: ``key=value`` pairs joined by single spaces.

Why a fixed text format: a case is a cycle label in the run file (``CycleTable.label``), the
only per-cycle text the schema has, and ``perfdiff compare`` shows it as is. Keeping it
``impl=cuda dtype=float16 direction=forward shape=4x128x32`` makes it readable there and lets
``perfdiff bench`` (``perfdiff.analysis.bench_cases.parse_case_label``) pivot it into tables
without knowing the workload. Values hold no spaces and no ``=``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def case_label(fields: Mapping[str, str]) -> str:
    """``{"impl": "cuda", "dtype": "float16"}`` -> ``"impl=cuda dtype=float16"`` (order kept)."""
    parts = []
    for key, value in fields.items():
        text = str(value)
        if not key or any(c in key for c in " =") or any(c in text for c in " ="):
            raise ValueError(f"case field {key!r}={text!r} may not contain spaces or '='")
        parts.append(f"{key}={text}")
    return " ".join(parts)


def shape_text(shape: Sequence[int]) -> str:
    """``(4, 128, 32)`` -> ``"4x128x32"``; ``()`` -> ``"scalar"``."""
    return "x".join(str(d) for d in shape) if shape else "scalar"


def batch_text(batch: Sequence[int]) -> str:
    """Batch dimensions as the linalg seed writes them: ``()`` -> ``"[]"``, ``(4,)`` -> "[4]"."""
    return "[" + "x".join(str(d) for d in batch) + "]"


def parse_int_list(text: str, what: str) -> tuple[int, ...]:
    """``"128,512"`` -> ``(128, 512)``; raises ValueError naming ``what`` on bad items."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        values = tuple(int(t) for t in items)
    except ValueError:
        raise ValueError(f"{what} must be comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"{what} must list positive integers, got {text!r}")
    return values


def parse_batches(text: str) -> tuple[tuple[int, ...], ...]:
    """``"[],[1],[2],[4]"`` (or ``"-,1,2,4"``) -> ``((), (1,), (2,), (4,))``; ``2x3`` = (2, 3)."""
    out: list[tuple[int, ...]] = []
    for raw in text.replace("],", "];").replace(",", ";").split(";"):
        item = raw.strip().strip("[]").strip()
        if raw.strip() == "":
            continue
        if item in ("", "-"):
            out.append(())
            continue
        try:
            dims = tuple(int(d) for d in item.split("x"))
        except ValueError:
            raise ValueError(f"batches must look like '[],[1],[2],[4]', got {text!r}") from None
        if any(d <= 0 for d in dims):
            raise ValueError(f"batch dimensions must be positive, got {text!r}")
        out.append(dims)
    if not out:
        raise ValueError(f"batches is empty: {text!r}")
    return tuple(out)


__all__ = ["batch_text", "case_label", "parse_batches", "parse_int_list", "shape_text"]
