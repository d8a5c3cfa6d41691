"""Run-file reader/writer: round trips, the version gate, and one-line errors on bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.errors import InputError, SchemaVersionError
from perfdiff.schema import (
    CURRENT_VERSION,
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
    Workload,
    empty_transfer_table,
    load_run_file,
    run_file_from_dict,
    run_file_to_dict,
    save_run_file,
)


def _ints(values: list[int]) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.asarray(values, dtype=np.int64)


def tiny_run_file(names: tuple[str, ...] = ("k0", "k1"), mu: float = 50.0) -> RunFile:
    """Two cycles, two kernels each, one metric series: the smallest file that has every table."""
    n = 4
    kernels = KernelTable(
        name_id=_ints([0, 1, 0, 1]),
        device=_ints([0] * n),
        stream=_ints([7] * n),
        start_ns=_ints([100, 300, 1100, 1300]),
        end_ns=_ints([200, 500, 1200, 1500]),
        cycle=_ints([0, 0, 1, 1]),
        correlation_id=_ints([1, 2, 3, 4]),
        grid_x=_ints([1] * n),
        grid_y=_ints([1] * n),
        grid_z=_ints([1] * n),
        block_x=_ints([128] * n),
        block_y=_ints([1] * n),
        block_z=_ints([1] * n),
    )
    cycles = CycleTable(
        index=_ints([0, 1]),
        start_ns=_ints([0, 1000]),
        end_ns=_ints([1000, 2000]),
        label=("step", "step"),
        warmup=np.asarray([False, False]),
    )
    series = MetricSeries(
        name="tensor",
        unit="pct",
        source="pm_sampling",
        device=0,
        timestamps_ns=_ints([500, 1000, 1500]),
        values=np.asarray([mu, float("nan"), 10.0]),
        interval_ns=500,
    )
    run = Run(
        index=0,
        pid=42,
        rank=None,
        exit_code=0,
        cycles=cycles,
        kernels=kernels,
        memcpy=empty_transfer_table(),
        memset=empty_transfer_table(),
        metrics=(series,),
        dropped_records=0,
    )
    return RunFile(
        schema_version=CURRENT_VERSION,
        tool_version="0.1.0",
        status=Status("complete"),
        environment=Environment(
            host="h",
            driver_version="580.1",
            cuda_version="13.0",
            cupti_version=None,
            torch_version=None,
            python_version="3.12.3",
            devices=(DeviceInfo(0, "NVIDIA H100 80GB HBM3", "GPU-x", 132, 80 << 30),),
        ),
        collection=Collection(
            metrics=("tensor",), sample_interval_ns=500, sources=("pm_sampling",)
        ),
        workload=Workload(name="gpt-infer", params={"layers": 2}),
        strings=tuple(KernelName(f"_Z{i}{n}", n) for i, n in enumerate(names)),
        runs=(run,),
    )


def _assert_same(a: RunFile, b: RunFile) -> None:
    assert json.dumps(run_file_to_dict(a)) == json.dumps(run_file_to_dict(b))


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    original = tiny_run_file()
    path = save_run_file(original, tmp_path / f"run{suffix}")
    loaded = load_run_file(path)
    _assert_same(original, loaded)
    assert np.isnan(loaded.runs[0].metrics[0].values[1])  # NaN survives as null
    assert not list(tmp_path.glob(".*tmp"))  # atomic write leaves no temp file


def test_written_json_is_strict(tmp_path: Path) -> None:
    path = save_run_file(tiny_run_file(), tmp_path / "run.json")
    text = path.read_text()
    assert "NaN" not in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict constant {c}"))


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_run_file(tmp_path / "nope.json")
    assert "no such file" in _one_line(err.value)


def test_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="folder"):
        load_run_file(tmp_path)


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty"):
        load_run_file(_write(tmp_path, "e.json", b""))


def test_not_json(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_run_file(_write(tmp_path, "x.json", b"hello, world"))
    assert "not valid JSON" in _one_line(err.value)


def test_binary_garbage(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not UTF-8"):
        load_run_file(_write(tmp_path, "x.json", b"\xff\xfe\x00garbage"))


def test_truncated_json(tmp_path: Path) -> None:
    full = json.dumps(run_file_to_dict(tiny_run_file())).encode()
    with pytest.raises(InputError) as err:
        load_run_file(_write(tmp_path, "t.json", full[: len(full) // 2]))
    assert "truncated" in _one_line(err.value)


def test_truncated_gzip(tmp_path: Path) -> None:
    full = gzip.compress(json.dumps(run_file_to_dict(tiny_run_file())).encode())
    with pytest.raises(InputError) as err:
        load_run_file(_write(tmp_path, "t.json.gz", full[: len(full) // 2]))
    assert "gzip" in _one_line(err.value)


def test_unknown_major_is_refused_with_guidance(tmp_path: Path) -> None:
    doc = run_file_to_dict(tiny_run_file())
    doc["schema_version"] = "9.0"
    p = _write(tmp_path, "v9.json", json.dumps(doc).encode())
    with pytest.raises(SchemaVersionError) as err:
        load_run_file(p)
    msg = _one_line(err.value)
    assert str(p) in msg and "9.0" in msg and "1.x" in msg and "upgrade" in msg


def test_newer_minor_is_accepted() -> None:
    doc = run_file_to_dict(tiny_run_file())
    doc["schema_version"] = "1.7"
    doc["some_future_optional_field"] = {"x": 1}
    assert run_file_from_dict(doc).runs[0].pid == 42


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("status",), "missing field '.status'"),
        (("environment", "devices"), "missing field 'environment.devices'"),
        (("runs", 0, "kernels", "end_ns"), "missing field 'runs[0].kernels.end_ns'"),
        (("runs", 0, "metrics", 0, "values"), "missing field 'runs[0].metrics[0].values'"),
    ],
)
def test_missing_fields_are_named(path: tuple[Any, ...], expected: str) -> None:
    doc = run_file_to_dict(tiny_run_file())
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    with pytest.raises(InputError) as err:
        run_file_from_dict(doc, source="f.json")
    assert expected in _one_line(err.value)


def test_ragged_columns_are_refused() -> None:
    doc = run_file_to_dict(tiny_run_file())
    doc["runs"][0]["kernels"]["start_ns"].append(5)
    with pytest.raises(InputError, match="different lengths"):
        run_file_from_dict(doc)


def test_name_id_out_of_range_is_refused() -> None:
    doc = run_file_to_dict(tiny_run_file())
    doc["runs"][0]["kernels"]["name_id"][0] = 99
    with pytest.raises(InputError, match="string table"):
        run_file_from_dict(doc)


def test_wrong_types_are_refused() -> None:
    doc = run_file_to_dict(tiny_run_file())
    doc["runs"][0]["pid"] = "42"
    with pytest.raises(InputError, match=r"runs\[0\]\.pid"):
        run_file_from_dict(doc)


def test_top_level_not_object() -> None:
    with pytest.raises(InputError, match="not a JSON object"):
        run_file_from_dict([1, 2, 3])


names = st.text(min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    a=names,
    b=names,
    # any reading the metric (a percentage) can have: perfdiff.schema.sense refuses a pct
    # outside 0-105 (issue 25) and any reading of size >= 1e15
    mu=st.floats(min_value=0.0, max_value=105.0, width=64) | st.just(float("nan")),
)
def test_round_trip_any_names_and_values(a: str, b: str, mu: float) -> None:
    original = tiny_run_file(names=(a, b), mu=mu)
    loaded = run_file_from_dict(json.loads(json.dumps(run_file_to_dict(original))))
    assert [s.demangled for s in loaded.strings] == [a, b]
    got = loaded.runs[0].metrics[0].values[0]
    assert (np.isnan(got) and np.isnan(mu)) or got == mu


@settings(max_examples=80, deadline=None)
@given(
    doc=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_arbitrary_json_never_crashes(doc: Any) -> None:
    """Any JSON value is either a run file or one InputError, never another exception."""
    try:
        run_file_from_dict(doc)
    except InputError as exc:
        _one_line(exc)


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=0, max_value=10_000), flip=st.integers(0, 255))
def test_damaged_documents_give_one_line(cut: int, flip: int) -> None:
    doc = run_file_to_dict(tiny_run_file())
    text = json.dumps(doc)
    cut = cut % len(text)
    damaged = text[:cut] + chr(32 + flip % 90) + text[cut + 1 :]
    try:
        run_file_from_dict(json.loads(damaged))
    except json.JSONDecodeError:
        pass  # the file reader turns this into InputError (tested above)
    except InputError as exc:
        _one_line(exc)
