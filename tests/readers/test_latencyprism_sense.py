"""LatencyPrism rows no measurement can produce are refused, naming the line (issue 25).

Why: ``beta_pct`` 1e300 was printed as "beta = 5e298", negative clock readings and a GPU busy
5,000 % were accepted. Each rule is checked on the five real incidents (all must still load)
and each mutation of a real export is refused with one line naming the file and the line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from perfdiff.errors import InputError
from perfdiff.readers.latencyprism import LP_METRIC_HIGH, PERF_FILE, read_latencyprism
from tests.shared_data import missing_reason, shared

INCIDENTS = shared("latencyprism", "sglang")
FOLDERS = sorted(INCIDENTS.glob("*/*_perf_data")) if INCIDENTS.is_dir() else []
NORMAL = shared("latencyprism", "sglang", "gpu_instability", "normal_perf_data")
pytestmark = pytest.mark.skipif(not FOLDERS, reason=missing_reason(INCIDENTS))


def test_every_real_incident_passes_the_rules() -> None:
    assert len(FOLDERS) == 10
    for folder in FOLDERS:
        assert len(read_latencyprism(folder).cycle) > 0, folder


def test_the_metric_table_names_real_metrics() -> None:
    seen: set[str] = set()
    for folder in FOLDERS:
        seen |= set(pd.read_csv(folder / PERF_FILE, usecols=["metric_name"])["metric_name"]
                    .dropna().astype(str))
    assert set(LP_METRIC_HIGH) <= seen


def _row(table: pd.DataFrame, metric: str | None = None) -> int:
    rows = table.index if metric is None else table.index[table["metric_name"] == metric]
    return int(rows[len(rows) // 2])


def _set(column: str, value: float, metric: str | None = None
         ) -> Callable[[pd.DataFrame], int]:
    def mutate(table: pd.DataFrame) -> int:
        row = _row(table, metric)
        table.loc[row, column] = value
        return row
    return mutate


MUTATIONS = {
    "beta 1e300": _set("beta_pct", 1e300),
    "beta 50x its duration": _set("beta_pct", 5000.0),
    "negative clock": _set("mu_pct", -2100.0, "gpu_sm_frequency"),
    "gpu busy 5,000 %": _set("mu_pct", 5000.0, "gpu_usage"),
    "sm util 1e14": _set("mu_pct", 1e14, "gpu_sm_util"),
    "negative cycle start": _set("cycle_start_ts", -1.0),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_impossible_rows_are_refused(name: str, tmp_path: Path) -> None:
    table = pd.read_csv(NORMAL / PERF_FILE, low_memory=False)
    row = MUTATIONS[name](table)
    folder = tmp_path / "normal_perf_data"
    folder.mkdir()
    table.to_csv(folder / PERF_FILE, index=False)
    with pytest.raises(InputError) as raised:
        read_latencyprism(folder)
    line = str(raised.value)
    assert "\n" not in line and str(folder / PERF_FILE) in line
    assert f"line {row + 2}:" in line and "export the LatencyPrism folder again" in line
