"""``perfdiff ranks`` as one call: an input (path) -> a typed :class:`RanksReport`.

Why here: analysis owns "which rank holds the others back"; the CLI parses, calls
:func:`ranks_of_input`, renders and maps errors. The input is read by the same door as
``compare``'s (a run file, a torch.profiler trace or folder of ranks, a LatencyPrism folder).
"""

from __future__ import annotations

from pathlib import Path

from perfdiff.analysis.ranks.model import RanksOptions, RanksReport
from perfdiff.analysis.sides import read_input, side_of
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


def ranks_of_input(path: str | Path, options: RanksOptions | None = None, *,
                   cycle_range: str | None = None) -> RanksReport:
    """Read one job's recording and set each rank against the others."""
    found = read_input(path, cycle_range=cycle_range)
    from perfdiff.analysis.ranks.stragglers import find_stragglers

    side = side_of(found)
    return find_stragglers(side.table, rank_of=rank_names(found.run_file), options=options,
                           source=side.meta.source, workload=side.meta.workload)


__all__ = ["rank_names", "ranks_of_input"]
