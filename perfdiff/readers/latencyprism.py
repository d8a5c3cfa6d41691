"""Read LatencyPrism ``*_perf_data`` folders as checked cycle rows (``schema.loaded``).

LatencyPrism (arXiv:2601.09258) writes ``result_perf_data.csv``: one row per (cycle, pid,
function, metric, device) with the function's share of the cycle (``beta_pct``), its summed
duration in the cycle (``duration``, us), the cycle's duration (``anchor_dur_us``) and the metric's
duration-weighted mean while it ran (``mu_pct``). Importing it lets its incidents flow through
our statistics unchanged.

Why the conversions:
- ``mu_pct`` is the metric multiplied by 100 for *every* metric (clocks, bytes too): divide by
  100 so the metric mean (μ) is in the metric's own unit. ``LP_METRIC_PCT_SCALE`` lets
  seed-compatible mode undo this.
- ``beta_pct`` is kept as written (it can differ between metric rows of one function and cycle
  when a metric lacked samples; the statistics take the function's time once per cycle).
- pids, devices and ``anchor_name`` are kept, so several ranks stay apart and cycles cut at
  different anchors can be detected.
- ``result_counters_data.csv`` (the raw counter samples) is not read: LatencyPrism already
  reduced it to the per-function μ of ``result_perf_data.csv``, which is what we compare.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from perfdiff.errors import InputError
from perfdiff.schema.loaded import LP_METRIC_PCT_SCALE, CycleRows, ObjectArray
from perfdiff.schema.model import FloatArray, IntArray

if TYPE_CHECKING:
    import pandas as pd

# pandas is imported by the functions that read a folder: telling whether a path is a
# LatencyPrism folder must not load pandas (the door asks it of every input)

PERF_FILE = "result_perf_data.csv"
COUNTERS_FILE = "result_counters_data.csv"
_REQUIRED = (
    "cycle",
    "pid",
    "beta_pct",
    "function_name",
    "metric_name",
    "device",
    "func_type",
    "mu_pct",
    "duration",
    "anchor_name",
    "anchor_dur_us",
)


def is_latencyprism_folder(path: Path) -> bool:
    """True when ``path`` is a folder holding LatencyPrism's per-cycle CSV."""
    return path.is_dir() and (path / PERF_FILE).is_file()


def is_latencyprism_input(path: Path) -> bool:
    """A LatencyPrism ``*_perf_data`` folder, or its ``result_perf_data.csv`` itself."""
    return is_latencyprism_folder(path) or (path.is_file() and path.name == PERF_FILE)


def latencyprism_folder(path: Path) -> Path:
    """The folder of a LatencyPrism input (the CSV given: its folder)."""
    return path.parent if path.is_file() and path.name == PERF_FILE else path


def read_latencyprism(path: str | Path) -> CycleRows:
    """Read a LatencyPrism ``*_perf_data`` folder (or its CSV) as checked cycle rows."""
    import pandas as pd

    folder = latencyprism_folder(Path(path))
    perf = folder / PERF_FILE
    if not perf.is_file():
        raise InputError(
            f"{folder}: no {PERF_FILE} here; pass a LatencyPrism '*_perf_data' folder or a run file"
        )
    try:
        check_rows(perf)
        raw = pd.read_csv(perf, low_memory=False)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{perf}: cannot read as CSV ({_one_line(exc)})") from None
    missing = [c for c in _REQUIRED if c not in raw.columns]
    if missing:
        raise InputError(f"{perf}: not LatencyPrism per-cycle data (missing columns {missing})")
    return latencyprism_rows(raw, source=str(perf))


