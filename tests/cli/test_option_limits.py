"""Every numeric option refuses NaN, infinity, negative and absurd values; every usage error is
one line (issue 25).

Why: ``bench --fail-on-regression 5 --noise-floor-pct nan`` exited 0 on a 33 % slowdown (the
CI gate silently off), ``--min-delta-us nan`` the same, ``compare --run-cv-pct 1e308`` exited
70, misspelt ``--baseline``/``--target`` were ignored, and 38 usage errors printed typer's
five-line box although the docs promise one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main

from perfdiff.cli.app import app
from perfdiff.cli.option_limits import OPTION_LIMITS, check_numeric_options
from perfdiff.errors import ExitCode, UsageError
from perfdiff.limits import MAX_INPUT_OPTION
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
RMSNORM = ROOT / "fixtures" / "rmsnorm-h100.json.gz"
GPT = ROOT / "fixtures" / "gpt-infer-normal.json.gz"
HOSTILE = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e308", "-5", "1e400"]


def _numeric_options() -> dict[str, set[str]]:
    """Every int or float option of every real command."""
    group = typer.main.get_command(app)
    found: dict[str, set[str]] = {}
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        for param in command.params:
            if param.param_type_name == "option" and param.bare_type() in ("int", "float",
                                                                            "int | None",
                                                                            "float | None"):
                found.setdefault(name, set()).add(param.opts[0])
    return found


def test_the_table_names_every_numeric_option_of_every_command() -> None:
    """The commands' own options, and the door's --max-input-gib on every command that reads
    inputs (perfdiff.cli.input_limit takes it out of the line before typer parses it)."""
    real = _numeric_options()
    table = {command: set(limits) - {MAX_INPUT_OPTION} for command, limits in
             OPTION_LIMITS.items()}
    assert {c: o for c, o in table.items() if o} == real
    readers = {c for c, limits in OPTION_LIMITS.items() if MAX_INPUT_OPTION in limits}
    assert readers == {"compare", "kernels", "bench", "ranks", "merge", "import"}


@pytest.mark.parametrize(("command", "option"),
                         [(c, o) for c, limits in sorted(OPTION_LIMITS.items())
                          for o in sorted(limits)])
def test_hostile_values_are_usage_errors(command: str, option: str) -> None:
    for value in HOSTILE:
        if value == "-5" and OPTION_LIMITS[command][option].low < 0:
            continue
        for argv in ([command, "x", option, value], [command, "x", f"{option}={value}"]):
            with pytest.raises(UsageError, match=f"{option} .* is not a usable value"):
                check_numeric_options(argv)
    limit = OPTION_LIMITS[command][option]
    sane = next(v for v in ("1", "2", "0.5") if limit.allows(float(v)))  # --cost-target is > 1
    check_numeric_options([command, "x", option, sane])  # a sane value passes


def test_nan_noise_floor_cannot_switch_the_gate_off(run_cli: Runner) -> None:
    for option in ("--noise-floor-pct", "--min-delta-us", "--spread-factor"):
        code, _, err = run_cli("bench", str(GPT), str(GPT), "--fail-on-regression", "5",
                               option, "nan")
        assert code == ExitCode.USAGE, err
        assert len(err.strip().splitlines()) == 1 and option in err


def test_absurd_run_cv_is_a_usage_error_not_a_crash(run_cli: Runner) -> None:
    for value in ("1e308", "1" + "0" * 320):  # the second passes the fast door's digit rule
        code, _, err = run_cli("compare", str(GPT), str(GPT), "--run-cv-pct", value)
        assert code == ExitCode.USAGE and "--run-cv-pct" in err, err


@pytest.mark.skipif(not RMSNORM.exists(), reason=f"{RMSNORM} not found")
def test_misspelt_case_names_are_refused(run_cli: Runner) -> None:
    for option in ("--baseline", "--target"):
        code, _, err = run_cli("bench", str(RMSNORM), option, "trtion")
        assert code == ExitCode.USAGE and "'trtion' is not an implementation" in err, err
        assert "triton" in err  # says which there are
    code, _, err = run_cli("bench", str(GPT), "--baseline", "triton")
    assert code == ExitCode.USAGE and "applies to rmsnorm runs" in err
    code, out, err = run_cli("bench", str(RMSNORM), "--baseline", "torchscript")
    assert code == 0 and "cuda speedup vs torchscript" in out, err


@pytest.mark.parametrize("args", [
    ("compare", "a", "b", "--bogus"), ("kernels", "x", "--top", "-3"), ("merge", "x"),
    ("bogus-command",), ("compare",), ("bench", "x", "--measure", "nope"),
    ("kernels", "x", "--by", "nope"), ("compare", "a", "b", "--alpha", "2"),
    ("import", "x"), ("collect", "--contend", "abc"),
])
def test_usage_errors_are_one_line(run_cli: Runner, args: tuple[str, ...]) -> None:
    code, _, err = run_cli(*args)
    assert code == ExitCode.USAGE, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfdiff: error: "), err
    assert "--help" in lines[0] or "give" in lines[0]  # what to do


def test_error_lines_name_where_and_what_to_do(run_cli: Runner, tmp_path: Path) -> None:
    """A trace-event error names the event and a fix; a JSON that is neither a run file nor a
    trace is not told to "record one with perfdiff collect"; a newline in a path stays one
    line (issue 25)."""
    ints = tmp_path / "ints.json"
    ints.write_text('{"traceEvents": [{"ph": "X"}, 2]}')
    code, _, err = run_cli("kernels", str(ints))
    assert code == ExitCode.BAD_INPUT and "traceEvents[1]" in err and "re-export" in err, err
    other = tmp_path / "other.json"
    other.write_text('{"foo": 1}')
    code, _, err = run_cli("kernels", str(other))
    assert code == ExitCode.BAD_INPUT and "nor a torch.profiler trace" in err, err
    folder = tmp_path / "a\nb"
    folder.mkdir()
    for args in (("kernels", str(folder / "x.json")), ("compare", str(folder / "x"), "y")):
        code, _, err = run_cli(*args)
        assert code == ExitCode.BAD_INPUT and len(err.strip().splitlines()) == 1, err
        assert "a\\nb" in err
