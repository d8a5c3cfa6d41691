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

# Launches of all sharded inputs together up to which the map runs in-process (measured:
# bench/README.md, "Ranks on Dask").
IN_PROCESS_MAX_LAUNCHES = 8_000_000
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"  # Dask's own setting: dask.config "scheduler-address"

Progress = Callable[[str, int, int], None]  # (what, shards done, shards in all)


@dataclass(frozen=True)
class EngineSettings:
    """Where the map runs. ``scheduler``: address of an existing Dask scheduler (None: the
    environment's, else local); ``workers``: local cluster size (None: the machine's cores)."""

    scheduler: str | None = None
    in_process_max_launches: int = IN_PROCESS_MAX_LAUNCHES
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise UsageError(f"--workers {self.workers}: must be >= 1")
        if self.scheduler is not None and not self.scheduler.strip():
            raise UsageError("--scheduler: give the scheduler's address, e.g. tcp://host:8786")
        if self.in_process_max_launches < 0:
            raise UsageError("in_process_max_launches must be >= 0")

    def address(self) -> str | None:
        """The scheduler to use: the option's, else Dask's environment variable, else None."""
        return self.scheduler or os.environ.get(SCHEDULER_ENV) or None


__all__ = ["IN_PROCESS_MAX_LAUNCHES", "SCHEDULER_ENV", "EngineSettings", "Progress"]