def check_rows(path: Path) -> None:
    """Refuse a CSV cut off mid-row or with rows of the wrong number of fields.

    Why a pass of its own: pandas fills a short row with NaN and keeps it, so a copy cut off
    mid-row (interrupted transfer, full disk) loaded silently as partial data, its last numbers
    cut short (``631190.0`` read as ``6311``). A row is checked against the header's field
    count; a short last row with no line end is reported as a truncated file. Blank lines are
    skipped, as pandas does. About 30 ms for LatencyPrism's largest scenario file (2.6 MB).
    """
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle, strict=True)
        try:
            header = next(reader, [])
            bad: tuple[int, int] | None = None
            last_bad = False
            for row in reader:
                if row and len(row) != len(header) and bad is None:
                    bad = (reader.line_num, len(row))
                    last_bad = True
                elif row:
                    last_bad = False
        except csv.Error as exc:
            raise InputError(
                f"{path}: line {reader.line_num}: {exc} (a quoted field never closed: the file "
                "was probably cut off); copy or export the LatencyPrism folder again"
            ) from None
    if bad is None:
        return
    line, fields = bad
    if last_bad and fields < len(header) and not _ends_with_newline(path):
        raise InputError(
            f"{path}: the last line ({line}) stops after {fields} of {len(header)} fields with "
            "no line end: the file was cut off; copy or export the LatencyPrism folder again"
        )
    raise InputError(
        f"{path}: line {line} has {fields} fields but the header has {len(header)}; fix or "
        "remove that row, or export the LatencyPrism folder again"
    )


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(0, 2)
        if handle.tell() == 0:
            return True
        handle.seek(-1, 2)
        return handle.read(1) in (b"\n", b"\r")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


FIX = "the export is damaged or was edited; export the LatencyPrism folder again"
BETA_AGREEMENT = 2.0  # how far beta_pct may stray from 100 x duration / anchor_dur_us
BETA_SLACK_PP = 5.0  # ... plus this many points (tiny functions: rounding of short durations)
# The largest mu_pct a metric can read, by metric name (the names LatencyPrism writes; the
# percentages read 0-100, the SM fractions 0-1; tests/readers/test_latencyprism_sense.py checks
# these names against the five real incidents). Others (clocks, bytes, link traffic, a
# process's CPU use over several cores) have no upper bound here.
LP_METRIC_HIGH: dict[str, float] = {
    "gpu_usage": 100.0, "process_gpu_usage": 100.0, "host_cpu_usage": 100.0,
    "disk_usage": 100.0, "gpu_mem_used": 100.0, "gpu_sm_util": 1.0, "gpu_sm_occupancy": 1.0,
}


def _check_sense(conv: dict[str, pd.Series], raw: pd.DataFrame, source: str) -> None:
    """Refuse rows no measurement can produce, naming the first (one line).

    Durations and shares are non-negative and finite, a cycle lasts a positive finite time,
    the metric (``mu_pct``) is finite or missing (NaN), and no function's time in a cycle
    exceeds the whole run of that process (the sum of its cycles). Shares above 100 % and a
    function's time above its cycle's are kept: LatencyPrism sums a function over threads (seen
    up to 234 % in its own exports).
    """
    import pandas as pd

    duration, anchor = conv["duration"], conv["anchor_dur_us"]
    cycle_share_pct, metric_pct = conv["beta_pct"], conv["mu_pct"]
    checks = (
        (~np.isfinite(duration) | (duration < 0), "duration", "is negative or not finite"),
        (
            ~np.isfinite(cycle_share_pct) | (cycle_share_pct < 0),
            "beta_pct",
            "is negative or not finite",
        ),
        (~np.isfinite(anchor) | (anchor <= 0), "anchor_dur_us", "is not a positive duration"),
        (np.isinf(metric_pct), "mu_pct", "is infinite"),
    )
    for bad, column, what in checks:
        _refuse_first(bad.to_numpy(), raw, column, what, source)
    # beta is the function's time over its cycle's, in % (summed over threads): in the five
    # real incidents beta / (100 x duration / anchor_dur_us) lies in 0.80-1.31; a beta of
    # 1e300 (printed as "beta = 5e298") cannot come from any duration
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = 100.0 * duration / anchor
    far = ((cycle_share_pct > BETA_AGREEMENT * expected + BETA_SLACK_PP)
           | (cycle_share_pct < expected / BETA_AGREEMENT - BETA_SLACK_PP))
    _refuse_first(far.to_numpy(), raw, "beta_pct", "disagrees with the row's duration / "
                  "anchor_dur_us (more than 2x and 5 points apart)", source)
    _refuse_first((metric_pct < 0).to_numpy(), raw, "mu_pct", "is negative (a usage, clock, "
                  "byte count or bandwidth never is)", source)
    names = raw["metric_name"].astype(str) if "metric_name" in raw.columns else None
    if names is not None:
        for metric, high in LP_METRIC_HIGH.items():
            over = ((names == metric) & (metric_pct > high)).to_numpy()
            _refuse_first(over, raw, "mu_pct", f"is above {high:g}, the most {metric} can "
                          "read", source)
    if "cycle_start_ts" in raw.columns:
        stamps = pd.to_numeric(raw["cycle_start_ts"], errors="coerce")
        _refuse_first((stamps < 0).to_numpy(), raw, "cycle_start_ts", "is a negative clock "
                      "reading", source)
    cycles = pd.DataFrame({"pid": conv["pid"], "cycle": conv["cycle"], "anchor": anchor})
    run_us = cycles.drop_duplicates(["pid", "cycle"]).groupby("pid")["anchor"].sum()
    beyond = (duration > conv["pid"].map(run_us)).to_numpy()
    _refuse_first(beyond, raw, "duration", "exceeds the whole run of its process (the sum of "
                  "its cycles)", source)


