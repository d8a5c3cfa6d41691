"""The user guide's CI-gate example is what ``compare --fail-on-regression 5`` prints on the
gpt-infer fixtures (it had kept the line of an earlier recording: +20.68 %, "1 more")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PERFDIFF = [sys.executable, "-c", "from perfdiff.cli.app import main; main()"]
PAIR = (REPO / "fixtures" / "gpt-infer-normal.json.gz",
        REPO / "fixtures" / "gpt-infer-contended.json.gz")


def test_the_ci_gate_line_in_the_user_guide_is_the_commands_output(tmp_path: Path) -> None:
    if not all(p.exists() for p in PAIR):
        pytest.skip("gpt-infer fixtures not found")
    proc = subprocess.run([*PERFDIFF, "compare", *map(str, PAIR), "-o",
                           str(tmp_path / "report.md"), "--fail-on-regression", "5"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfdiff: regression:")]
    assert line in (REPO / "docs" / "user-guide.md").read_text(encoding="utf-8")
