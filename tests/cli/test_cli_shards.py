"""Sharded runs through the commands: merge/import write them, compare, ranks, kernels and
merge read them, and the answers are those of the same run as one file."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from perfdiff.cli.app import app
from perfdiff.errors import InputError
from perfdiff.schema.io import load_run_file
from perfdiff.schema.shards import is_sharded_run, read_manifest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KINETO = FIXTURES / "kineto" / "kineto-gpt-normal.pt.trace.json.gz"


def _ok(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_merge_writes_shards_that_every_command_reads(tmp_path: Path) -> None:
    normal, abnormal = FIXTURES / "ddp-normal.json.gz", FIXTURES / "ddp-contended-gpu1.json.gz"
    shards = tmp_path / "abnormal"
    _ok(["merge", "--shards", "-o", str(shards), str(abnormal)])
    assert is_sharded_run(shards) and len(read_manifest(shards).entries) == 2
    single = tmp_path / "single.json.gz"
    _ok(["merge", "-o", str(single), str(abnormal)])
    # compare: the same report as the merged single file (names of the inputs aside)
    from_shards = _ok(["compare", str(normal), str(shards), "--format", "json"])
    from_file = _ok(["compare", str(normal), str(single), "--format", "json"])
    assert from_shards.replace(str(shards), str(single)) == from_file
    assert "**rank 1 is a straggler**" in _ok(["ranks", str(shards)])
    assert _ok(["kernels", str(shards), "--by", "name"]) == _ok(["kernels", str(single),
                                                                "--by", "name"])
    # merge reads shards back into one file, run for run
    back = tmp_path / "back.json.gz"
    _ok(["merge", "-o", str(back), str(shards)])
    assert [r.pid for r in load_run_file(back).runs] == [r.pid for r in
                                                         load_run_file(single).runs]


def test_import_writes_shards(tmp_path: Path) -> None:
    out = tmp_path / "gpt"
    _ok(["import", "--shards", "-o", str(out), str(KINETO)])
    single = tmp_path / "gpt.json.gz"
    _ok(["import", "-o", str(single), str(KINETO)])
    assert _ok(["kernels", str(out), "--by", "name"]) == _ok(["kernels", str(single),
                                                             "--by", "name"])


def test_compare_by_op_of_shards_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "gpt"
    _ok(["import", "--shards", "-o", str(out), str(KINETO)])
    result = CliRunner().invoke(app, ["compare", str(out), str(out), "--by", "op"])
    # CliRunner leaves the error to the caller; perfdiff's main maps InputError to exit 3
    assert isinstance(result.exception, InputError)
    assert "sharded runs are compared by kernel only" in str(result.exception)
