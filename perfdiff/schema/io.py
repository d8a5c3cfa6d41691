"""Read and write run files (.json and .json.gz), with a version gate and one-line errors.

Why hand-written converters: raw dicts live only at this edge; every field is checked once
here so that nothing downstream needs to ask "is this key there?". Writes go through
``perfdiff.output`` (atomic, never over an input) so an interrupted collection never leaves half a
file.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from perfdiff.errors import InputError, SchemaVersionError
from perfdiff.inputs import require_input
from perfdiff.limits import read_input_bytes
from perfdiff.output import write_atomic
from perfdiff.schema import numeric_json
from perfdiff.schema.model import (
    Collection,
    CycleTable,
    DeviceInfo,
    Environment,
    KernelName,
    KernelTable,
    MetricSeries,
    Run,
    RunFile,
    Status,
    TransferTable,
    Workload,
)
from perfdiff.schema.sense import check_run_file
from perfdiff.schema.versions import (
    CURRENT_VERSION,
    MIGRATIONS,
    SUPPORTED_MAJORS,
    parse_version,
)

T = TypeVar("T")


class _Malformed(Exception):
    """Internal: a field is missing or has the wrong type; carries the JSON path."""


# ----------------------------------------------------------------------------- reading


def load_run_file(path: str | os.PathLike[str]) -> RunFile:
    """Check the path, load and validate a run file; raise :class:`InputError` with one clear
    line on failure (the commands read inputs through the door, ``readers.dispatch``, which
    checks the path once and calls :func:`read_run_file`)."""
    return read_run_file(require_input(path))


def read_run_file(path: Path) -> RunFile:
    """Load and validate the run file at a path already checked (exists, readable)."""
    return run_file_from_dict(_read_json(path), source=str(path))


def _read_json(p: Path) -> Any:
    data = read_input_bytes(p, "re-copy or re-record the file")  # bounded (perfdiff.limits)
    if not data or data.isspace():  # what `not data.strip()` says, without copying the file
        raise InputError(f"{p}: file is empty; re-copy it or re-record the run")
    fast = numeric_json.loads(data)
    if fast is not None:
        return fast
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not a run file (not UTF-8 text); pass a .json or .json.gz file "
                         "written by perfdiff") from exc
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise InputError(f"{p}: not a run file (JSON nested too deeply); pass a run file "
                         "written by perfdiff") from exc
    except json.JSONDecodeError as exc:
        hint = "file is truncated" if exc.pos >= len(text.rstrip()) - 1 else "not valid JSON"
        raise InputError(
            f"{p}: {hint} (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "re-copy or re-record the file"
        ) from exc


def run_file_from_dict(raw: Any, *, source: str = "<memory>") -> RunFile:
    """Validate a decoded JSON document and build the typed :class:`RunFile`."""
    if not isinstance(raw, dict):
        raise InputError(f"{source}: not a perfdiff run file (top level is not a JSON object); "
                         "pass a run file written by 'perfdiff collect'")
    version_text = _plain_json(raw.get("schema_version"))
    if version_text is None:
        raise InputError(
            f"{source}: not a perfdiff run file (no 'schema_version') nor a torch.profiler "
            "trace (no 'traceEvents'); pass a run file (perfdiff collect or perfdiff import), "
            "a trace, or a LatencyPrism '*_perf_data' folder"
        )
    version = parse_version(version_text)
    if version is None:
        raise InputError(f"{source}: malformed schema_version {version_text!r} (expected "
                         "'M.N'); re-record it with 'perfdiff collect' or re-copy it")
    major = version[0]
    supported = ", ".join(f"{m}.x" for m in SUPPORTED_MAJORS)
    if major not in SUPPORTED_MAJORS and major not in MIGRATIONS:
        raise SchemaVersionError(
            f"{source}: schema version {version_text} is not supported (this perfdiff reads "
            f"{supported}); upgrade perfdiff or re-record the run with this version"
        )
    if major in MIGRATIONS and major not in SUPPORTED_MAJORS:
        raw = _plain_json(raw)  # migrations see plain JSON, never numeric_json's arrays
    while major in MIGRATIONS and major not in SUPPORTED_MAJORS:
        raw = MIGRATIONS[major](raw)
        major += 1
    try:
        run_file = _build_run_file(raw)
    except _Malformed as exc:
        raise InputError(f"{source}: malformed run file: {exc}; the file was damaged or not "
                         "written by perfdiff: re-copy it or re-record the run") from None
    check_run_file(run_file, source)
    return run_file


def _get(d: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(d, Mapping):
        raise _Malformed(f"{where} is not an object")
    if key not in d:
        raise _Malformed(f"missing field '{where}.{key}'")
    return d[key]


def _plain_json(value: Any) -> Any:
    """``value`` with every :class:`numeric_json.NumberArray` turned back into its list.

    Why: the fast reader keeps long number arrays as text until a column asks for them; any
    other consumer must see exactly what ``json.loads`` would have given.
    """
    if isinstance(value, numeric_json.NumberArray):
        return value.as_list()
    if isinstance(value, dict):
        return {key: _plain_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_json(item) for item in value]
    return value


def _typed(value: Any, kind: type[T], where: str, *, optional: bool = False) -> T:
    value = _plain_json(value) if kind is not list else _shallow_plain(value)
    if value is None and optional:
        return value  # type: ignore[return-value]
    ok = isinstance(value, kind)
    if kind is int and isinstance(value, bool):
        ok = False
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # type: ignore[return-value]
    if not ok:
        raise _Malformed(f"field '{where}' should be {kind.__name__}, got {type(value).__name__}")
    return value  # type: ignore[no-any-return]


def _shallow_plain(value: Any) -> Any:
    """A NumberArray as its list; other values as they are (their items are checked later)."""
    return value.as_list() if isinstance(value, numeric_json.NumberArray) else value


def _int_array(value: Any, where: str) -> np.ndarray[Any, np.dtype[np.int64]]:
    if isinstance(value, numeric_json.NumberArray):
        fast = value.int64()
        if fast is not None:
            return fast
        value = value.as_list()
    if not isinstance(value, list):
        raise _Malformed(f"field '{where}' should be a list of integers")
    try:
        arr = np.asarray(value, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise _Malformed(f"field '{where}' should hold only integers"
                         + _first_bad_row(value, np.int64)) from None
    if arr.ndim != 1:
        raise _Malformed(f"field '{where}' should be a flat list")
    return arr


def _first_bad_row(values: list[Any], dtype: type[np.generic]) -> str:
    """`` (row N holds X)`` for the first value numpy cannot take as ``dtype`` (the error path
    only: one conversion per value), so the line names the record, not only the column."""
    for row, item in enumerate(values):
        try:
            one = np.asarray([item], dtype=dtype).shape == (1,)  # a list in a cell: (1, n)
        except (TypeError, ValueError, OverflowError):
            one = False
        if not one:
            return f" (row {row} holds {repr(item)[:40]})"
    return ""


def _float_array(value: Any, where: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    if isinstance(value, numeric_json.NumberArray):
        return value.float64()
    if not isinstance(value, list):
        raise _Malformed(f"field '{where}' should be a list of numbers")
    try:
        # null encodes NaN (strict JSON has no NaN)
        arr = np.asarray([math.nan if v is None else v for v in value], dtype=np.float64)
    except (TypeError, ValueError):
        raise _Malformed(f"field '{where}' should hold only numbers or null"
                         + _first_bad_row([0.0 if v is None else v for v in value],
                                          np.float64)) from None
    if arr.ndim != 1:
        raise _Malformed(f"field '{where}' should be a flat list")
    return arr


def _bool_array(value: Any, where: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
    value = _shallow_plain(value)
    if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
        raise _Malformed(f"field '{where}' should be a list of true/false")
    return np.asarray(value, dtype=np.bool_)


def _str_tuple(value: Any, where: str) -> tuple[str, ...]:
    value = _shallow_plain(value)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Malformed(f"field '{where}' should be a list of strings")
    return tuple(value)


def _columns(d: Any, cls: type[T], where: str) -> T:
    """Build a columnar table dataclass; every column must have the same length."""
    kwargs: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        col_where = f"{where}.{f.name}"
        if f.type == "IntArray | None":  # an optional column (a later minor version added it)
            if not isinstance(d, Mapping):
                raise _Malformed(f"{where} is not an object")
            value = d.get(f.name)
            if value is not None:
                kwargs[f.name] = _int_array(value, col_where)
            continue
        value = _get(d, f.name, where)
        if f.type == "IntArray":
            kwargs[f.name] = _int_array(value, col_where)
        elif f.type == "FloatArray":
            kwargs[f.name] = _float_array(value, col_where)
        elif f.type == "BoolArray":
            kwargs[f.name] = _bool_array(value, col_where)
        else:
            kwargs[f.name] = _str_tuple(value, col_where)
    lengths = {name: len(col) for name, col in kwargs.items()}
    if len(set(lengths.values())) > 1:
        raise _Malformed(f"columns of '{where}' have different lengths: {lengths}")
    return cls(**kwargs)


def _build_run_file(raw: dict[str, Any]) -> RunFile:
    status_d = _get(raw, "status", "")
    state = _typed(_get(status_d, "state", "status"), str, "status.state")
    if state not in ("complete", "incomplete"):
        raise _Malformed(
            f"field 'status.state' should be 'complete' or 'incomplete', got {state!r}"
        )
    status = Status(
        state=state,  # type: ignore[arg-type]
        reason=_typed(status_d.get("reason"), str, "status.reason", optional=True),
    )
    env_d = _get(raw, "environment", "")
    devices = tuple(
        _build_device(d, f"environment.devices[{i}]")
        for i, d in enumerate(_typed(_get(env_d, "devices", "environment"), list, "devices"))
    )
    env = Environment(
        host=_typed(_get(env_d, "host", "environment"), str, "environment.host"),
        driver_version=_opt_str(env_d, "driver_version", "environment"),
        cuda_version=_opt_str(env_d, "cuda_version", "environment"),
        cupti_version=_opt_str(env_d, "cupti_version", "environment"),
        torch_version=_opt_str(env_d, "torch_version", "environment"),
        python_version=_typed(
            _get(env_d, "python_version", "environment"), str, "environment.python_version"
        ),
        devices=devices,
    )
    coll_d = _get(raw, "collection", "")
    collection = Collection(
        metrics=_str_tuple(_get(coll_d, "metrics", "collection"), "collection.metrics"),
        sample_interval_ns=_typed(
            _get(coll_d, "sample_interval_ns", "collection"), int, "collection.sample_interval_ns"
        ),
        sources=_str_tuple(_get(coll_d, "sources", "collection"), "collection.sources"),
        warnings=_str_tuple(coll_d.get("warnings", []), "collection.warnings"),
    )
    wl_d = _get(raw, "workload", "")
    workload = Workload(
        name=_typed(_get(wl_d, "name", "workload"), str, "workload.name"),
        params=_typed(wl_d.get("params", {}), dict, "workload.params"),
        command=_str_tuple(wl_d.get("command", []), "workload.command"),
    )
    strings_d = _get(raw, "strings", "")
    mangled = _str_tuple(_get(strings_d, "mangled", "strings"), "strings.mangled")
    demangled = _str_tuple(_get(strings_d, "demangled", "strings"), "strings.demangled")
    if len(mangled) != len(demangled):
        raise _Malformed("strings.mangled and strings.demangled have different lengths")
    strings = tuple(KernelName(m, d) for m, d in zip(mangled, demangled, strict=True))
    runs_raw = _typed(_get(raw, "runs", ""), list, "runs")
    ops = _str_tuple(raw.get("ops", []), "ops")
    runs = tuple(_build_run(r, f"runs[{i}]", len(strings), len(ops))
                 for i, r in enumerate(runs_raw))
    created = raw.get("created_unix_s")
    return RunFile(
        schema_version=str(raw["schema_version"]),
        tool_version=_typed(_get(raw, "tool_version", ""), str, "tool_version"),
        status=status,
        environment=env,
        collection=collection,
        workload=workload,
        strings=strings,
        runs=runs,
        created_unix_s=_typed(created, float, "created_unix_s", optional=True),
        ops=ops,
    )


def _opt_str(d: Mapping[str, Any], key: str, where: str) -> str | None:
    return _typed(d.get(key), str, f"{where}.{key}", optional=True)


def _opt_int(d: Mapping[str, Any], key: str, where: str) -> int | None:
    return _typed(d.get(key), int, f"{where}.{key}", optional=True)


def _build_device(d: Any, where: str) -> DeviceInfo:
    return DeviceInfo(
        index=_typed(_get(d, "index", where), int, f"{where}.index"),
        name=_typed(_get(d, "name", where), str, f"{where}.name"),
        uuid=_typed(_get(d, "uuid", where), str, f"{where}.uuid"),
        sm_count=_typed(_get(d, "sm_count", where), int, f"{where}.sm_count"),
        memory_bytes=_typed(_get(d, "memory_bytes", where), int, f"{where}.memory_bytes"),
        sm_clock_mhz=_opt_int(d, "sm_clock_mhz", where),
        mem_clock_mhz=_opt_int(d, "mem_clock_mhz", where),
        compute_capability=_opt_str(d, "compute_capability", where),
    )


def _build_run(r: Any, where: str, n_strings: int, n_ops: int) -> Run:
    kernels = _columns(_get(r, "kernels", where), KernelTable, f"{where}.kernels")
    if kernels.name_id.size and (kernels.name_id.min() < 0 or kernels.name_id.max() >= n_strings):
        raise _Malformed(f"'{where}.kernels.name_id' points outside the string table")
    for column in ("op_id", "module_id"):
        ids = getattr(kernels, column)
        if ids is not None and ids.size and (ids.min() < -1 or ids.max() >= n_ops):
            raise _Malformed(f"'{where}.kernels.{column}' points outside the ops table")
    metrics_raw = _typed(_get(r, "metrics", where), list, f"{where}.metrics")
    metrics = tuple(_build_metric(m, f"{where}.metrics[{i}]") for i, m in enumerate(metrics_raw))
    return Run(
        index=_typed(_get(r, "index", where), int, f"{where}.index"),
        pid=_typed(_get(r, "pid", where), int, f"{where}.pid"),
        rank=_opt_int(r, "rank", where),
        exit_code=_opt_int(r, "exit_code", where),
        cycles=_columns(_get(r, "cycles", where), CycleTable, f"{where}.cycles"),
        kernels=kernels,
        memcpy=_columns(_get(r, "memcpy", where), TransferTable, f"{where}.memcpy"),
        memset=_columns(_get(r, "memset", where), TransferTable, f"{where}.memset"),
        metrics=metrics,
        dropped_records=_typed(r.get("dropped_records", 0), int, f"{where}.dropped_records"),
    )


def _build_metric(m: Any, where: str) -> MetricSeries:
    source = _typed(_get(m, "source", where), str, f"{where}.source")
    if source not in ("pm_sampling", "nvml", "derived", "imported"):
        raise _Malformed(f"field '{where}.source' has unknown value {source!r}")
    ts = _int_array(_get(m, "timestamps_ns", where), f"{where}.timestamps_ns")
    values = _float_array(_get(m, "values", where), f"{where}.values")
    if ts.shape != values.shape:
        raise _Malformed(f"'{where}' has {ts.size} timestamps but {values.size} values")
    return MetricSeries(
        name=_typed(_get(m, "name", where), str, f"{where}.name"),
        unit=_typed(_get(m, "unit", where), str, f"{where}.unit"),
        source=source,  # type: ignore[arg-type]
        device=_typed(_get(m, "device", where), int, f"{where}.device"),
        timestamps_ns=ts,
        values=values,
        interval_ns=_opt_int(m, "interval_ns", where),
    )


# ----------------------------------------------------------------------------- writing


def run_file_to_dict(run_file: RunFile) -> dict[str, Any]:
    """The JSON document for a run file (NaN written as null)."""
    return {
        "schema_version": run_file.schema_version,
        "tool_version": run_file.tool_version,
        "created_unix_s": run_file.created_unix_s,
        "status": {"state": run_file.status.state, "reason": run_file.status.reason},
        "environment": {
            "host": run_file.environment.host,
            "driver_version": run_file.environment.driver_version,
            "cuda_version": run_file.environment.cuda_version,
            "cupti_version": run_file.environment.cupti_version,
            "torch_version": run_file.environment.torch_version,
            "python_version": run_file.environment.python_version,
            "devices": [_plain(d) for d in run_file.environment.devices],
        },
        "collection": _plain(run_file.collection),
        "workload": _plain(run_file.workload),
        "strings": {
            "mangled": [s.mangled for s in run_file.strings],
            "demangled": [s.demangled for s in run_file.strings],
        },
        "runs": [_run_to_dict(r) for r in run_file.runs],
        **({"ops": list(run_file.ops)} if run_file.ops else {}),
    }


def _plain(obj: Any) -> dict[str, Any]:
    """A flat dataclass of JSON scalars/tuples/dicts -> dict (tuples become lists)."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def _column_list(value: Any) -> list[Any]:
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return [None if math.isnan(v) else v for v in value.tolist()]
        return list(value.tolist())
    return list(value)


