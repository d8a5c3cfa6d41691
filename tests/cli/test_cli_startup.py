"""Start-up cost of the CLI: registering the commands must not import the analysis stack.

Every ``perfdiff`` invocation, ``--help`` included, imports every command module so that the
app can register it; when ``cli/bench.py`` imported scipy and pandas at module level, each command
paid about 1.5 s before doing anything (measured: ``perfdiff --help`` 1.4-2.0 s -> 0.15 s).
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "pandas", "numpy", "matplotlib", "torch")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_registering_the_commands_imports_no_heavy_package() -> None:
    loaded = _modules_after("import perfdiff.cli.app")
    assert "perfdiff.cli.bench" in loaded and "perfdiff.cli.compare" in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert not heavy, heavy[:5]


def test_help_imports_no_heavy_package() -> None:
    code = (
        "import sys\nsys.argv = ['perfdiff', '--help']\nfrom perfdiff.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )
    loaded = _modules_after(code)
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]
