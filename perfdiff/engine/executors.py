"""Where the map runs: in this process, one shard after another, or on a Dask cluster.

Why both: on a small sharded run, or on a machine of few cores, starting a cluster costs more
than it gives (bench/README.md, "Ranks on Dask": ``EngineSettings.local_cluster`` says when);
the in-process path reads one shard at a time too, so its memory is also bounded by the
largest rank, not by the job. Past that, a ``LocalCluster`` sized to the machine runs the
shards in parallel; ``--scheduler``
(or Dask's own ``DASK_SCHEDULER_ADDRESS``) sends them to an existing cluster, whose workers must
see the run's folder at the same path.

A worker lost mid-run: Dask's scheduler hands its tasks to the other workers (a task is given
up after ``distributed.scheduler.allowed-failures`` worker deaths, 3 by default); then, or when
the scheduler cannot be reached, one :class:`ClusterError` line and nothing is written.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, Protocol

import pandas as pd

from perfdiff.engine.settings import EngineSettings, Progress
from perfdiff.engine.tasks import role_pids, shard_table, shard_table_parquet, table_from_parquet
from perfdiff.errors import ClusterError, PerfdiffError, UsageError
from perfdiff.schema.shards import ShardedRun


class Executor(Protocol):
    """Runs the map over one sharded run; returns the shards' tables in run order."""

    def map_shards(self, sharded: ShardedRun, what: str,
                   progress: Progress | None) -> list[pd.DataFrame]: ...


class InProcess:
    """One shard after another in this process (the small-input path)."""

    def map_shards(self, sharded: ShardedRun, what: str,
                   progress: Progress | None) -> list[pd.DataFrame]:
        tables = []
        pids = role_pids(sharded)
        for position, pid in enumerate(pids):
            tables.append(shard_table(sharded, position, pid))
            if progress is not None:
                progress(what, position + 1, len(pids))
        return tables


class OnDask:
    """Each shard one task on a Dask cluster (``client``: a ``distributed.Client``)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def map_shards(self, sharded: ShardedRun, what: str,
                   progress: Progress | None) -> list[pd.DataFrame]:
        import distributed

        dist: Any = distributed  # typed loosely: its calls are untyped
        folder = str(sharded.folder.resolve())
        futures = [self.client.submit(shard_table_parquet, folder, position, pid, pure=False)
                   for position, pid in enumerate(role_pids(sharded))]
        try:
            for done, future in enumerate(dist.as_completed(futures), start=1):
                if future.status == "error":
                    raise _task_error(future.exception(), folder)
                if progress is not None:
                    progress(what, done, len(futures))
            results = [future.result() for future in futures]
        finally:
            for future in futures:
                future.release()
        return [table_from_parquet(data) for data in results]


def _task_error(exc: BaseException, folder: str) -> BaseException:
    """A task's own error (a damaged shard: its one line) as is; the cluster's, one line."""
    if isinstance(exc, PerfdiffError):
        return exc
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        return ClusterError(f"{folder}: a shard's task was lost with its worker more often "
                            "than Dask retries it (workers killed, out of memory?); nothing "
                            "was written: give the workers more memory or rerun")
    return exc


@contextlib.contextmanager
def open_executor(settings: EngineSettings, launches: int) -> Iterator[Executor]:
    """The executor for a map over ``launches`` launches (module docstring)."""
    address = settings.address()
    if address is None and not settings.local_cluster(launches):
        yield InProcess()
        return
    try:
        import distributed
    except ImportError:
        raise UsageError("large sharded runs and --scheduler need Dask: pip install "
                         "'perfdiff[dask]'") from None
    dist: Any = distributed  # typed loosely: its calls are untyped
    with contextlib.ExitStack() as stack:
        try:
            if address is not None:
                client = stack.enter_context(dist.Client(address, timeout="10s"))
            else:
                workers = settings.workers or os.cpu_count() or 1
                cluster = stack.enter_context(dist.LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    dashboard_address=None, silence_logs=40))
                client = stack.enter_context(dist.Client(cluster))
        except (OSError, TimeoutError) as exc:
            where = address or "a local cluster"
            raise ClusterError(f"{where}: cannot start or reach the Dask scheduler ({exc}); "
                               "check the address and that the scheduler runs") from None
        yield OnDask(client)


__all__ = ["Executor", "InProcess", "OnDask", "open_executor"]