def _refuse_first(bad: np.ndarray, raw: pd.DataFrame, column: str, what: str,
                  source: str) -> None:
    if bad.any():
        row = int(bad.argmax())
        value = raw[column].iloc[row]
        shown = f"{float(value):g}" if isinstance(value, (int, float, np.number)) else \
            repr(value)[:40]  # never numpy's np.float64(...) in a user's line
        raise InputError(f"{source}: line {row + 2}: {column} {shown} {what}; {FIX}")


def latencyprism_rows(raw: pd.DataFrame, *, source: str = "<latencyprism>") -> CycleRows:
    """Convert LatencyPrism's rows (as read by pandas) to checked cycle rows (ms, metric units)."""
    import pandas as pd

    numeric = ["cycle", "pid", "beta_pct", "mu_pct", "duration", "anchor_dur_us"]
    conv = {}
    for name in numeric:
        values = pd.to_numeric(raw[name], errors="coerce")
        if name in ("cycle", "pid", "anchor_dur_us", "duration", "beta_pct"):
            bad = values.isna() & raw[name].notna()
            if bad.any() or (name in ("cycle", "anchor_dur_us") and values.isna().any()):
                first_bad = (bad if bad.any() else values.isna()).to_numpy().argmax()
                line = int(first_bad) + 2  # header is line 1
                shown = repr(raw[name].iloc[line - 2])[:40]
                raise InputError(f"{source}: line {line}: column {name!r} holds {shown}, not a "
                                 f"number; {FIX}")
        conv[name] = values
    _check_sense(conv, raw, source)
    if "instances_count" in raw.columns:
        launches = pd.to_numeric(raw["instances_count"], errors="coerce").astype("float64")
    else:
        launches = pd.Series(float("nan"), index=raw.index)

    def text(column: str) -> ObjectArray:
        return raw[column].fillna("").astype(str).to_numpy(dtype=object)

    def ints(values: pd.Series) -> IntArray:
        return np.asarray(values.to_numpy(), dtype=np.int64)

    def floats(values: pd.Series) -> FloatArray:
        return np.asarray(values.to_numpy(), dtype=np.float64)

    return CycleRows(
        pid=ints(conv["pid"].fillna(-1)),
        device=text("device"),
        cycle=ints(conv["cycle"]),
        cycle_ms=floats(conv["anchor_dur_us"]) / 1000.0,
        anchor=text("anchor_name"),
        function=text("function_name"),
        func_type=text("func_type"),
        metric=raw["metric_name"].fillna("").astype(str).replace("N/A", "").to_numpy(
            dtype=object),
        time_ms=floats(conv["duration"]) / 1000.0,
        cycle_share_pct=floats(conv["beta_pct"]),
        metric_mean=floats(conv["mu_pct"]) / LP_METRIC_PCT_SCALE,
        launches=floats(launches),
    )
