"""``perfdiff collect`` on a machine that cannot collect, and usage mistakes: one line each,
with the documented exit code.

The no-GPU case runs the console entry point in a subprocess, as a user would (where this
machine has a GPU and cupti-python, it cannot observe the failure and is skipped). Usage
mistakes call the same entry point in-process, which is faster.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from perfdiff.cli.app import main
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
        (["gpt-infer", "--contend", "1.5"],
         "--contend 1.5 is not a usable value; give a number from 0 to 1"),
    ],
)
def test_usage_mistakes_are_one_line_exit_2(
    args: list[str], needle: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run_in_process(["collect", *args], monkeypatch, capsys)
    assert code == ExitCode.USAGE
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_list_shows_workloads_and_parameters(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run_in_process(["collect", "--list"], monkeypatch, capsys)
    assert code == 0
    assert "gpt-infer:" in out and "-p optimizer=<fused|foreach|loop>" in out


def _run_in_process(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["perfdiff", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
