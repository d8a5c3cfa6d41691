"""An input as the door (``perfdiff.readers.dispatch``) hands it on: a run file, or the
per-cycle rows of a tool that already reduced its run to cycles (LatencyPrism).

Why in schema: ``readers/`` builds these and ``analysis/`` consumes them, and neither may
import the other (docs/explanation/architecture.md); the types both sides name live below both.
Every array is already checked by the reader (finite, non-negative durations, positive cycles):
nothing downstream re-checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from perfdiff.schema.model import FloatArray, IntArray, RunFile
from perfdiff.schema.shards import ShardedRun

ObjectArray = npt.NDArray[np.object_]

# LatencyPrism writes every metric mean multiplied by 100 (mu_pct, clocks and bytes too): its
# reader divides, and seed-compatible mode (analysis/seed_compat.py) multiplies back
LP_METRIC_PCT_SCALE = 100.0


@dataclass(frozen=True)
class CycleRows:
    """One row per (cycle, pid, device, function, metric), in the units of the cycle table.

    ``time_ms`` is the function's time in the cycle, ``cycle_share_pct`` its share of the
    cycle, ``metric_mean`` the metric's mean while it ran in the metric's own unit (NaN: no
    sample), ``metric`` "" on a function's row without metric, ``launches`` NaN when unknown.
    """

    pid: IntArray
    device: ObjectArray
    cycle: IntArray
    cycle_ms: FloatArray
    anchor: ObjectArray
    function: ObjectArray
    func_type: ObjectArray
    metric: ObjectArray
    time_ms: FloatArray
    cycle_share_pct: FloatArray
    metric_mean: FloatArray
    launches: FloatArray

    def __len__(self) -> int:
        return int(self.cycle.size)

    def selected(self, keep: npt.NDArray[np.bool_]) -> CycleRows:
        """The rows where ``keep`` is true (``--steps``)."""
        fields: dict[str, Any] = {name: getattr(self, name)[keep]
                                  for name in self.__dataclass_fields__}
        return CycleRows(**fields)


RUN_FILE_KIND = "run file"
IMPORTED_KIND = "imported trace"  # a run file converted from another tool's trace
LATENCYPRISM_KIND = "latencyprism"


@dataclass(frozen=True)
class LoadedInput:
    """What a path turned out to be, read and checked: exactly one of ``run_file``,
    ``cycle_rows`` and ``sharded`` is set. ``kind`` is one of the ``*_KIND`` names above (the
    report's header says it); ``workload`` names the run when the rows carry no name of their
    own. A sharded run comes as its checked manifest: ``compare`` and ``ranks`` map it shard by
    shard (``perfdiff.engine``), the door joins it whole for the other commands."""

    source: str
    kind: str
    run_file: RunFile | None = None
    cycle_rows: CycleRows | None = None
    workload: str = ""
    sharded: ShardedRun | None = None

    def __post_init__(self) -> None:
        held = (self.run_file, self.cycle_rows, self.sharded)
        if sum(part is not None for part in held) != 1:
            raise ValueError("a LoadedInput holds a run file, cycle rows or a sharded run, "
                             "exactly one")


__all__ = ["IMPORTED_KIND", "LATENCYPRISM_KIND", "LP_METRIC_PCT_SCALE", "RUN_FILE_KIND",
           "CycleRows", "LoadedInput", "ObjectArray"]
