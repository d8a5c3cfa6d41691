"""Every command writes through ``perfdiff.output``: atomic, never over an input, one line.

Why these cases: each was seen to destroy data or be reported as a bug (issue 16): ``-o`` equal
to an input replaced the run file with markdown; a full disk left a truncated report where the
old one had been; an unwritable ``-o`` in merge and bench exited 70. The full disk is faked at
the one write seam (``perfdiff.output._write_all``), so it runs anywhere, root included.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

import perfdiff.output as output
from perfdiff.errors import ExitCode, OutputError
from perfdiff.schema.io import save_run_file
from tests.bench_factories import BenchFileSpec, CaseSpec, make_bench_file
from tests.conftest import Runner
from tests.factories import make_run_file

BENCH_SPEC = BenchFileSpec([CaseSpec("impl=a", (0.010, 0.020))], n_cycles=6, n_warmup=1)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    a = save_run_file(make_run_file(seed=1), tmp_path / "a.json.gz")
    b = save_run_file(make_run_file(seed=2), tmp_path / "b.json.gz")
    return a, b


@pytest.fixture
def bench_pair(tmp_path: Path) -> tuple[Path, Path]:
    a = save_run_file(make_bench_file(BENCH_SPEC), tmp_path / "ba.json.gz")
    b = save_run_file(make_bench_file(BENCH_SPEC), tmp_path / "bb.json.gz")
    return a, b


def _disk_full(fd: int, data: bytes) -> None:
    os.write(fd, data[: len(data) // 2])
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


def test_new_file_has_the_normal_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = output.write_atomic(tmp_path / "r.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.read_text() == "x"
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]  # no temp file left


def test_refuses_an_input_by_any_name(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(source)
    for target in (source, link, tmp_path / "sub" / ".." / "in.json"):
        with pytest.raises(OutputError, match="is one of the inputs"):
            output.write_atomic(target, "x", inputs=[source])
    assert source.read_text() == "{}"


def test_full_disk_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "r.md"
    target.write_text("old report")
    monkeypatch.setattr(output, "_write_all", _disk_full)
    with pytest.raises(OutputError, match=r"No space left.*previous file is unchanged"):
        output.write_atomic(target, "new report " * 1000)
    assert target.read_text() == "old report"
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]


@pytest.mark.parametrize("where", ["folder", "under_a_file"])
def test_unwritable_target_is_output_error(tmp_path: Path, where: str) -> None:
    (tmp_path / "file").write_text("")
    target = tmp_path if where == "folder" else tmp_path / "file" / "r.md"
    with pytest.raises(OutputError) as raised:
        output.write_atomic(target, "x")
    assert raised.value.exit_code == ExitCode.BAD_INPUT == 3


@pytest.mark.parametrize("which", [0, 1])
def test_compare_refuses_to_write_over_an_input(run_cli: Runner, pair: tuple[Path, Path],
                                                which: int) -> None:
    before = pair[which].read_bytes()
    code, _, err = run_cli("compare", str(pair[0]), str(pair[1]), "-o", str(pair[which]))
    assert code == ExitCode.BAD_INPUT
    assert "is one of the inputs" in _one_line(err)
    assert pair[which].read_bytes() == before


def test_bench_and_merge_refuse_to_write_over_an_input(run_cli: Runner,
                                                       bench_pair: tuple[Path, Path]) -> None:
    a, b = bench_pair
    before = a.read_bytes()
    for args in (("bench", str(a), str(b), "-o", str(a)),
                 ("merge", str(a), str(b), "-o", str(a), "--force")):
        code, _, err = run_cli(*args)
        assert code == ExitCode.BAD_INPUT, args
        assert "is one of the inputs" in _one_line(err)
        assert a.read_bytes() == before


def test_commands_on_a_full_disk_keep_the_old_output(
        run_cli: Runner, pair: tuple[Path, Path], bench_pair: tuple[Path, Path],
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "_write_all", _disk_full)
    target = tmp_path / "old.out"
    target.write_text("old")
    for args in (("compare", str(pair[0]), str(pair[1])),
                 ("bench", str(bench_pair[0]), str(bench_pair[1])),
                 ("merge", str(bench_pair[0]), str(bench_pair[1]), "--force")):
        code, _, err = run_cli(*args, "-o", str(target))
        assert code == ExitCode.BAD_INPUT, (args, err)
        assert "No space left" in _one_line(err)
        assert target.read_text() == "old"


@pytest.mark.parametrize("command", ["compare", "bench", "merge"])
def test_unwritable_output_is_exit_3_never_70(run_cli: Runner, bench_pair: tuple[Path, Path],
                                              tmp_path: Path, command: str) -> None:
    (tmp_path / "plain-file").write_text("")
    for target in (tmp_path, tmp_path / "plain-file" / "out.md"):
        extra = ("--force",) if command == "merge" else ()
        code, _, err = run_cli(command, str(bench_pair[0]), str(bench_pair[1]), *extra,
                               "-o", str(target))
        assert code == ExitCode.BAD_INPUT, (command, target, err)
        assert str(target) in _one_line(err)


def test_a_link_stays_a_link_and_a_device_is_written_into(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    output.write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert output.write_atomic("/dev/null", "x") == Path("/dev/null")
    assert Path("/dev/null").is_char_device()


def test_dev_full_is_one_line(run_cli: Runner, pair: tuple[Path, Path]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    code, _, err = run_cli("compare", str(pair[0]), str(pair[1]), "-o", "/dev/full")
    assert code == ExitCode.BAD_INPUT and "No space left" in _one_line(err)
    assert Path("/dev/full").is_char_device()
