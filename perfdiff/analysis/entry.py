"""``compare`` as one call: two inputs read by the door -> a typed :class:`Comparison`.

Why here and not in the CLI: analysis owns "compare these two inputs": building each side,
the one comparability rule (``summary.check_comparable``), the statistics and the notes. The
CLI reads the inputs through ``perfdiff.readers.dispatch`` (analysis opens no files), calls
:func:`compare_loaded`, renders, and maps errors; it never edits the result or an error's text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perfdiff.analysis.grouping import (
    BY_KERNEL,
    grouped_run_file,
    grouping_note,
    refuse_grouping_of_rows,
)
from perfdiff.analysis.model import CompareOptions, Comparison, Replacement
from perfdiff.analysis.sides import Side, side_from_run_file, side_of
from perfdiff.schema.loaded import LoadedInput

if TYPE_CHECKING:
    import pandas as pd

# The statistics (pandas, scipy) are imported here, after both inputs were read: a trace is
# read whole (its decompressed text, 35 MB for 100k events), and that peak need not sit on
# top of 55 MiB of pandas and scipy (bench/README.md, issue 15). A run file is the exception
# for pandas (readers.dispatch.ReadOptions.pandas_follows): it parses the file's float columns,
# and compare's peak on run files is the cycle tables, not the reading (issue 25).


def compare_loaded(normal_input: LoadedInput, abnormal_input: LoadedInput,
                   options: CompareOptions | None = None,
                   labels: tuple[str, str] = ("normal", "abnormal"),
                   ) -> tuple[Comparison, tuple[Side, Side]]:
    """Compare two read inputs; the comparison and both sides (the figures draw their
    cycles)."""
    from perfdiff.analysis.comparison import compare_tables

    normal, abnormal = side_of(normal_input), side_of(abnormal_input)
    by = options.by if options is not None else BY_KERNEL
    if by != BY_KERNEL:
        return _grouped(normal, abnormal, options, labels, by)
    extra, found = _replacements(normal, abnormal, options)
    comparison = compare_tables(normal.table, abnormal.table, options, normal_meta=normal.meta,
                                abnormal_meta=abnormal.meta, labels=labels, extra_rows=extra,
                                replacements=found, time_tables=_time_tables(normal, abnormal))
    return comparison, (normal, abnormal)


def _grouped(normal: Side, abnormal: Side, options: CompareOptions | None,
             labels: tuple[str, str], by: str) -> tuple[Comparison, tuple[Side, Side]]:
    """Rows by family, op or module (grouping.py); the headline from the kernels."""
    from dataclasses import replace

    from perfdiff.analysis.comparison import compare_tables

    grouped = []
    for side in (normal, abnormal):
        if side.run_file is None:
            refuse_grouping_of_rows(by, side.meta.source)
            continue
        run_file = grouped_run_file(side.run_file, by, side.meta.source)
        grouped.append(replace(side_from_run_file(run_file, source=side.meta.source),
                               meta=side.meta))
    comparison = compare_tables(grouped[0].table, grouped[1].table, options,
                                normal_meta=normal.meta, abnormal_meta=abnormal.meta,
                                labels=labels, headline_tables=(normal.table, abnormal.table),
                                time_tables=_time_tables(normal, abnormal))
    comparison = replace(comparison, notes=(*comparison.notes, grouping_note(by)), by=by)
    return comparison, (normal, abnormal)


def _time_tables(normal: Side, abnormal: Side
                 ) -> tuple[pd.DataFrame | None, pd.DataFrame | None] | None:
    """Each run file's untraced cycles for the cycle-time change (``untraced_time.py``); None
    unless both inputs are run files (traces have no untraced cycles to offer)."""
    if normal.run_file is None or abnormal.run_file is None:
        return None
    from perfdiff.analysis.untraced_time import untraced_time_table

    return untraced_time_table(normal.run_file), untraced_time_table(abnormal.run_file)


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


__all__ = ["compare_loaded"]
