"""Schema 1.1's optional cycle columns ``mark_start_ns`` / ``mark_end_ns``: round trips, old
files, bad values.

Why: the columns are additive (a minor version): a 1.0 file must load unchanged with no
columns, a 1.1 file must keep them exactly (both readers: the fast numeric path and plain
JSON), and a malformed column must be one clear line like every other.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.errors import InputError
from perfdiff.schema import (
    CURRENT_VERSION,
    load_run_file,
    run_file_from_dict,
    run_file_to_dict,
    save_run_file,
)
from perfdiff.schema.versions import parse_version
from tests.schema.test_schema_io import tiny_run_file


def _marked(start: list[int], end: list[int]):  # type: ignore[no-untyped-def]
    rf = tiny_run_file()
    run = rf.runs[0]
    cycles = replace(run.cycles, mark_start_ns=np.asarray(start, dtype=np.int64),
                     mark_end_ns=np.asarray(end, dtype=np.int64))
    return replace(rf, runs=(replace(run, cycles=cycles),))


def test_current_version_is_at_least_the_minor_that_added_the_columns() -> None:
    assert parse_version(CURRENT_VERSION) >= (1, 1)  # type: ignore[operator]


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_return_column_round_trips_and_is_absent_when_none(tmp_path: Path, suffix: str) -> None:
    """Schema 1.2's ``return_ns``: kept exactly where written, absent (None) where not."""
    rf = tiny_run_file()
    run = rf.runs[0]
    returns = np.asarray([-1] * (run.cycles.index.size - 1) + [987], dtype=np.int64)
    marked = replace(rf, runs=(replace(run, cycles=replace(run.cycles, return_ns=returns)),))
    loaded = load_run_file(save_run_file(marked, tmp_path / f"run{suffix}")).runs[0].cycles
    assert loaded.return_ns is not None and loaded.return_ns.tolist() == returns.tolist()
    plain = load_run_file(save_run_file(rf, tmp_path / f"plain{suffix}")).runs[0].cycles
    assert plain.return_ns is None


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_mark_columns_round_trip(tmp_path: Path, suffix: str) -> None:
    original = _marked([10, 1010], [990, -1])
    loaded = load_run_file(save_run_file(original, tmp_path / f"run{suffix}"))
    cycles = loaded.runs[0].cycles
    assert cycles.mark_start_ns is not None and cycles.mark_end_ns is not None
    assert cycles.mark_start_ns.tolist() == [10, 1010]
    assert cycles.mark_end_ns.tolist() == [990, -1]  # -1: unknown, kept as written
    assert json.dumps(run_file_to_dict(loaded)) == json.dumps(run_file_to_dict(original))


def test_file_without_marks_writes_no_columns_and_reads_back_none(tmp_path: Path) -> None:
    path = save_run_file(tiny_run_file(), tmp_path / "run.json")
    cycles_json = json.loads(path.read_text())["runs"][0]["cycles"]
    assert "mark_start_ns" not in cycles_json and "mark_end_ns" not in cycles_json
    loaded = load_run_file(path).runs[0].cycles
    assert loaded.mark_start_ns is None and loaded.mark_end_ns is None


def test_a_1_0_file_loads_unchanged(tmp_path: Path) -> None:
    doc = run_file_to_dict(tiny_run_file())
    doc["schema_version"] = "1.0"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    loaded = load_run_file(path)
    assert loaded.schema_version == "1.0"
    assert loaded.runs[0].cycles.mark_end_ns is None
    assert loaded.runs[0].cycles.start_ns.tolist() == [0, 1000]


def test_explicit_null_column_reads_as_absent() -> None:
    doc = run_file_to_dict(tiny_run_file())
    doc["runs"][0]["cycles"]["mark_end_ns"] = None
    assert run_file_from_dict(doc).runs[0].cycles.mark_end_ns is None


@pytest.mark.parametrize(("value", "message"), [
    ([1], "columns of 'runs[0].cycles' have different lengths"),
    (["a", 2], "'runs[0].cycles.mark_end_ns' should hold only integers"),
    ("x", "'runs[0].cycles.mark_end_ns' should be a list of integers"),
])
def test_bad_mark_column_is_one_line(tmp_path: Path, value: object, message: str) -> None:
    doc = run_file_to_dict(tiny_run_file())
    doc["runs"][0]["cycles"]["mark_end_ns"] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc, separators=(",", ":")))  # the fast reader's form
    with pytest.raises(InputError) as err:
        load_run_file(path)
    text = str(err.value)
    assert "\n" not in text and message in text and str(path) in text


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-1, 2**62), min_size=2, max_size=2),
       st.lists(st.integers(-1, 2**62), min_size=2, max_size=2))
def test_any_int64_mark_times_survive_the_fast_and_plain_readers(
        start: list[int], end: list[int]) -> None:
    doc = run_file_to_dict(_marked(start, end))
    via_plain = run_file_from_dict(json.loads(json.dumps(doc))).runs[0].cycles
    assert via_plain.mark_start_ns is not None and via_plain.mark_end_ns is not None
    assert via_plain.mark_start_ns.tolist() == start and via_plain.mark_end_ns.tolist() == end
