"""The reduce: sharded sides -> the same :class:`Comparison` (or :class:`RanksReport`) as ever.

Why here: ``compare`` and ``ranks`` take sharded runs beside every other input. Inputs that
are not sharded go through ``analysis`` unchanged; a sharded side's table is the shards' tables
joined in run order, which is row for row the table ``cycle_table`` builds from the same run as
one file (``tests/engine``), and its header, environment and notes come from the shards' run
metadata without reading a kernel.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.analysis.ranks.model import RanksOptions, RanksReport
from perfdiff.analysis.sides import Side, read_input, run_file_meta, side_of
from perfdiff.engine.settings import EngineSettings, Progress
from perfdiff.errors import InputError
from perfdiff.schema.shards import ShardedRun, is_sharded_run, read_manifest, skeleton_run_file

if TYPE_CHECKING:
    from perfdiff.engine.executors import Executor

# The executors (pandas, the cycle table, perhaps Dask) are imported for sharded inputs only:
# for the others ``compare`` reads both inputs before it loads the analysis (analysis/entry.py).


def compare_paths(normal: str | Path, abnormal: str | Path,
                  options: CompareOptions | None = None,
                  labels: tuple[str, str] = ("normal", "abnormal"), *,
                  cycle_range: str | None = None, settings: EngineSettings | None = None,
                  progress: Progress | None = None) -> tuple[Comparison, tuple[Side, Side]]:
    """``compare`` of two inputs, sharded runs mapped shard by shard (module docstring)."""
    paths = (Path(normal), Path(abnormal))
    if not any(is_sharded_run(p) for p in paths):
        from perfdiff.analysis.entry import compare_inputs_and_sides

        return compare_inputs_and_sides(normal, abnormal, options, labels,
                                        cycle_range=cycle_range)
    manifests = {p: read_manifest(p) for p in paths if is_sharded_run(p)}
    if cycle_range is not None:
        raise InputError(f"{next(iter(manifests))}: --cycle-range applies to torch.profiler "
                         "traces only; a sharded run already has its cycles")
    launches = sum(m.launches for m in manifests.values())
    from perfdiff.engine.executors import open_executor

    with open_executor(settings or EngineSettings(), launches) as executor:
        sides = tuple(_side(p, manifests.get(p), executor, label, progress, cycle_range)
                      for p, label in zip(paths, labels, strict=True))
    from perfdiff.analysis.comparison import compare_tables

    normal_side, abnormal_side = sides
    comparison = compare_tables(normal_side.table, abnormal_side.table, options,
                                normal_meta=normal_side.meta, abnormal_meta=abnormal_side.meta,
                                labels=labels)
    return comparison, (normal_side, abnormal_side)


def ranks_of_path(path: str | Path, options: RanksOptions | None = None, *,
                  cycle_range: str | None = None, settings: EngineSettings | None = None,
                  progress: Progress | None = None) -> RanksReport:
    """``ranks`` of one input; a sharded run is mapped shard by shard."""
    if not is_sharded_run(path):
        from perfdiff.analysis.ranks.entry import ranks_of_input

        return ranks_of_input(path, options, cycle_range=cycle_range)
    sharded = read_manifest(path)
    from perfdiff.engine.executors import open_executor

    with open_executor(settings or EngineSettings(), sharded.launches) as executor:
        side = _side(Path(path), sharded, executor, "ranks", progress, cycle_range)
    from perfdiff.analysis.ranks.entry import rank_names
    from perfdiff.analysis.ranks.stragglers import find_stragglers

    skeleton = skeleton_run_file(sharded)
    return find_stragglers(side.table, rank_of=rank_names(skeleton), options=options,
                           source=side.meta.source, workload=side.meta.workload)


def _side(path: Path, sharded: ShardedRun | None, executor: Executor, label: str,
          progress: Progress | None, cycle_range: str | None) -> Side:
    if sharded is None:
        return side_of(read_input(path, cycle_range=cycle_range))
    from perfdiff.analysis import columns as C
    from perfdiff.analysis.window_work import window_ms_of

    skeleton = skeleton_run_file(sharded)
    if window_ms_of(skeleton) is not None:
        raise InputError(f"{path}: a sharded run of fixed windows (--cycle-ms); windows are "
                         "turned into units of work from a single run file only for now: "
                         "merge the shards into one file (perfdiff merge)")
    tables = [t for t in executor.map_shards(sharded, label, progress) if len(t)]
    import pandas as pd

    table = pd.concat(tables, ignore_index=True) if tables else C.empty_cycle_table()
    return Side(table, run_file_meta(skeleton, source=str(path)), None)


__all__ = ["compare_paths", "ranks_of_path"]
