"""Sharded runs: what is written is what is read, and a damaged or half-written folder is
refused in one line (or is not a run at all), never read as something else."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perfdiff.errors import InputError, OutputError
from perfdiff.schema.io import load_run_file
from perfdiff.schema.shards import (
    MANIFEST,
    is_sharded_run,
    load_shard,
    read_manifest,
    skeleton_run_file,
    write_shards,
)
from tests.rank_factories import make_job

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _same_run(a: object, b: object) -> None:
    for name in a.__dataclass_fields__:  # type: ignore[attr-defined]
        x, y = getattr(a, name), getattr(b, name)
        if hasattr(x, "__dataclass_fields__"):
            _same_run(x, y)
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        elif isinstance(x, tuple) and x and hasattr(x[0], "__dataclass_fields__"):
            for u, v in zip(x, y, strict=True):
                _same_run(u, v)
        else:
            assert x == y, name


def test_every_run_of_a_real_recording_comes_back_as_it_was(tmp_path: Path) -> None:
    run_file = load_run_file(FIXTURES / "ddp-contended-gpu1.json.gz")
    folder = write_shards(run_file, tmp_path / "job")
    sharded = read_manifest(folder)
    assert [e.rank for e in sharded.entries] == [0, 1]
    assert sharded.launches == sum(r.kernels.name_id.shape[0] for r in run_file.runs)
    for entry, run in zip(sharded.entries, run_file.runs, strict=True):
        one = load_shard(sharded, entry)
        assert one.strings == run_file.strings and one.environment == run_file.environment
        _same_run(one.runs[0], run)  # kernels, cycles, copies, PM and NVML samples
    skeleton = skeleton_run_file(sharded)
    assert [r.pid for r in skeleton.runs] == [r.pid for r in run_file.runs]
    assert all(r.kernels.name_id.shape[0] == 0 for r in skeleton.runs)


def test_a_folder_without_its_manifest_is_not_a_run(tmp_path: Path) -> None:
    """The manifest is written last: a write interrupted before it leaves no run behind."""
    folder = write_shards(make_job(2), tmp_path / "job")
    assert is_sharded_run(folder)
    (folder / MANIFEST).unlink()
    assert not is_sharded_run(folder)


def test_a_truncated_shard_is_one_line_naming_it(tmp_path: Path) -> None:
    folder = write_shards(make_job(2), tmp_path / "job")
    shard = folder / "run-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:-200])
    sharded = read_manifest(folder)
    with pytest.raises(InputError, match=r"run-00001\.parquet: cannot read the shard") as err:
        load_shard(sharded, sharded.entries[1])
    assert "\n" not in str(err.value)


def test_a_shard_swapped_for_another_is_refused(tmp_path: Path) -> None:
    folder = write_shards(make_job(2), tmp_path / "job")
    first, second = folder / "run-00000.parquet", folder / "run-00001.parquet"
    data = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(data)
    sharded = read_manifest(folder)
    with pytest.raises(InputError, match="the manifest says otherwise"):
        load_shard(sharded, sharded.entries[0])


def test_a_manifest_that_lies_about_launches_is_refused(tmp_path: Path) -> None:
    folder = write_shards(make_job(2), tmp_path / "job")
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["shards"][0]["launches"] += 1
    (folder / MANIFEST).write_text(json.dumps(manifest))
    sharded = read_manifest(folder)
    with pytest.raises(InputError, match="truncated or was replaced"):
        load_shard(sharded, sharded.entries[0])


@pytest.mark.parametrize("manifest", ['{"format": "other"}', "not json",
                                      '{"format": "perfdiff.shards", "version": "9.0"}',
                                      '{"format": "perfdiff.shards", "version": "1.0", '
                                      '"shards": [{"file": "../x.parquet", "run_index": 0, '
                                      '"pid": 1, "rank": 0, "launches": 0}]}'])
def test_a_bad_manifest_is_one_line(tmp_path: Path, manifest: str) -> None:
    (tmp_path / MANIFEST).write_text(manifest)
    with pytest.raises(InputError) as err:
        read_manifest(tmp_path)
    assert "\n" not in str(err.value)


def test_writing_over_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "job"
    target.write_text("a report")
    with pytest.raises(OutputError, match="not a folder"):
        write_shards(make_job(2), target)
    assert target.read_text() == "a report"


def test_writing_into_a_folder_that_holds_something_is_refused(tmp_path: Path) -> None:
    """Shards replaced one by one would mix two runs if the write stopped half-way."""
    folder = write_shards(make_job(2, seed=1), tmp_path / "job")
    before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())
    with pytest.raises(OutputError, match="is not empty"):
        write_shards(make_job(3, seed=2), folder)
    assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before
