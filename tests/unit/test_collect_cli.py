"""``perfdiff collect`` on a machine that cannot collect: one line, documented exit code.

Runs the real console entry point in a subprocess, as a user would. Where this machine has
a GPU and cupti-python, the test cannot observe the failure and is skipped.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from perfdiff.errors import ExitCode

PERFDIFF = [sys.executable, "-c", "from perfdiff.cli.app import main; main()"]


def _can_collect() -> bool:
    if importlib.util.find_spec("cupti") is None or importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


@pytest.mark.skipif(_can_collect(), reason="this machine can collect")
def test_missing_gpu_or_cupti_is_one_line_with_exit_code_5(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    proc = subprocess.run([*PERFDIFF, "collect", "gpt-infer", "--cycles", "2", "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == ExitCode.COLLECTOR_UNAVAILABLE
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("perfdiff: error: cannot collect: ")
    assert "cupti-python" in line or "GPU" in line or "PyTorch" in line
    assert "pip install" in line or "NVIDIA GPU" in line
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["gpt-infer", "-p", "batchsize=3"], "unknown workload parameter 'batchsize'"),
        (["gpt-infer", "-p", "batch"], "-p expects KEY=VALUE"),
        (["nosuch"], "unknown workload 'nosuch'"),
        (["gpt-infer", "--cycles", "0"], "--cycles must be at least 1"),
        (["gpt-infer", "--contend", "1.5"], "--contend must be between 0 and 1"),
    ],
)
def test_usage_mistakes_are_one_line_exit_2(args: list[str], needle: str) -> None:
    proc = subprocess.run([*PERFDIFF, "collect", *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == ExitCode.USAGE
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_list_shows_workloads_and_parameters() -> None:
    proc = subprocess.run([*PERFDIFF, "collect", "--list"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0
    assert "gpt-infer:" in proc.stdout and "-p optimizer=<fused|foreach|loop>" in proc.stdout
