"""The map's compact tables: string columns leave a shard as categoricals, the reduce joins
them by code, and the statistics see exactly the table ``pd.concat`` of the plain tables gives,
with each distinct name one object (the reduce's memory grows with rows, not with names)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pandas.testing as pdt

from perfdiff.analysis import columns as C
from perfdiff.analysis.cycle_table import cycle_table
from perfdiff.engine.tasks import (
    join_tables,
    role_pids,
    shard_table,
    shard_table_parquet,
    table_from_parquet,
)
from perfdiff.schema.io import load_run_file
from perfdiff.schema.shards import load_shard, read_manifest, write_shards

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _plain_tables(folder: Path) -> list[pd.DataFrame]:
    sharded = read_manifest(folder)
    tables = []
    for entry, pid in zip(sharded.entries, role_pids(sharded), strict=True):
        table = cycle_table(load_shard(sharded, entry))
        table[C.PID] = pid
        tables.append(table)
    return tables


def test_joined_compact_tables_normalise_to_the_concatenated_plain_ones(tmp_path: Path) -> None:
    folder = write_shards(load_run_file(FIXTURES / "ddp-contended-gpu1.json.gz"), tmp_path / "s")
    sharded = read_manifest(folder)
    compact = [shard_table(sharded, i, pid) for i, pid in enumerate(role_pids(sharded))]
    assert all(isinstance(t[C.FUNCTION].dtype, pd.CategoricalDtype) for t in compact)
    # the ranks' names differ in part: the union keeps every one (by value, not by code)
    assert set(compact[0][C.DEVICE]) != set(compact[1][C.DEVICE])
    joined = join_tables(compact)
    expected = C.normalise_cycle_table(pd.concat(_plain_tables(folder), ignore_index=True))
    got = C.normalise_cycle_table(joined)
    pdt.assert_frame_equal(got, expected)
    # one object per distinct text: every "kernel" cell is the same str
    kernel = got[C.FUNC_TYPE].to_numpy()[got[C.FUNC_TYPE].to_numpy() == "kernel"]
    assert len({id(v) for v in kernel}) == 1
    # and through Parquet (a Dask task's result) the same
    via_parquet = [table_from_parquet(shard_table_parquet(str(folder), i, pid))
                   for i, pid in enumerate(role_pids(sharded))]
    pdt.assert_frame_equal(C.normalise_cycle_table(join_tables(via_parquet)), expected)


def test_normalised_text_keeps_missing_as_empty_and_numbers_as_text() -> None:
    table = C.empty_cycle_table().reindex(range(4))
    for name, kind in C.COLUMNS.items():
        table[name] = 0 if kind != "s" else "x"
    table[C.FUNCTION] = pd.Series(["a", None, np.nan, "a"], dtype=object)
    table[C.METRIC] = pd.Series(["m", None, "m", "n"], dtype="category")
    table[C.ANCHOR] = [1, 2, 1, 2]
    out = C.normalise_cycle_table(table)
    assert out[C.FUNCTION].tolist() == ["a", "", "", "a"]
    assert out[C.METRIC].tolist() == ["m", "", "m", "n"]
    assert out[C.ANCHOR].tolist() == ["1", "2", "1", "2"]
    assert all(out[c].dtype == object for c in (C.FUNCTION, C.METRIC, C.ANCHOR))


def test_no_tables_join_to_the_empty_table() -> None:
    pdt.assert_frame_equal(join_tables([]), C.empty_cycle_table())
