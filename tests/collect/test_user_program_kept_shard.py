"""An unreadable shard is the only copy of what a process recorded: it is kept and named,
never deleted with the temporary shard folder (found on the two-GPU DDP job, where every
rank's shard was refused and then lost)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perfdiff.collect import user_program
from perfdiff.collect.inject.config import InjectConfig
from tests.support.fake_cupti import FAKE_BACKEND


def test_an_unreadable_shard_is_kept_and_named(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "shards"
    root.mkdir()
    monkeypatch.setattr(user_program.tempfile, "mkdtemp", lambda prefix: str(root))

    def run_once(argv: list[str], env: dict[str, str]) -> tuple[int, int]:
        (root / "run0" / "run0-rank0-pid4242.json.gz").write_bytes(b"not a run file")
        return 4242, 0

    monkeypatch.setattr(user_program, "_run_once", run_once)
    outcome = user_program.run_program(
        [sys.executable, "-c", "pass"], InjectConfig(shard_dir="", backend=FAKE_BACKEND))
    shard = root / "run0" / "run0-rank0-pid4242.json.gz"
    assert shard.read_bytes() == b"not a run file"  # still there
    assert outcome.run_file.status.state == "incomplete"
    assert f"kept at {shard}" in (outcome.run_file.status.reason or "")


def test_readable_runs_leave_no_temporary_folder(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "shards"
    root.mkdir()
    monkeypatch.setattr(user_program.tempfile, "mkdtemp", lambda prefix: str(root))
    monkeypatch.setattr(user_program, "_run_once", lambda argv, env: (4242, 0))
    outcome = user_program.run_program(
        [sys.executable, "-c", "pass"], InjectConfig(shard_dir="", backend=FAKE_BACKEND))
    assert not root.exists()  # no shard: nothing to keep, the folder goes
    assert outcome.run_file.status.state == "incomplete"  # and the file says no trace
