"""Options that commands share mean the same in each (perfdiff/cli/options.py).

``--fail-on-regression PCT`` is a percentage in compare and bench (bench names the case),
``--format markdown|json`` and ``-o`` exist wherever a command prints results, and ``--alpha``
outside [0, 1] is click's usage error (exit 2) in both commands that take it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfdiff.errors import ExitCode
from perfdiff.schema.io import save_run_file
from tests.bench_factories import BenchFileSpec, rmsnorm_cases
from tests.conftest import Runner
from tests.factories import make_run_file

PLANTED = "impl=cuda dtype=float32 direction=forward shape=4x2048x4096"


@pytest.fixture
def bench_pair(tmp_path: Path) -> tuple[str, str]:
    from tests.bench_factories import make_bench_file

    a = save_run_file(make_bench_file(BenchFileSpec(rmsnorm_cases(), seed=1, noise=0.005)),
                      tmp_path / "a.json.gz")
    b = save_run_file(make_bench_file(BenchFileSpec(rmsnorm_cases({PLANTED: 1.3}), seed=2,
                                                    noise=0.005)), tmp_path / "b.json.gz")
    return str(a), str(b)


@pytest.fixture
def run_file(tmp_path: Path) -> str:
    return str(save_run_file(make_run_file(seed=3), tmp_path / "r.json.gz"))


def test_bench_fail_on_regression_is_a_percentage_naming_the_case(
        run_cli: Runner, bench_pair: tuple[str, str]) -> None:
    code, _, err = run_cli("bench", *bench_pair, "--plain", "--fail-on-regression", "5")
    assert code == ExitCode.REGRESSION, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"perfdiff: regression: case '{PLANTED}' +")
    assert "(threshold 5.00%)" in line
    code, _, err = run_cli("bench", *bench_pair, "--plain", "--fail-on-regression", "50")
    assert code == 0, err  # a 30 % slowdown is not above 50 %


@pytest.mark.parametrize("command", ["compare", "bench"])
def test_alpha_out_of_range_is_usage_in_both(run_cli: Runner, bench_pair: tuple[str, str],
                                             command: str) -> None:
    code, _, err = run_cli(command, *bench_pair, "--alpha", "2")
    assert code == ExitCode.USAGE, err
    code, _, err = run_cli(command, *bench_pair, "--fail-on-regression", "-1")
    assert code == ExitCode.USAGE, err


def test_bench_json(run_cli: Runner, bench_pair: tuple[str, str], tmp_path: Path) -> None:
    code, out, err = run_cli("bench", *bench_pair, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "perfdiff.bench" and doc["version"] == "1.0"
    verdicts = {c["label"]: c["verdict"] for c in doc["bench"]["changes"]}
    assert verdicts[PLANTED] == "regressed"
    target = tmp_path / "bench.json"
    code, _, err = run_cli("bench", *bench_pair, "--format", "json", "-o", str(target))
    assert code == 0 and json.loads(target.read_text()) == doc


@pytest.mark.parametrize("by", ["launch", "name"])
def test_kernels_json_and_output_file(run_cli: Runner, run_file: str, tmp_path: Path,
                                      by: str) -> None:
    code, out, err = run_cli("kernels", run_file, "--by", by, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "perfdiff.kernels" and doc["by"] == by and doc["rows"]
    code, text, _ = run_cli("kernels", run_file, "--by", by)
    target = tmp_path / "k.txt"
    code, out, err = run_cli("kernels", run_file, "--by", by, "-o", str(target))
    assert code == 0 and out == "" and target.read_text() == text
    code, _, err = run_cli("kernels", run_file, "-o", run_file)
    assert code == ExitCode.BAD_INPUT and "is one of the inputs" in err
