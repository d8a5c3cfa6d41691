"""The physically impossible inputs of issue 16, built from real recordings.

Each mutation takes a real fixture's decoded JSON (run files) or a real LatencyPrism CSV
(pandas) and makes it impossible in one way that a new user's corpus showed being accepted with
exit 0 and a confident verdict. Used by tests/schema/test_physical_sense.py (each refused with
one line) and tests/fuzz/ (through every command, none with exit 0).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RUN_FIXTURE = ROOT / "fixtures" / "gpt-infer-normal.json.gz"
INT64_MAX = 2**63 - 1

RunMutation = Callable[[dict[str, Any]], None]
CsvMutation = Callable[[pd.DataFrame], None]


def _measured_kernel(run: dict[str, Any]) -> int:
    """Row of a kernel launched in a measured (non-warm-up) cycle, else in any cycle."""
    cycles = run["cycles"]
    measured = {i for i, w in zip(cycles["index"], cycles["warmup"], strict=True) if not w}
    in_cycle = [k for k, c in enumerate(run["kernels"]["cycle"]) if c >= 0]
    return next((k for k in in_cycle if run["kernels"]["cycle"][k] in measured), in_cycle[0])


def _list(column: Any) -> list[Any]:
    return [v.item() if hasattr(v, "item") else v for v in column]


def cycles_end_before_start(doc: dict[str, Any]) -> None:
    c = doc["runs"][0]["cycles"]
    c["start_ns"], c["end_ns"] = _list(c["end_ns"]), _list(c["start_ns"])


def kernels_end_before_start(doc: dict[str, Any]) -> None:
    k = doc["runs"][0]["kernels"]
    start, end = _list(k["start_ns"]), _list(k["end_ns"])
    for row in range(0, len(start), 50):
        start[row], end[row] = end[row] + 1, start[row]
    k["start_ns"], k["end_ns"] = start, end


def _set(doc: dict[str, Any], table: str, column: str, value: int) -> None:
    run = doc["runs"][0]
    row = _measured_kernel(run)
    values = _list(run[table][column])
    values[row] = value(values, row) if callable(value) else value
    run[table][column] = values


def kernel_lasts_1e15_ns(doc: dict[str, Any]) -> None:
    run = doc["runs"][0]
    row = _measured_kernel(run)
    end = _list(run["kernels"]["end_ns"])
    end[row] = int(run["kernels"]["start_ns"][row]) + 10**15
    run["kernels"]["end_ns"] = end


def kernel_ends_at_int64_max(doc: dict[str, Any]) -> None:
    _set(doc, "kernels", "end_ns", INT64_MAX)


def kernel_in_missing_cycle(doc: dict[str, Any]) -> None:
    _set(doc, "kernels", "cycle", 10_000)


def kernel_on_unknown_device(doc: dict[str, Any]) -> None:
    _set(doc, "kernels", "device", 7)


def kernel_starts_before_zero(doc: dict[str, Any]) -> None:
    _set(doc, "kernels", "start_ns", -5)


def metric_value_infinite(doc: dict[str, Any]) -> None:
    metric = doc["runs"][0]["metrics"][0]
    values = _list(metric["values"])
    values[len(values) // 2] = float("inf")
    metric["values"] = values


def cycle_index_twice(doc: dict[str, Any]) -> None:
    c = doc["runs"][0]["cycles"]
    index = _list(c["index"])
    index[-1] = index[-2]
    c["index"] = index


RUN_MUTATIONS: dict[str, RunMutation] = {
    f.__name__: f for f in (
        cycles_end_before_start, kernels_end_before_start, kernel_lasts_1e15_ns,
        kernel_ends_at_int64_max, kernel_in_missing_cycle, kernel_on_unknown_device,
        kernel_starts_before_zero, metric_value_infinite, cycle_index_twice,
    )
}


def lp_negative_duration(table: pd.DataFrame) -> None:
    table.loc[table.index[len(table) // 2], "duration"] = -125.0


def lp_infinite_share(table: pd.DataFrame) -> None:
    table.loc[table.index[len(table) // 3], "beta_pct"] = np.inf


def lp_cycle_of_no_time(table: pd.DataFrame) -> None:
    cycle = table["cycle"].iloc[len(table) // 2]
    table.loc[table["cycle"] == cycle, "anchor_dur_us"] = 0.0


def lp_duration_1e15(table: pd.DataFrame) -> None:
    table.loc[table.index[len(table) // 4], "duration"] = 1e15


LP_MUTATIONS: dict[str, CsvMutation] = {
    f.__name__: f for f in (lp_negative_duration, lp_infinite_share, lp_cycle_of_no_time,
                            lp_duration_1e15)
}


def load_doc(path: Path = RUN_FIXTURE) -> dict[str, Any]:
    """A run file as plain JSON (lists, not numpy arrays), ready to mutate."""
    from perfdiff.schema.io import load_run_file, run_file_to_dict

    plain: dict[str, Any] = json.loads(json.dumps(run_file_to_dict(load_run_file(path)),
                                                  default=_plain))
    return plain


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)


def write_doc(doc: dict[str, Any], path: Path) -> Path:
    """Write (gzip when the name ends .gz); ``Infinity`` is written as Python's json does."""
    data = json.dumps(doc, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path


def impossible_run_file(name: str, folder: Path, doc: dict[str, Any] | None = None) -> Path:
    """The fixture with mutation ``name`` applied, written under ``folder``."""
    mutated = json.loads(json.dumps(doc)) if doc is not None else load_doc()
    RUN_MUTATIONS[name](mutated)
    return write_doc(mutated, folder / f"{name}.json.gz")


def impossible_lp_folder(name: str, source: Path, folder: Path) -> Path:
    """A copy of LatencyPrism folder ``source`` with mutation ``name`` applied."""
    from perfdiff.readers.latencyprism import PERF_FILE

    table = pd.read_csv(source / PERF_FILE, low_memory=False)
    LP_MUTATIONS[name](table)
    out = folder / name / "abnormal_perf_data"
    out.mkdir(parents=True)
    table.to_csv(out / PERF_FILE, index=False)
    return out
