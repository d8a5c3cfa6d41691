"""``compare`` as one call: two inputs (paths) -> a typed :class:`Comparison`.

Why here and not in the CLI: analysis owns "compare these two inputs": loading each side, the
one comparability rule (``summary.check_comparable``), the statistics and the notes. The CLI
parses options, calls :func:`compare_inputs`, renders, and maps errors; it never edits the
result or the text of an error.
"""

from __future__ import annotations

from pathlib import Path

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.analysis.sides import Side, load_side


def compare_inputs(normal_path: str | Path, abnormal_path: str | Path,
                   options: CompareOptions | None = None,
                   labels: tuple[str, str] = ("normal", "abnormal")) -> Comparison:
    """Load both inputs (run files or LatencyPrism folders) and compare them."""
    return compare_inputs_and_sides(normal_path, abnormal_path, options, labels)[0]


def compare_inputs_and_sides(normal_path: str | Path, abnormal_path: str | Path,
                             options: CompareOptions | None = None,
                             labels: tuple[str, str] = ("normal", "abnormal"),
                             ) -> tuple[Comparison, tuple[Side, Side]]:
    """:func:`compare_inputs`, and the loaded inputs (the figures draw their cycles)."""
    normal = load_side(normal_path)
    abnormal = load_side(abnormal_path)
    comparison = compare_tables(normal.table, abnormal.table, options, normal_meta=normal.meta,
                                abnormal_meta=abnormal.meta, labels=labels)
    return comparison, (normal, abnormal)


__all__ = ["compare_inputs", "compare_inputs_and_sides"]
