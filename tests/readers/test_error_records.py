"""Every data error names the file, the first bad record and what to do (issue 25, item 6).

Why: 23 trace-event errors named the file but not the event ("malformed trace event
(Expected `object`, got `int`)"), and a run file's bad column or a LatencyPrism text cell
named no row: a user with a 100 MB trace cannot find what to fix. One sample per reader path:
each case damages one known record and the line must name exactly that record.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from perfdiff.errors import InputError
from perfdiff.readers.dispatch import load_input
from perfdiff.readers.latencyprism import PERF_FILE
from tests.impossible import RUN_FIXTURE, load_doc
from tests.shared_data import missing_reason, shared

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures" / "kineto" / "kineto-gpt-normal.pt.trace.json.gz"
LP = shared("latencyprism", "sglang", "gpu_instability", "normal_perf_data")
REEXPORT = "re-export it from torch.profiler"


def _at(trace: dict[str, Any], test: Callable[[dict[str, Any]], bool]) -> int:
    return next(i for i, e in enumerate(trace["traceEvents"]) if test(e))


def _kernel(e: dict[str, Any]) -> bool:
    return e.get("cat") == "kernel"


def _launch(e: dict[str, Any]) -> bool:
    return e.get("cat") == "cuda_runtime"


def _step(e: dict[str, Any]) -> bool:
    return str(e.get("name", "")).startswith("ProfilerStep#")


def _counter(trace: dict[str, Any], args: Any, ts: Any = None) -> int:
    kernel = trace["traceEvents"][_at(trace, _kernel)]
    trace["traceEvents"].append({"ph": "C", "cat": "hardware_counters", "name": "pm",
                                 "pid": kernel["pid"], "tid": 0,
                                 "ts": kernel["ts"] if ts is None else ts, "args": args})
    return len(trace["traceEvents"]) - 1


def _set(test: Callable[[dict[str, Any]], bool], key: str,
         value: Any) -> Callable[[dict[str, Any]], int]:
    def damage(trace: dict[str, Any]) -> int:
        at = _at(trace, test)
        trace["traceEvents"][at][key] = value
        return at
    return damage


def _set_arg(test: Callable[[dict[str, Any]], bool], key: str,
             value: Any) -> Callable[[dict[str, Any]], int]:
    def damage(trace: dict[str, Any]) -> int:
        at = _at(trace, test)
        trace["traceEvents"][at]["args"][key] = value
        return at
    return damage


def _insert_int(trace: dict[str, Any]) -> int:
    trace["traceEvents"].insert(7, 5)
    return 7


TRACE_DAMAGE: dict[str, Callable[[dict[str, Any]], int]] = {
    "kernel time not a number": _set(_kernel, "ts", "abc"),
    "kernel ends before it starts": _set(_kernel, "dur", -5),
    "kernel args not an object": _set(_kernel, "args", 5),
    "kernel correlation not an integer": _set_arg(_kernel, "correlation", "abc"),
    "launch time not a number": _set(_launch, "ts", "x"),
    "launch args not an object": _set(_launch, "args", [1]),
    "step ends before it starts": _set(_step, "dur", -5),
    "step time not a number": _set(_step, "ts", "x"),
    "event not an object": _insert_int,
    "counter args not an object": lambda t: _counter(t, [1]),
    "counter time not a number": lambda t: _counter(t, {"sm.pct": 5}, "zz"),
}


@pytest.mark.parametrize("name", sorted(TRACE_DAMAGE))
def test_trace_errors_name_the_event(name: str, tmp_path: Path) -> None:
    trace = json.loads(gzip.decompress(TRACE.read_bytes()))
    at = TRACE_DAMAGE[name](trace)
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps(trace))
    with pytest.raises(InputError) as raised:
        load_input(path)
    line = str(raised.value)
    assert line.startswith(f"{path}: ") and "\n" not in line, line
    assert f"traceEvents[{at}]" in line and REEXPORT in line, line


@pytest.mark.parametrize(("column", "row", "value"), [
    ("start_ns", 3, "x"), ("name_id", 5, 2**70), ("cycle", 0, [1])])
def test_run_file_column_errors_name_the_row(column: str, row: int, value: Any,
                                             tmp_path: Path) -> None:
    doc = load_doc(RUN_FIXTURE)
    doc["runs"][0]["kernels"][column][row] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as raised:
        load_input(path)
    line = str(raised.value)
    assert f"'runs[0].kernels.{column}' should hold only integers (row {row} holds" in line
    assert line.startswith(f"{path}: ") and "re-record" in line, line


@pytest.mark.skipif(not LP.is_dir(), reason=missing_reason(LP))
def test_latencyprism_text_cell_names_the_line(tmp_path: Path) -> None:
    table = pd.read_csv(LP / PERF_FILE, low_memory=False)
    table["beta_pct"] = table["beta_pct"].astype(object)
    table.loc[5, "beta_pct"] = "abc"
    folder = tmp_path / "x_perf_data"
    folder.mkdir()
    table.to_csv(folder / PERF_FILE, index=False)
    with pytest.raises(InputError) as raised:
        load_input(folder)
    line = str(raised.value)
    assert "line 7: column 'beta_pct' holds 'abc', not a number" in line  # header: line 1
    assert "export the LatencyPrism folder again" in line and "np.float64" not in line
