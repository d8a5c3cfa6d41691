"""The console script's fast door for ``compare`` (no typer) agrees with the typer command.

Why: a plain ``compare`` line skips typer and pydantic (0.1 s and 12 MiB a run,
``perfdiff/cli/compare_run.py``); that is only sound if the fast parser reads every line it
accepts exactly as the typer command does, and leaves every other line to typer. Also: the
compare path of a trace or run file imports neither typer, pydantic, rich nor torch, and reads
its inputs before it imports pandas and scipy (the reader's peak memory, bench/README.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
import typing
from dataclasses import fields
from pathlib import Path

import pytest
import typer

from perfdiff.cli.app import app
from perfdiff.cli.compare_run import (
    OPTIONS,
    CompareArgs,
    Grouping,
    ReportFormat,
    parse_compare_args,
)
from perfdiff.schema import save_run_file
from tests.factories import make_run_file

KINDS = {bool: "flag", int: "int", float: "float", str: "str", Path: "path",
         ReportFormat: "format", Grouping: "grouping"}
REPO = Path(__file__).resolve().parents[2]
TRACE_NORMAL = REPO / "fixtures" / "kineto" / "kineto-gpt-normal.pt.trace.json.gz"
TRACE_ABNORMAL = REPO / "fixtures" / "kineto" / "kineto-gpt-abnormal.pt.trace.json.gz"


def _compare_params() -> list[typing.Any]:
    return list(typer.main.get_command(app).commands["compare"].params)  # type: ignore[attr-defined]


def _bare(annotation: typing.Any) -> typing.Any:
    """``X | None`` -> X."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        (inner,) = [a for a in typing.get_args(annotation) if a is not type(None)]
        return inner
    return annotation


def test_the_table_matches_the_typer_command() -> None:
    """Names, kinds, bounds and defaults of every option, both ways."""
    defaults = {f.name: f.default for f in fields(CompareArgs)}
    seen = set()
    for param in _compare_params():
        if param.param_type_name == "argument":
            assert param.name in ("normal", "abnormal")
            continue
        kind = KINDS[_bare(param.type_descriptor.annotation)]
        for name in (*param.opts, *param.secondary_opts):
            spec = OPTIONS[name]
            seen.add(name)
            assert (spec.field, spec.kind) == (param.name, kind), name
            assert (spec.low, spec.high) == (param.min, param.max), name
        assert param.default == defaults[param.name], param.name
    assert seen == set(OPTIONS)


