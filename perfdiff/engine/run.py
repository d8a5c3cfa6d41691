"""The reduce: sharded sides -> the same :class:`Comparison` (or :class:`RanksReport`) as ever.

Why here: ``compare`` and ``ranks`` take sharded runs beside every other input. A sharded side's
table is the shards' tables joined in run order, which is row for row the table ``cycle_table``
builds from the same run as one file (``tests/engine``), and its header, environment and notes
come from the shards' run metadata without reading a kernel. Inputs that are not sharded are
read by the door (``readers.dispatch``) as always.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.analysis.ranks.model import RanksOptions, RanksReport
from perfdiff.analysis.sides import Side, run_file_meta, side_of
from perfdiff.engine.settings import EngineSettings, Progress
from perfdiff.errors import InputError
from perfdiff.inputs import CheckedInputs
from perfdiff.readers.dispatch import ReadOptions, open_input
from perfdiff.schema.loaded import LoadedInput
from perfdiff.schema.shards import ShardedRun, skeleton_run_file

if TYPE_CHECKING:
    from perfdiff.engine.executors import Executor

# The executors (pandas, the cycle table, perhaps Dask) are imported for sharded inputs only:
# for the others ``compare`` reads both inputs before it loads the analysis (analysis/entry.py).


def compare_sharded(normal: str | Path | LoadedInput, abnormal: str | Path | LoadedInput,
                    options: CompareOptions | None = None,
                    labels: tuple[str, str] = ("normal", "abnormal"), *,
                    read: ReadOptions | None = None, settings: EngineSettings | None = None,
                    progress: Progress | None = None) -> tuple[Comparison, tuple[Side, Side]]:
    """``compare`` of two inputs of which one or both are sharded runs (module docstring);
    a path is read by the door, an input the door already read is taken as it is."""
    if options is not None and options.by != "kernel":  # never a kernel view under another name
        raise InputError(f"--by {options.by}: sharded runs are compared by kernel only (each "
                         "rank's cycle table is built in its own worker); join them first "
                         "(perfdiff merge -o RUN.json.gz SHARDS_FOLDER) or use --by kernel")
    inputs = tuple(i if isinstance(i, LoadedInput) else open_input(i, read)
                   for i in (normal, abnormal))
    launches = sum(i.sharded.launches for i in inputs if i.sharded is not None)
    from perfdiff.engine.executors import open_executor

    with open_executor(settings or EngineSettings(), launches) as executor:
        sides = tuple(side_of(i) if i.sharded is None
                      else _sharded_side(i.sharded, executor, label, progress)
                      for i, label in zip(inputs, labels, strict=True))
    from perfdiff.analysis.comparison import compare_tables

    normal_side, abnormal_side = sides
    comparison = compare_tables(normal_side.table, abnormal_side.table, options,
                                normal_meta=normal_side.meta, abnormal_meta=abnormal_side.meta,
                                labels=labels)
    return comparison, (normal_side, abnormal_side)


def ranks_of_path(path: str | Path, options: RanksOptions | None = None, *,
                  read: ReadOptions | None = None, settings: EngineSettings | None = None,
                  progress: Progress | None = None,
                  checked: CheckedInputs | None = None) -> RanksReport:
    """``ranks`` of one input read by the door; a sharded run is mapped shard by shard."""
    loaded = open_input(path, read, checked)
    if loaded.sharded is None:
        from perfdiff.analysis.ranks.entry import ranks_of_loaded

        return ranks_of_loaded(loaded, options)
    sharded = loaded.sharded
    from perfdiff.engine.executors import open_executor

    with open_executor(settings or EngineSettings(), sharded.launches) as executor:
        side = _sharded_side(sharded, executor, "ranks", progress)
    from perfdiff.analysis.ranks.entry import rank_names
    from perfdiff.analysis.ranks.stragglers import find_stragglers

    return find_stragglers(side.table, rank_of=rank_names(skeleton_run_file(sharded)),
                           options=options, source=side.meta.source,
                           workload=side.meta.workload)


def _sharded_side(sharded: ShardedRun, executor: Executor, label: str,
                  progress: Progress | None) -> Side:
    path = sharded.folder
    from perfdiff.analysis.window_work import window_ms_of

    skeleton = skeleton_run_file(sharded)
    if window_ms_of(skeleton) is not None:
        raise InputError(f"{path}: a sharded run of fixed windows (--cycle-ms); windows are "
                         "turned into units of work from a single run file only for now: "
                         "merge the shards into one file (perfdiff merge)")
    from perfdiff.engine.tasks import join_tables

    tables = [t for t in executor.map_shards(sharded, label, progress) if len(t)]
    table = join_tables(tables)
    del tables
    return Side(table, run_file_meta(skeleton, source=str(path)), None)


__all__ = ["compare_sharded", "ranks_of_path"]
