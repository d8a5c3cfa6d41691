"""``compare`` as one call: two inputs (paths) -> a typed :class:`Comparison`.

Why here and not in the CLI: analysis owns "compare these two inputs": loading each side, the
one comparability rule (``summary.check_comparable``), the statistics and the notes. The CLI
parses options, calls :func:`compare_inputs`, renders, and maps errors; it never edits the
result or the text of an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from perfdiff.analysis.model import CompareOptions, Comparison, Replacement
from perfdiff.analysis.sides import Side, read_input, side_of

if TYPE_CHECKING:
    import pandas as pd

# The statistics (pandas, scipy) are imported once both inputs are read: a trace is read
# whole (its decompressed text, 35 MB for 100k events), and that peak need not sit on top of
# 55 MiB of pandas and scipy (bench/README.md, issue 15).


def compare_inputs(normal_path: str | Path, abnormal_path: str | Path,
                   options: CompareOptions | None = None,
                   labels: tuple[str, str] = ("normal", "abnormal"), *,
                   cycle_range: str | None = None) -> Comparison:
    """Load both inputs (run files, torch.profiler traces or LatencyPrism folders) and compare
    them; ``cycle_range`` names the annotation that cuts a trace's cycles."""
    return compare_inputs_and_sides(normal_path, abnormal_path, options, labels,
                                    cycle_range=cycle_range)[0]


def compare_inputs_and_sides(normal_path: str | Path, abnormal_path: str | Path,
                             options: CompareOptions | None = None,
                             labels: tuple[str, str] = ("normal", "abnormal"), *,
                             cycle_range: str | None = None,
                             ) -> tuple[Comparison, tuple[Side, Side]]:
    """:func:`compare_inputs`, and the loaded inputs (the figures draw their cycles)."""
    normal_input = read_input(normal_path, cycle_range=cycle_range)
    abnormal_input = read_input(abnormal_path, cycle_range=cycle_range)
    from perfdiff.analysis.comparison import compare_tables

    normal, abnormal = side_of(normal_input), side_of(abnormal_input)
    extra, found = _replacements(normal, abnormal, options)
    comparison = compare_tables(normal.table, abnormal.table, options, normal_meta=normal.meta,
                                abnormal_meta=abnormal.meta, labels=labels, extra_rows=extra,
                                replacements=found)
    return comparison, (normal, abnormal)


def _replacements(normal: Side, abnormal: Side, options: CompareOptions | None
                  ) -> tuple[tuple[pd.DataFrame, pd.DataFrame] | None, tuple[Replacement, ...]]:
    """Replaced kernels, when both inputs know their launch order (run files and traces
    with cycles of work, not fixed windows; not in LatencyPrism's own mode)."""
    if normal.run_file is None or abnormal.run_file is None:
        return None, ()
    if options is not None and options.seed_compatible:
        return None, ()
    if normal.meta.window is not None or abnormal.meta.window is not None:
        return None, ()
    from perfdiff.analysis.replacements import replacement_rows

    rows, found, _ = replacement_rows((normal.run_file, abnormal.run_file),
                                      (normal.table, abnormal.table))
    return rows, found


__all__ = ["compare_inputs", "compare_inputs_and_sides"]