def _typer_args(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> CompareArgs | None:
    """What the typer command hands to run_compare for ``argv`` (None: it refused the line)."""
    import perfdiff.cli.compare as command

    got: list[CompareArgs] = []
    monkeypatch.setattr(command, "run_compare", lambda args, checked=None: got.append(args) or 0)
    try:
        app(args=argv, standalone_mode=False)
    except Exception:  # click's usage errors: the line is refused
        return None
    return got[0] if got else None


LINES = [
    ["compare", "a.json", "b.json"],
    ["compare", "a.json", "b.json", "--format", "json", "-o", "r.json"],
    ["compare", "--format=html", "a", "b", "--output=r.html", "--force"],
    ["compare", "a", "--top", "0", "b", "--rows", "12", "--alpha", "0.1", "--threshold", "2.5"],
    ["compare", "a", "b", "--run-cv-pct", "3", "--fail-on-regression", "0.5"],
    ["compare", "a", "b", "--alpha", "1", "--alpha=0"],  # twice: left to typer
    ["compare", "a", "b", "--seed-compatible", "--label-normal", "N", "--label-abnormal", ""],
    ["compare", "a", "b", "--cycle-range", "train step", "--plots=", "-o", "out/r.md"],
    ["compare", "a", "b", "--plots", "figs", "--by", "module"],
    ["compare", "--", "a", "b"],
    # left to typer (the fast parser must say None; typer refuses or reads them its way)
    ["compare", "a", "b", "--top", "-1"],
    ["compare", "a", "b", "--alpha", "2"],
    ["compare", "a", "b", "--alpha", "1e-2"],
    ["compare", "a", "b", "--top", "03"],
    ["compare", "a", "b", "--format", "JSON"],
    ["compare", "a", "b", "--force=yes"],
    ["compare", "a", "b", "-o=r.md"],
    ["compare", "a", "b", "-or.md"],
    ["compare", "a", "b", "--help"],
    ["compare", "a"],
    ["compare", "a", "b", "c"],
    ["compare", "a", "b", "--tp", "3"],
    ["compare", "a", "b", "-o"],
    ["compare", "a", "b", "--by", "ops"],
]


@pytest.mark.parametrize("argv", LINES, ids=[" ".join(line[1:]) for line in LINES])
def test_a_line_the_fast_parser_accepts_reads_as_in_typer(
        argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fast = parse_compare_args(argv[1:])
    if fast is None:
        return  # typer's own business
    assert fast == _typer_args(argv, monkeypatch)


def test_the_fast_parser_accepts_the_usual_lines() -> None:
    accepted = [line for line in LINES[:10] if parse_compare_args(line[1:]) is not None]
    assert len(accepted) == 9  # all but the option given twice
    assert all(parse_compare_args(line[1:]) is None for line in LINES[10:])


def _run(door: str, args: list[str], cwd: Path) -> tuple[int, str, str, list[str]]:
    """Run ``perfdiff ARGS`` through ``door`` (``entry``: the console script; ``app``: typer)
    in a child process; exit code, stdout, stderr and the modules it had imported."""
    probe = (  # the fast door leaves by os._exit (no atexit), the app by sys.exit
        "import atexit, json, os, sys\n"
        "def dump():\n"
        "    sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
        "    sys.stderr.flush()\n"
        "atexit.register(dump)\n"
        "leave = os._exit\n"
        "os._exit = lambda code: (dump(), leave(code))\n"
        f"sys.argv = ['perfdiff', *{args!r}]\n"
        f"from perfdiff.cli.{door} import main\nmain()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=cwd, timeout=300)
    err_lines = done.stderr.splitlines()
    modules = json.loads(err_lines[-1].removeprefix("MODULES "))
    return done.returncode, done.stdout, "\n".join(err_lines[:-1]), modules


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    d = tmp_path_factory.mktemp("doors")
    save_run_file(make_run_file(seed=1), d / "normal.json.gz")
    save_run_file(make_run_file(seed=2), d / "again.json.gz")
    save_run_file(make_run_file(seed=4, gpu_name="NVIDIA A100-SXM4-80GB"), d / "a100.json")
    return d, "normal.json.gz", "again.json.gz", "a100.json"


@pytest.mark.parametrize("extra", [
    ["--format", "json"],  # to stdout
    ["--top", "1", "--rows", "4"],  # markdown to stdout
    ["--fail-on-regression", "0"],  # the exit code of a regression (or none)
])
def test_both_doors_print_the_same(runs: tuple[Path, str, str, str],
                                   extra: list[str]) -> None:
    folder, normal, again, _ = runs
    fast = _run("entry", ["compare", normal, again, *extra], folder)
    slow = _run("app", ["compare", normal, again, *extra], folder)
    assert fast[:3] == slow[:3]
    assert "typer" not in fast[3] and "typer" in slow[3]


def test_both_doors_refuse_the_same(runs: tuple[Path, str, str, str]) -> None:
    folder, normal, _, a100 = runs
    fast = _run("entry", ["compare", normal, a100, "-o", "r.md"], folder)
    slow = _run("app", ["compare", normal, a100, "-o", "r.md"], folder)
    assert fast[:3] == slow[:3] and fast[0] == 4  # INCOMPARABLE, one line
    assert len(fast[2].splitlines()) == 1


HEAVY_NEVER = ("typer", "pydantic", "click", "rich", "torch", "matplotlib")


@pytest.mark.parametrize("pair", [
    (TRACE_NORMAL, TRACE_ABNORMAL),
    (REPO / "fixtures" / "gpt-infer-normal.json.gz",
     REPO / "fixtures" / "gpt-infer-contended.json.gz"),
], ids=["traces", "run files"])
def test_the_compare_path_imports_no_cli_framework_and_no_torch(
        tmp_path: Path, pair: tuple[Path, Path]) -> None:
    if not all(p.is_file() for p in pair):
        pytest.skip(f"{pair} missing")
    code, _, err, modules = _run("entry", ["compare", str(pair[0]), str(pair[1]),
                                           "--format", "json", "-o", "r.json"], tmp_path)
    assert code == 0, err
    loaded = sorted({m.split(".")[0] for m in modules} & set(HEAVY_NEVER))
    assert not loaded, loaded
    assert (tmp_path / "r.json").is_file()


@pytest.mark.parametrize(("path", "pandas_follows", "loaded"), [
    (TRACE_NORMAL, True, "[]"),
    (REPO / "fixtures" / "gpt-infer-normal.json.gz", False, "[]"),
    (REPO / "fixtures" / "gpt-infer-normal.json.gz", True, "['pandas']"),
], ids=["trace", "run file", "run file for compare"])
def test_inputs_are_read_before_pandas_and_scipy(path: Path, pandas_follows: bool,
                                                 loaded: str) -> None:
    """compare reads both inputs (a trace's whole text at once) before the statistics load
    pandas and scipy, so the reader's peak memory does not sit on theirs. A run file read
    for compare is the exception: pandas parses its float columns (schema/numeric_json.py),
    and the peak of compare is its cycle tables, not the reading (bench/README.md, issue 25);
    scipy still waits."""
    if not path.is_file():
        pytest.skip(f"{path} missing")
    from perfdiff.schema.numeric_json import _pandas_floats_exact

    if pandas_follows and not _pandas_floats_exact():
        loaded = "[]"
    probe = ("import sys\nfrom perfdiff.readers.dispatch import ReadOptions, open_input\n"
             f"open_input({str(path)!r}, ReadOptions(pandas_follows={pandas_follows}))\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'scipy'}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=300)
    assert done.stdout.strip() == loaded


def test_a_latencyprism_check_imports_no_pandas() -> None:
    probe = ("import sys\nfrom pathlib import Path\n"
             "from perfdiff.readers.latencyprism import is_latencyprism_folder\n"
             "is_latencyprism_folder(Path('.'))\nprint('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip() == "False"
