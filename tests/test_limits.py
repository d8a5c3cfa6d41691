"""Bounded reading (perfdiff/limits.py, issue 25): size and ratio limits, gzip members.

Why: a 6.3 MB file inflating to 6 GiB took 91 s and 18.5 GiB of memory; a 40 GiB file and a
gzip bomb ended in MemoryError (exit 70); a second gzip member was silently dropped; JSON
nested 100,000 deep, ``"dur": 1e1000000`` and device 2**70 in a trace were exit 70.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from perfdiff.errors import ExitCode, InputError, UsageError
from perfdiff.limits import MAX_INPUT_ENV, gunzip_bounded, max_input_bytes, read_input_bytes
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "fixtures" / "gpt-infer-normal.json.gz"
TRACE = ROOT / "fixtures" / "kineto" / "kineto-gpt-normal.pt.trace.json.gz"
ENTRY = "import sys; from perfdiff.cli.entry import main; sys.argv[0] = 'perfdiff'; main()"


def _bomb(path: Path, gib: int = 6) -> Path:
    """``gib`` GiB of zeros as 64 MiB gzip members (what ``gzip`` reads as one file): built
    in a blink, inflating 1000 times like the issue's bomb."""
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    one = member.compress(b"\0" * (64 << 20)) + member.flush()
    path.write_bytes(one * (gib * 16))
    return path


def test_a_6_gib_bomb_is_refused_in_seconds_with_little_memory(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.json.gz")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    peak_file = tmp_path / "peak-kib"
    # each command's own peak (RUSAGE_SELF at its exit): RUSAGE_CHILDREN of this test process
    # would also hold every earlier test's subprocesses
    measured = ("import atexit, resource\n"
                f"atexit.register(lambda: open({str(peak_file)!r}, 'w').write("
                "str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)))\n" + ENTRY)
    for command in (["kernels", str(bomb)], ["compare", str(bomb), str(RUN)]):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", measured, *command],
                              capture_output=True, text=True, env=env, check=False)
        elapsed = time.perf_counter() - started
        assert done.returncode == ExitCode.BAD_INPUT, done.stderr
        assert "decompression bomb" in done.stderr and len(done.stderr.splitlines()) == 1
        assert elapsed < 5.0, elapsed
        peak_mib = int(peak_file.read_text()) / 1024
        assert peak_mib < 1024, (command[0], peak_mib)


def test_the_size_limit_is_one_line_and_can_be_raised(run_cli: Runner,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_INPUT_ENV, "0.0001")  # 105 kB: the fixture inflates to more
    code, _, err = run_cli("kernels", str(RUN))
    assert code == ExitCode.BAD_INPUT and MAX_INPUT_ENV in err, err
    assert len(err.strip().splitlines()) == 1
    monkeypatch.setenv(MAX_INPUT_ENV, "1")
    assert run_cli("kernels", str(RUN), "--format", "json")[0] == 0
    for bad in ("nan", "-1", "0", "lots"):
        monkeypatch.setenv(MAX_INPUT_ENV, bad)
        with pytest.raises(UsageError, match=MAX_INPUT_ENV):
            max_input_bytes()


def test_a_plain_file_above_the_limit_is_refused_before_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # sparse: 2 MiB that take no disk
        handle.truncate(2 << 20)
    monkeypatch.setenv(MAX_INPUT_ENV, str(1 / 1024))  # 1 MiB
    with pytest.raises(InputError, match=r"big\.json: the file holds .* above the input limit"):
        read_input_bytes(big, "re-copy it")


