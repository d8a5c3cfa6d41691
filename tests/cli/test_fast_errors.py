"""A missing or unreadable input is reported before the heavy imports.

``compare`` needed 1.7 s to say a file was missing (pandas and scipy first). The console
script (``perfdiff.cli.entry``) now checks the inputs it can find in the command line with the
standard library only; its table of options must match the real commands, or it could take an
option's value for an input. What is checked is that no heavy module was imported when the
error line is printed (a timed assertion failed under a loaded machine's scheduling, and speed
is measured by benchmarks: bench/README.md, "CLI start-up").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer

from perfdiff.cli.app import app
from perfdiff.cli.entry import FLAG_OPTIONS, VALUE_OPTIONS, input_arguments
from perfdiff.errors import ExitCode

HEAVY = ("pandas", "scipy", "numpy", "typer", "rich", "msgspec", "pyarrow")
# the console script, printing at exit which heavy modules it had imported
ENTRY = [sys.executable, "-c",
         "import atexit, sys\n"
         f"atexit.register(lambda: print('imported:', [m for m in {HEAVY!r} if m in sys.modules],"
         " file=sys.stderr))\n"
         "from perfdiff.cli.entry import main; main()"]


def test_the_options_table_matches_the_commands() -> None:
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for name in VALUE_OPTIONS:
        values, flags = set(), set()
        for param in commands[name].params:
            if param.param_type_name == "option":
                names = {*param.opts, *param.secondary_opts}
                (flags if param.is_flag else values).update(names)
        assert values == VALUE_OPTIONS[name], name
        assert flags == FLAG_OPTIONS[name], name


def test_inputs_are_told_from_option_values() -> None:
    assert input_arguments(["compare", "-o", "r.md", "a", "--top", "3", "b"]) == ["a", "b"]
    assert input_arguments(["compare", "--format=json", "a", "b", "--force"]) == ["a", "b"]
    assert input_arguments(["merge", "a", "b", "-o", "m.json"]) == ["a", "b"]
    assert input_arguments(["kernels", "--", "-odd.json"]) == ["-odd.json"]
    assert input_arguments(["compare", "--help"]) is None
    assert input_arguments(["collect", "x"]) is None
    # a bare --plots (figures beside the report) takes no value, as in the app
    assert input_arguments(["compare", "a", "b", "--plots", "-o", "r.md"]) == ["a", "b"]
    assert input_arguments(["compare", "a", "b", "--plots"]) == ["a", "b"]
    assert input_arguments(["compare", "--plots", "figs", "a", "b"]) == ["a", "b"]


@pytest.mark.parametrize("args", [["compare", "missing.json.gz", "other.json.gz"],
                                  ["kernels", "missing.json.gz"],
                                  ["bench", "missing.json.gz"],
                                  ["merge", "missing.json.gz", "-o", "out.json.gz"]])
def test_missing_file_is_reported_in_a_blink(tmp_path: Path, args: list[str]) -> None:
    proc = subprocess.run([*ENTRY, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == ExitCode.BAD_INPUT
    assert proc.stderr == ("perfdiff: error: missing.json.gz: no such file; check the path "
                           "(run files end in .json or .json.gz)\nimported: []\n")
    assert not (tmp_path / "out.json.gz").exists()
