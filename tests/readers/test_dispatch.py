"""The door (``readers.dispatch``): every command that reads an input decides what the path is
once and checks it once, whether the console script checked it first or not (issue 24).

Why count: the input was once checked four times (the console script, the command, the door,
the run-file loader) and the format decided in three places; a count per command is what keeps
a second check from coming back unnoticed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

import perfdiff.inputs
from perfdiff.errors import ExitCode, UsageError
from perfdiff.inputs import CheckedInputs
from perfdiff.readers import dispatch
from perfdiff.readers.dispatch import ReadOptions, import_inputs, load_input, open_input
from perfdiff.readers.steps import StepRange

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RMSNORM = FIXTURES / "rmsnorm-h100.json.gz"
RMSNORM_RERUN = FIXTURES / "rmsnorm-h100-rerun.json.gz"
DDP = FIXTURES / "ddp-normal.json.gz"
DECODE = FIXTURES / "kineto" / "foreign" / "sglang-decode.json.gz"
SAXPY = FIXTURES / "nsys" / "pipit-saxpy-mpi-cuda-rank0-nsys2022.2.sqlite"


def _count(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """(paths checked, paths whose kind was decided), recorded from now on in every module."""
    checked: list[str] = []
    decided: list[str] = []
    original_check, original_kind = perfdiff.inputs.require_input, dispatch.input_kind

    def check(path: Any, **kwargs: Any) -> Path:
        checked.append(os.fspath(path))
        return original_check(path, **kwargs)

    def kind(path: Path) -> dispatch.InputKind:
        decided.append(os.fspath(path))
        return original_kind(path)

    for module in list(sys.modules.values()):
        if getattr(module, "require_input", None) is original_check:
            monkeypatch.setattr(module, "require_input", check)
    monkeypatch.setattr(dispatch, "input_kind", kind)
    return checked, decided


def _commands(out: Path) -> list[tuple[list[str], list[Path]]]:
    """(command line, its inputs) for every command that reads inputs."""
    return [
        (["compare", str(RMSNORM), str(RMSNORM_RERUN), "-o", str(out / "r.md")],
         [RMSNORM, RMSNORM_RERUN]),
        (["compare", str(DECODE), str(DECODE), "--steps", "1:", "-o", str(out / "d.md")],
         [DECODE, DECODE]),
        (["kernels", str(DECODE), "--steps", "0:2", "-o", str(out / "k.txt")], [DECODE]),
        (["merge", str(RMSNORM), str(RMSNORM_RERUN), "-o", str(out / "m.json.gz")],
         [RMSNORM, RMSNORM_RERUN]),
        (["import", str(DECODE), "--steps", "1:", "-o", str(out / "i.json.gz")], [DECODE]),
        (["bench", str(RMSNORM), str(RMSNORM_RERUN), "-o", str(out / "b.md")],
         [RMSNORM, RMSNORM_RERUN]),
        (["ranks", str(DDP), "-o", str(out / "ranks.md")], [DDP]),
    ]


def _run(main: Callable[[], None], argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(sys, "argv", ["perfdiff", *argv])
    with pytest.raises(SystemExit) as exited:
        main()
    code = exited.value.code
    return code if isinstance(code, int) else 0


@pytest.mark.parametrize("door", ["app", "console script"])
@pytest.mark.parametrize("case", range(7), ids=["compare", "compare-trace", "kernels", "merge",
                                                "import", "bench", "ranks"])
def test_each_input_is_checked_once_and_its_kind_decided_once(
        case: int, door: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    argv, inputs = _commands(tmp_path)[case]
    if door == "app":
        from perfdiff.cli.app import main
    else:
        import perfdiff.cli.entry as entry
        from perfdiff.cli.compare_run import CompareArgs, run_compare
        from perfdiff.cli.guard import run_guarded

        def in_process(args: CompareArgs, checked: CheckedInputs) -> NoReturn:
            run_guarded(lambda: run_compare(args, checked))  # exits; os._exit would end pytest
            raise AssertionError("run_guarded returned")

        monkeypatch.setattr(entry, "_compare_process", in_process)
        main = entry.main
    checked, decided = _count(monkeypatch)
    code = _run(main, argv, monkeypatch)
    err = capsys.readouterr().err
    assert code in (ExitCode.OK, ExitCode.REGRESSION), err
    expected = sorted(os.fspath(p) for p in inputs)
    assert sorted(checked) == expected
    assert sorted(decided) == expected


def test_a_path_the_console_script_checked_is_not_checked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    checked, decided = _count(monkeypatch)
    open_input(DECODE, checked=CheckedInputs.of([DECODE]))
    assert checked == [] and decided == [os.fspath(DECODE)]
    open_input(DECODE)
    assert checked == [os.fspath(DECODE)]


def test_checked_paths_are_matched_as_the_commands_get_them() -> None:
    """typer hands a command ``Path("./a.json")``, which spells itself ``a.json``."""
    assert CheckedInputs.of(["./a.json", "d//b.json"]).holds(Path("a.json"))
    assert CheckedInputs.of(["d//b.json"]).holds("d/b.json")
    assert not CheckedInputs.of(["a.json"]).holds("b.json")


def test_steps_work_for_every_kind_or_are_refused_in_one_line(tmp_path: Path) -> None:
    """A run file, a trace, an import: a slice of the cycles; a sharded run: one line."""
    whole = load_input(RMSNORM).runs[0].cycles
    part = load_input(RMSNORM, ReadOptions(steps=StepRange.parse("0:2"))).runs[0].cycles
    assert int((~part.warmup).sum()) == 2 < int((~whole.warmup).sum())
    imported = import_inputs([DECODE], ReadOptions(steps=StepRange.parse(":3")))
    assert int((~imported.runs[0].cycles.warmup).sum()) == 3
    from perfdiff.schema.shards import write_shards

    shards = write_shards(load_input(DDP), tmp_path / "shards")
    with pytest.raises(Exception, match=r"--steps is not available for sharded runs") as err:
        open_input(shards, ReadOptions(steps=StepRange.parse("1:")))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("path", [DECODE, SAXPY])
def test_an_invalid_cycle_range_is_a_usage_error_for_every_kind(path: Path) -> None:
    with pytest.raises(UsageError, match=r"--cycle-range 'step\[' is not a regular expression"):
        open_input(path, ReadOptions(cycle_range="step["))


@pytest.mark.parametrize("command", [["compare", str(DECODE), str(DECODE)],
                                     ["import", str(DECODE), "-o", "x.json.gz"],
                                     ["ranks", str(DECODE)]])
def test_an_invalid_cycle_range_exits_2_in_one_line(
        command: list[str], run_cli: Any) -> None:
    code, _, err = run_cli(*command, "--cycle-range", "(unclosed")
    assert code == ExitCode.USAGE
    assert err.count("\n") == 1 and "is not a regular expression" in err, err


def test_a_run_file_is_read_without_the_other_formats_readers() -> None:
    """Every input meets every detector, but a format's reader is imported only for an input
    of that format (their modules cost ~0.1 s of every run file's compare: issue 25)."""
    import subprocess

    path = FIXTURES / "gpt-infer-normal.json.gz"
    probe = ("import sys\nfrom perfdiff.readers.dispatch import open_input\n"
             f"open_input({str(path)!r})\n"
             "print(sorted(m for m in sys.modules if m.endswith(('.reader', '.assemble', "
             "'.build'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip() == "[]"


def test_the_readers_public_names_load_on_first_use() -> None:
    import perfdiff.readers.nsys as nsys
    import perfdiff.readers.torch_profiler as torch_profiler
    from perfdiff.readers.nsys.reader import read_nsys
    from perfdiff.readers.torch_profiler.reader import read_torch_profiler

    assert torch_profiler.read_torch_profiler is read_torch_profiler
    assert nsys.read_nsys is read_nsys
    assert isinstance(torch_profiler.SOURCE_NAME, str) and isinstance(nsys.WORKLOAD_NAME, str)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = torch_profiler.nothing  # type: ignore[attr-defined]
