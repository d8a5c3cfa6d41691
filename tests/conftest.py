"""Shared pytest options and fixtures.

``--update-golden`` regenerates the expected reports under tests/golden/. ``run_cli`` runs the
real ``perfdiff`` entry point in-process.

Why a flag and not automatic regeneration: a golden file is reviewed as a diff (``git diff
tests/golden``); a test that rewrote its own expectation could never fail.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from perfdiff.cli.app import main

Runner = Callable[..., tuple[int, str, str]]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*.md from the current output (review with git diff)",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with --update-golden."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Runner:
    """Run ``perfdiff ARGS`` through ``main``; returns (exit code, stdout, stderr).

    Why ``main`` and not typer's CliRunner: the error line and the exit code are produced by
    ``main``'s handler; CliRunner would bypass it and test something users never run.
    """

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["perfdiff", *args])
        with pytest.raises(SystemExit) as exited:
            main()
        captured = capsys.readouterr()
        code = exited.value.code
        return (code if isinstance(code, int) else 0 if code is None else 1,
                captured.out, captured.err)

    return run
