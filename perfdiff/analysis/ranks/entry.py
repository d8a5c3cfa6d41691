"""``perfdiff ranks`` as one call: an input read by the door -> a typed :class:`RanksReport`.

Why here: analysis owns "which rank holds the others back"; the CLI reads the input through
``perfdiff.readers.dispatch`` (analysis opens no files), calls :func:`ranks_of_loaded`,
renders and maps errors.
"""

from __future__ import annotations

from perfdiff.analysis.ranks.model import RanksOptions, RanksReport
from perfdiff.analysis.sides import side_of
from perfdiff.schema.loaded import LoadedInput
from perfdiff.schema.model import RunFile


def rank_names(run_file: RunFile | None) -> dict[int, str]:
    """The cycle table's pid of each rank -> "rank N", in rank order.

    The cycle table gives each rank the pid of its first run (replicate runs of a rank pool
    under it: ``cycle_table.py``); a process with no rank is named by its pid.
    """
    if run_file is None:
        return {}
    first_pid: dict[int | None, int] = {}
    for run in run_file.runs:
        first_pid.setdefault(run.rank, run.pid)
    ordered = sorted(first_pid.items(), key=lambda item: (item[0] is None, item[0] or 0))
    return {pid: f"rank {rank}" if rank is not None else f"pid {pid}" for rank, pid in ordered}


def ranks_of_loaded(found: LoadedInput, options: RanksOptions | None = None) -> RanksReport:
    """Set each rank of one job's recording against the others."""
    from perfdiff.analysis.ranks.stragglers import find_stragglers

    side = side_of(found)
    return find_stragglers(side.table, rank_of=rank_names(found.run_file), options=options,
                           source=side.meta.source, workload=side.meta.workload)


__all__ = ["rank_names", "ranks_of_loaded"]
