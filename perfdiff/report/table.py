"""GitHub-flavoured markdown pipe tables, padded so that the raw text reads as a table too.

Two writers:

- :func:`pipe_table`: our tables. Cells are already-formatted, already-escaped strings; the
  caller says which columns are right-aligned (numbers).
- :func:`seed_pipe_table`: reproduces the table layout of LatencyPrism's report (pandas
  ``to_markdown``, i.e. tabulate's "pipe" format) for ``--seed-compatible`` mode: a column
  whose cells are all numbers is right-aligned and its floats formatted with ``floatfmt``; a
  column holding any string (for example "-" for a missing rank) is left-aligned and its floats
  printed with Python's ``str()``. That is where the seed's mixed "1001081.25" beside
  "771,618.75" comes from, and why we copy it only in that mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Align = Literal["l", "r"]

_MIN_PADDING = 2  # tabulate widens every column to at least len(header) + 2


def _pad(text: str, width: int, align: Align) -> str:
    return text.rjust(width) if align == "r" else text.ljust(width)


def _render(headers: Sequence[str], rows: Sequence[Sequence[str]], aligns: Sequence[Align],
            min_padding: int) -> str:
    widths = [len(h) + min_padding for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    header_line = "| " + " | ".join(
        _pad(h, w, a) for h, w, a in zip(headers, widths, aligns, strict=True)
    ) + " |"
    rule = "|" + "|".join(
        (("-" * (w + 1)) + ":") if a == "r" else (":" + "-" * (w + 1))
        for w, a in zip(widths, aligns, strict=True)
    ) + "|"
    body = [
        "| " + " | ".join(_pad(c, w, a) for c, w, a in zip(row, widths, aligns, strict=True))
        + " |"
        for row in rows
    ]
    return "\n".join([header_line, rule, *body])


def pipe_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
               right: Sequence[int] = ()) -> str:
    """A padded pipe table; column indexes in ``right`` are right-aligned (numbers)."""
    aligns: list[Align] = ["r" if i in right else "l" for i in range(len(headers))]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} cells, table has {len(headers)} columns")
    return _render(headers, rows, aligns, min_padding=0)


Cell = str | int | float


def seed_pipe_table(headers: Sequence[str], rows: Sequence[Sequence[Cell]],
                    floatfmt: str = ",.2f") -> str:
    """tabulate's pipe format as pandas ``to_markdown(floatfmt=...)`` writes it (seed mode)."""
    n_cols = len(headers)
    numeric = [
        all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in rows)
        for i in range(n_cols)
    ]
    text_rows: list[list[str]] = []
    for row in rows:
        cells: list[str] = []
        for i, cell in enumerate(row):
            if isinstance(cell, float) and numeric[i]:
                cells.append(format(cell, floatfmt))
            else:
                cells.append(str(cell))
        text_rows.append(cells)
    aligns: list[Align] = ["r" if numeric[i] else "l" for i in range(n_cols)]
    return _render(headers, text_rows, aligns, min_padding=_MIN_PADDING)