def _table_to_dict(table: Any) -> dict[str, list[Any]]:
    """Every column as a list; an optional column that is None is left out (older readers and
    the format's own docs treat absent and unknown alike)."""
    return {f.name: _column_list(getattr(table, f.name)) for f in fields(table)
            if getattr(table, f.name) is not None}


def _run_to_dict(run: Run) -> dict[str, Any]:
    return {
        "index": run.index,
        "pid": run.pid,
        "rank": run.rank,
        "exit_code": run.exit_code,
        "dropped_records": run.dropped_records,
        "cycles": _table_to_dict(run.cycles),
        "kernels": _table_to_dict(run.kernels),
        "memcpy": _table_to_dict(run.memcpy),
        "memset": _table_to_dict(run.memset),
        "metrics": [
            {
                "name": m.name,
                "unit": m.unit,
                "source": m.source,
                "device": m.device,
                "interval_ns": m.interval_ns,
                "timestamps_ns": _column_list(m.timestamps_ns),
                "values": _column_list(m.values),
            }
            for m in run.metrics
        ],
    }


def save_run_file(run_file: RunFile, path: str | os.PathLike[str], *,
                  inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """Write through :func:`perfdiff.output.write_atomic` (atomic, never over one of
    ``inputs``, one-line :class:`perfdiff.errors.OutputError`). ``.gz`` suffix -> gzip."""
    target = Path(path)
    payload = json.dumps(run_file_to_dict(run_file), separators=(",", ":"), allow_nan=False)
    data = payload.encode("utf-8")
    if target.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    return write_atomic(target, data, inputs=inputs, what="the run file")


def empty_transfer_table() -> TransferTable:
    """A memcpy/memset table with no rows."""
    e = np.zeros(0, dtype=np.int64)
    return TransferTable(kind=(), bytes=e, device=e, stream=e, start_ns=e, end_ns=e, cycle=e)


__all__ = [
    "CURRENT_VERSION",
    "empty_transfer_table",
    "load_run_file",
    "read_run_file",
    "run_file_from_dict",
    "run_file_to_dict",
    "save_run_file",
]
