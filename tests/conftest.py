"""Shared pytest options: ``--update-golden`` regenerates the expected reports under tests/golden/.

Why a flag and not automatic regeneration: a golden file is reviewed as a diff (``git diff
tests/golden``); a test that rewrote its own expectation could never fail.
"""

from __future__ import annotations

import pytest


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
