"""The cycle table's columns, declared once.

The cycle table is a long pandas DataFrame, one row per (run, pid, device, cycle, function,
metric). Every producer (run-file builder, LatencyPrism importer, the validation harness) emits
exactly these columns and every consumer (statistics) reads only these, so the format is stated
here and nowhere else (HolisticTraceAnalysis's "columns as data").

Conventions: ``time_ms`` and ``cycle_share_pct`` are the function's time in the cycle, in ms
and as a percentage of the cycle (LatencyPrism's β; identical on every metric row of one
function and cycle); ``metric_mean`` (LatencyPrism's μ) is the metric's time-weighted mean
while the function ran, in the metric's own unit (NaN: no sample), and ``metric`` is "" on the
row of a function without metric samples. ``launches`` is optional (kernel launches in the
cycle; imported data lacks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np
import pandas as pd

from perfdiff.errors import InputError

RUN: Final = "run"
PID: Final = "pid"
DEVICE: Final = "device"
CYCLE: Final = "cycle"
CYCLE_MS: Final = "cycle_ms"
ANCHOR: Final = "anchor"
FUNCTION: Final = "function"
FUNC_TYPE: Final = "func_type"
METRIC: Final = "metric"
TIME_MS: Final = "time_ms"
CYCLE_SHARE_PCT: Final = "cycle_share_pct"  # 0-100 (can exceed 100 for CPU time)
METRIC_MEAN: Final = "metric_mean"
LAUNCHES: Final = "launches"  # optional

# column -> numpy dtype kind it must have ("i" int, "f" float, "O"/"U" str -> "s")
COLUMNS: Final[Mapping[str, str]] = {
    RUN: "i",
    PID: "i",
    DEVICE: "s",
    CYCLE: "i",
    CYCLE_MS: "f",
    ANCHOR: "s",
    FUNCTION: "s",
    FUNC_TYPE: "s",
    METRIC: "s",
    TIME_MS: "f",
    CYCLE_SHARE_PCT: "f",
    METRIC_MEAN: "f",
}
OPTIONAL_COLUMNS: Final[Mapping[str, str]] = {LAUNCHES: "f"}

# keys of one function's time series and of one metric's series
FUNCTION_KEY: Final = (PID, DEVICE, FUNCTION)
ROW_KEY: Final = (PID, DEVICE, FUNCTION, METRIC)
CYCLE_KEY: Final = (RUN, PID, CYCLE)

# func_type values with a meaning for the statistics
KERNEL_TYPES: Final = frozenset({"kernel", "gpu_compute"})
IDLE_FUNCTION: Final = "[GPU idle]"
# pseudo-functions that sum or pair other rows (family_rows.py, replacements.py): tested and
# ranked like functions, but not launched, so never in launch counts or GPU-busy sums
FAMILY_TYPE: Final = "family"
REPLACED_TYPE: Final = "replaced"
PSEUDO_TYPES: Final = frozenset({FAMILY_TYPE, REPLACED_TYPE})


def empty_cycle_table() -> pd.DataFrame:
    """A cycle table with no rows and the right dtypes."""
    return pd.DataFrame({name: pd.Series([], dtype=_dtype(kind)) for name, kind in COLUMNS.items()})


def _interned_text(column: pd.Series) -> np.ndarray:
    """``column`` as text (missing: ""), an object array whose equal cells share one str."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        names = column.cat.categories.to_series().astype(str).to_numpy(dtype=object)
    else:
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        names = pd.Series(uniques, dtype=object).astype(str).to_numpy(dtype=object)
    names = np.append(names, np.asarray([""], dtype=object))  # code -1: missing
    return np.asarray(names[codes], dtype=object)


def _dtype(kind: str) -> str:
    return {"i": "int64", "f": "float64", "s": "object"}[kind]


def normalise_cycle_table(table: pd.DataFrame, *, source: str = "<table>") -> pd.DataFrame:
    """Check the columns and coerce dtypes (strings as object, numbers as int64/float64).

    Raises :class:`InputError` naming the missing columns, so a hand-made or third-party table
    fails with one line instead of a KeyError deep in the statistics.
    """
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise InputError(f"{source}: cycle table lacks columns {missing}; see analysis/columns.py")
    out = pd.DataFrame(index=pd.RangeIndex(len(table)))
    for name, kind in {**COLUMNS, **OPTIONAL_COLUMNS}.items():
        if name not in table.columns:
            continue
        column = table[name]
        try:
            if kind == "s":
                # object, not pandas' "str" dtype: the statistics build sets and dicts of these
                # columns, and iterating a "str" column boxes each value (about 1 us apiece);
                # each distinct text is one object every row points to (a job of many ranks
                # repeats a few hundred names over millions of rows)
                out[name] = pd.Series(_interned_text(column), index=out.index, dtype=object)
            else:
                out[name] = column.to_numpy().astype(_dtype(kind))
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"{source}: column {name!r} has values of the wrong type ({exc})"
            ) from None
    return out
