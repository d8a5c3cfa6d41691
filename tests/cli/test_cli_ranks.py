"""``perfdiff ranks``: the command prints or writes the report, JSON carries every number."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from perfdiff.cli.app import app
from perfdiff.schema.io import save_run_file
from tests.rank_factories import make_job

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_markdown_names_the_straggler_first(tmp_path: Path) -> None:
    path = save_run_file(make_job(8, slower={6: {"gemm_kernel": 1.3}}), tmp_path / "job.json.gz")
    result = CliRunner().invoke(app, ["ranks", str(path)])
    assert result.exit_code == 0, result.output
    assert "**rank 6 is a straggler**" in result.output
    verdict = result.output.split("## Every rank")[0]
    assert "gemm\\_kernel" in verdict or "gemm_kernel" in verdict


def test_json_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "ranks.json"
    result = CliRunner().invoke(app, ["ranks", str(FIXTURES / "ddp-normal.json.gz"),
                                      "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    body = json.loads(out.read_text())
    assert body["format"] == "perfdiff.ranks"
    assert body["ranks_report"]["stragglers"] == []
    assert len(body["ranks_report"]["ranks"]) == 2


def test_one_process_is_an_input_error(tmp_path: Path) -> None:
    """The guard (cli/guard.py) turns it into one line and exit 3, as every InputError."""
    from perfdiff.errors import InputError
    from tests.factories import make_run_file

    path = save_run_file(make_run_file(), tmp_path / "one.json.gz")
    result = CliRunner().invoke(app, ["ranks", str(path)])
    assert isinstance(result.exception, InputError)
    assert "perfdiff compare" in str(result.exception)
