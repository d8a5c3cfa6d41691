"""The map: one shard (one rank's run) -> its cycle table.

Why Parquet between processes: a task's result crosses from a Dask worker to the client; the
table travels as Parquet bytes (columns, no Python objects), never as a pickled object, and
the only arguments a task gets are a folder, a file name and a pid.

Why categories: a rank's table repeats a few hundred names over ~10,000 rows; the reduce holds
every rank's table, so each string column leaves the map as a pandas categorical (integer codes
and the names once) and the reduce joins them by code (``join_tables``): its memory grows with
rows x a few bytes, not with rows x names (bench/README.md, "Ranks on Dask").
"""

from __future__ import annotations

import io

import pandas as pd
from pandas.api.types import union_categoricals

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
    return _compact(table)


def _compact(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its string columns as categoricals (the module docstring says why)."""
    for name, kind in C.COLUMNS.items():
        if kind == "s" and name in table.columns:
            table[name] = table[name].astype("category")
    return table


def join_tables(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The shards' tables one after another, row for row as ``pd.concat`` would join them,
    string columns kept as categoricals over the union of the shards' names."""
    if not tables:
        return C.empty_cycle_table()
    columns = list(tables[0].columns)
    joined: dict[str, object] = {}
    for name in columns:
        parts = [t[name] for t in tables]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts):
            joined[name] = pd.Series(union_categoricals(parts), copy=False)
        else:
            joined[name] = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(joined)


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


__all__ = ["join_tables", "role_pids", "shard_table", "shard_table_parquet", "table_from_parquet"]
