"""``perfdiff collect`` never loses a recording to an unwritable ``-o`` (fake backend).

The program has already run when the file is written, so the recording goes to a fallback path
that the error line names, and the command exits 3.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from perfdiff.errors import ExitCode
from perfdiff.schema.io import load_run_file
from tests.support.fake_cupti import PERFDIFF_FAKE, fake_env

PROGRAM = """
import perfdiff
from tests.support.fake_cupti import launch
for i in range(3):
    with perfdiff.cycle():
        launch(f"k{i}", 0.1)
"""


def test_unwritable_output_falls_back_and_names_the_path(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    (tmp_path / "plain-file").write_text("")
    target = tmp_path / "plain-file" / "run.json.gz"
    env = fake_env(TMPDIR=str(tmp_path))
    env.pop("PERFDIFF_INJECT_CONFIG", None)
    proc = subprocess.run([*PERFDIFF_FAKE, "collect", "-o", str(target), "--", sys.executable,
                           "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("perfdiff: error:")]
    assert len(errors) == 1, proc.stderr
    saved = Path(errors[0].rsplit("saved to ", 1)[1].split(" instead")[0])
    assert saved.parent == tmp_path and saved.name.endswith("run.json.gz")
    assert len(load_run_file(saved).runs[0].cycles.index) == 3
    assert "Traceback" not in proc.stderr
