"""The exit codes: one table (``perfdiff.errors.EXIT_CODES``), one page, one line per error.

Why: the reference page said 3 for unreadable inputs while the command exited 2 (click's
readability check) or 70 (an uncaught PermissionError). The page's table is now generated from
the one table and checked here; file problems are run as an unprivileged user where this test
runs as root (root can read anything), so permission errors are really exercised.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import perfdiff.errors as errors
from perfdiff.errors import EXIT_CODES, ExitCode, PerfdiffError, exit_code_for

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "exit-codes.md"
BEGIN = "<!-- table generated from perfdiff/errors.py EXIT_CODES; tests/cli/test_exit_codes.py -->"
END = "<!-- end of generated table -->"
FIXTURE = ROOT / "fixtures" / "rmsnorm-h100.json.gz"


def render_table() -> str:
    lines = ["| Code | Name | Meaning | Commands |", "|---:|---|---|---|"]
    lines += [f"| {r.code} | `{r.name}` | {r.meaning} | {r.commands} |" for r in EXIT_CODES]
    return "\n".join(lines)


def test_the_page_shows_the_one_table() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == render_table(), "regenerate the table in the page:\n" + render_table()


def test_every_code_is_in_the_table_once() -> None:
    constants = {v for k, v in vars(ExitCode).items() if k.isupper()}
    rows = [r.code for r in EXIT_CODES]
    assert sorted(rows) == sorted(constants) and len(set(rows)) == len(rows)
    assert {r.name for r in EXIT_CODES} == {k for k in vars(ExitCode) if k.isupper()}


def test_every_error_class_maps_through_the_table() -> None:
    classes = [c for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, PerfdiffError) and c is not PerfdiffError]
    for cls in classes:
        assert exit_code_for(cls("x")) not in (ExitCode.INTERNAL, ExitCode.OK), cls
    assert exit_code_for(ValueError()) == ExitCode.INTERNAL
    from perfdiff.collect.workloads.base import WorkloadParamError
    from perfdiff.report.figures import PlotsUnavailableError

    assert exit_code_for(WorkloadParamError("x")) == ExitCode.USAGE
    assert exit_code_for(PlotsUnavailableError("x")) == ExitCode.USAGE


def _as_user() -> list[str]:
    """Run as an unprivileged user when root (permissions mean nothing to root)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot test permission errors")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def bad_paths() -> Iterator[dict[str, Path]]:
    # not pytest's tmp_path: its root folder is private to the user running the tests
    with tempfile.TemporaryDirectory() as folder:
        tmp_path = Path(folder)
        tmp_path.chmod(0o755)
        yield from _bad_paths(tmp_path)


def _bad_paths(tmp_path: Path) -> Iterator[dict[str, Path]]:
    locked = tmp_path / "locked"
    locked.mkdir()
    shutil.copy(FIXTURE, locked / "a.json.gz")
    unreadable = tmp_path / "unreadable.json.gz"
    shutil.copy(FIXTURE, unreadable)
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere.json")
    unreadable.chmod(0)
    locked.chmod(0)
    yield {"unreadable": unreadable, "untraversable": locked / "a.json.gz",
           "loop": tmp_path / "loop1", "dangling": tmp_path / "dangling"}
    locked.chmod(0o755)


@pytest.mark.parametrize("command", ["compare", "kernels", "bench", "merge"])
def test_unreadable_inputs_are_one_line_exit_3(bad_paths: dict[str, Path], command: str,
                                               tmp_path: Path) -> None:
    needles = {"unreadable": "cannot be read", "untraversable": "permission denied",
               "loop": "symlink loop", "dangling": "broken symlink"}
    prefix = _as_user()
    for kind, path in bad_paths.items():
        args = {"compare": [str(path), str(path)], "kernels": [str(path)],
                "bench": [str(path)], "merge": [str(path), "-o", str(tmp_path / "m.json")]}
        proc = subprocess.run([*prefix, sys.executable, "-c",
                               "from perfdiff.cli.app import main; main()", command,
                               *args[command]], capture_output=True, text=True, timeout=60,
                              cwd=ROOT, check=False)
        if prefix and "Permission denied" in proc.stderr and "perfdiff:" not in proc.stderr:
            pytest.skip("the checkout is not readable by an unprivileged user")
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == ExitCode.BAD_INPUT, (kind, proc.stderr)
        assert len(lines) == 1 and lines[0].startswith("perfdiff: error: "), proc.stderr
        assert needles[kind] in lines[0].lower(), (kind, lines[0])
