"""The map: one shard (one rank's run) -> its cycle table.

Why Parquet between processes: a task's result crosses from a Dask worker to the client; the
table travels as Parquet bytes (columns, no Python objects), never as a pickled object, and
the only arguments a task gets are a folder, a file name and a pid.
"""

from __future__ import annotations

import io

import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.cycle_table import cycle_table
from perfdiff.schema.shards import ShardedRun, load_shard, read_manifest


def shard_table(sharded: ShardedRun, position: int, role_pid: int) -> pd.DataFrame:
    """The cycle table of shard ``position``, its pid set to ``role_pid`` (the pid of its
    rank's first run: replicate runs of a rank pool, as ``cycle_table`` does in one file)."""
    entry = sharded.entries[position]
    table = cycle_table(load_shard(sharded, entry))
    if len(table):
        table[C.PID] = role_pid
    return table


def shard_table_parquet(folder: str, position: int, role_pid: int) -> bytes:
    """:func:`shard_table` as Parquet bytes: what a Dask task runs and returns."""
    table = shard_table(read_manifest(folder), position, role_pid)
    sink = io.BytesIO()
    table.to_parquet(sink, engine="pyarrow", index=False)
    return sink.getvalue()


def table_from_parquet(data: bytes) -> pd.DataFrame:
    """A task's table back in the client, with the dtypes ``cycle_table`` gave it."""
    return pd.read_parquet(io.BytesIO(data), engine="pyarrow")


def role_pids(sharded: ShardedRun) -> list[int]:
    """Per shard, the pid its rows carry: that of the first shard with the same rank."""
    first: dict[int | None, int] = {}
    for entry in sharded.entries:
        first.setdefault(entry.rank, entry.pid)
    return [first[e.rank] for e in sharded.entries]


__all__ = ["role_pids", "shard_table", "shard_table_parquet", "table_from_parquet"]
