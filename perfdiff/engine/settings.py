"""Where the map over ranks runs, as settings (light: no pandas, no Dask imported here).

Why a module of its own: the CLI builds these before it knows whether an input is sharded;
importing the executors (pandas, the cycle table) at that point would load the analysis before
the inputs are read, which ``compare`` avoids on purpose (``analysis/entry.py`` says why).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from perfdiff.errors import UsageError

# When a local cluster is worth starting (bench/README.md, "Ranks on Dask"): on 2 cores the
# in-process map was faster at every size measured (16 M launches: 61 s in-process, 132 s on a
# 2-worker LocalCluster; both bounded by the largest rank, 0.5-0.7 GB), so a machine needs more
# cores than that, and a map longer than a cluster's start-up (8 M launches: ~30 s in-process).
IN_PROCESS_MAX_LAUNCHES = 8_000_000
LOCAL_CLUSTER_MIN_CORES = 4
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"  # Dask's own setting: dask.config "scheduler-address"

Progress = Callable[[str, int, int], None]  # (what, shards done, shards in all)


@dataclass(frozen=True)
class EngineSettings:
    """Where the map runs. ``scheduler``: address of an existing Dask scheduler (None: the
    environment's, else local); ``workers``: local cluster size (None: the machine's cores)."""

    scheduler: str | None = None
    in_process_max_launches: int = IN_PROCESS_MAX_LAUNCHES
    workers: int | None = None
    min_cores: int = LOCAL_CLUSTER_MIN_CORES

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise UsageError(f"--workers {self.workers}: must be >= 1")
        if self.scheduler is not None and not self.scheduler.strip():
            raise UsageError("--scheduler: give the scheduler's address, e.g. tcp://host:8786")
        if self.in_process_max_launches < 0:
            raise UsageError("in_process_max_launches must be >= 0")

    def local_cluster(self, launches: int) -> bool:
        """Whether a map over ``launches`` launches, with no scheduler given, starts a local
        cluster: enough cores (or workers asked for) and more launches than the threshold."""
        cores = self.workers or os.cpu_count() or 1
        return cores >= self.min_cores and launches > self.in_process_max_launches

    def address(self) -> str | None:
        """The scheduler to use: the option's, else Dask's environment variable, else None."""
        return self.scheduler or os.environ.get(SCHEDULER_ENV) or None


__all__ = ["IN_PROCESS_MAX_LAUNCHES", "LOCAL_CLUSTER_MIN_CORES", "SCHEDULER_ENV",
           "EngineSettings", "Progress"]