def test_concatenated_members_are_read_whole(run_cli: Runner, tmp_path: Path) -> None:
    """A trace split into two gzip members reads as the trace, never as its first half."""
    data = gzip.decompress(TRACE.read_bytes())
    cut = len(data) // 2
    two = tmp_path / "two.pt.trace.json.gz"
    two.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
    assert gunzip_bounded(two.read_bytes(), two, "x") == data
    whole = run_cli("kernels", str(TRACE), "--format", "json")
    split = run_cli("kernels", str(two), "--format", "json")
    assert split[0] == whole[0] == 0
    assert split[1].replace(str(two), "T") == whole[1].replace(str(TRACE), "T")
    garbage = tmp_path / "garbage.json.gz"
    garbage.write_bytes(TRACE.read_bytes() + b"not gzip")
    code, _, err = run_cli("kernels", str(garbage))
    assert code == ExitCode.BAD_INPUT and "after the end of the gzip data" in err


@pytest.mark.parametrize(("name", "text"), [
    ("deep-run", "[" * 100_000 + "]" * 100_000),
    ("deep-trace", '{"traceEvents": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("huge-dur", '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, '
                 '"dur": 1e1000000, "args": {"correlation": 1, "device": 0, "stream": 7}}]}'),
    ("device-2-70", json.dumps({"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 9},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
         "args": {"correlation": 1, "device": 2**70, "stream": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1,
         "args": {"correlation": 1}}]})),
])
def test_hostile_documents_are_data_errors(run_cli: Runner, tmp_path: Path, name: str,
                                           text: str) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(text)
    code, _, err = run_cli("kernels", str(path))
    assert code == ExitCode.BAD_INPUT, err
    assert len(err.strip().splitlines()) == 1 and str(path) in err


def test_max_input_gib_raises_or_lowers_the_limit_for_one_command(
        run_cli: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    """The option beats the environment, for the command line that gives it only."""
    monkeypatch.setenv(MAX_INPUT_ENV, "0.0001")  # 105 kB: the fixture inflates to more
    for spelled in (["--max-input-gib", "1"], ["--max-input-gib=1"]):
        assert run_cli("kernels", str(RUN), "--format", "json", *spelled)[0] == 0
    code, _, err = run_cli("kernels", str(RUN))  # the next line: the environment's again
    assert code == ExitCode.BAD_INPUT and "--max-input-gib 16" in err, err
    monkeypatch.delenv(MAX_INPUT_ENV)
    code, _, err = run_cli("compare", str(RUN), str(RUN), "--max-input-gib", "0.0001")
    assert code == ExitCode.BAD_INPUT and "above the input limit of 0.0001 GiB" in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "1e400", "lots", None])
def test_max_input_gib_bad_values_are_one_usage_line(run_cli: Runner,
                                                     value: str | None) -> None:
    for command in (["kernels", str(RUN)], ["compare", str(RUN), str(RUN)],
                    ["merge", str(RUN), str(RUN)], ["import", str(RUN)]):
        code, _, err = run_cli(*command, "--max-input-gib", *([value] if value else []))
        assert code == ExitCode.USAGE and "--max-input-gib" in err, err
        assert len(err.strip().splitlines()) == 1 and err.startswith("perfdiff: error: ")


def test_the_fast_compare_door_takes_max_input_gib(tmp_path: Path) -> None:
    """``perfdiff compare`` runs without typer (perfdiff.cli.entry): the option works there."""
    env = {k: v for k, v in os.environ.items() if k != MAX_INPUT_ENV}
    env["PYTHONPATH"] = str(ROOT)
    door = "import sys; from perfdiff.cli.entry import main; sys.argv[0] = 'perfdiff'; main()"
    low = subprocess.run([sys.executable, "-c", door, "compare", str(RUN), str(RUN),
                          "--max-input-gib", "0.0001"], capture_output=True, text=True,
                         env=env, check=False)
    assert low.returncode == ExitCode.BAD_INPUT and "--max-input-gib" in low.stderr
    ok = subprocess.run([sys.executable, "-c", door, "compare", str(RUN), str(RUN), "-o",
                         str(tmp_path / "r.md"), "--max-input-gib=2"], capture_output=True,
                        text=True, env=env, check=False)
    assert ok.returncode == 0, ok.stderr
