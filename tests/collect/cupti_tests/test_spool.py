"""CUPTI buffers spooled to a file at hand-over and decoded at stop (collect/cupti/spool.py).

Over the real H100 buffers of ``fixtures/cupti_buffers``
(tests/collect/cupti_tests/test_raw_buffers.py):
the spooled path gives the same records as decoding each buffer at once, CUPTI's hand-over
decodes nothing, a failing disk falls back to decoding without losing a buffer, and a spool
cut off by a killed process reads back as its whole frames.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.collect import user_program
from perfdiff.collect.columns import concat
from perfdiff.collect.cupti.decode import decode_buffer, layout_for
from perfdiff.collect.cupti.raw_intake import RawIntake
from perfdiff.collect.cupti.spool import (
    MAGIC,
    SPOOL_SUFFIX,
    SpoolError,
    SpoolWriter,
    read_frames,
    spool_summary,
)
from perfdiff.collect.inject.config import InjectConfig
from tests.collect.cupti_tests.test_raw_buffers import _as_tuples, saved  # noqa: F401 (fixture)
from tests.support.fake_cupti import FAKE_BACKEND

Saved = tuple[list[np.ndarray[Any, Any]], dict[str, Any]]


def _intake(doc: dict[str, Any], size: int) -> RawIntake:
    clock = [0]

    def now() -> int:
        clock[0] += 1000
        return clock[0]
    layout = layout_for(doc["meta"]["cupti_api_version"])
    return RawIntake(None, layout, now, buffer_bytes=size)  # type: ignore[arg-type]


def _hand_over(intake: RawIntake, buf: np.ndarray[Any, Any]) -> None:
    """CUPTI asks for a buffer, fills it with ``buf``, hands it back."""
    address: list[Any] = [0]
    size: list[Any] = [0]
    intake._on_request(address, size, [0])
    intake._lent[address[0]][:buf.size] = buf
    intake._on_complete(None, 0, address[0], size[0], buf.size)


def _expected(buffers: list[np.ndarray[Any, Any]], doc: dict[str, Any]) -> Any:
    layout = layout_for(doc["meta"]["cupti_api_version"])
    return _as_tuples(concat([decode_buffer(b, b.size, layout) for b in buffers]),
                      doc["names"])


def test_spooled_buffers_decode_at_stop_to_the_same_records(saved: Saved,  # noqa: F811
                                                            tmp_path: Path) -> None:
    buffers, doc = saved
    intake = _intake(doc, max(b.size for b in buffers))
    intake.attach_spool(tmp_path / f"pid1{SPOOL_SUFFIX}")
    for buf in buffers:
        _hand_over(intake, buf)
    # the hand-over decoded nothing: every buffer is on disk and back in the pool
    assert intake.records == 0 and not intake.chunks
    assert len(intake._pool) == 1 and not intake._lent
    assert [h[2] for h in intake.handovers] == [0] * len(buffers)
    count = intake.decode_spool()
    assert count == intake.records > 0
    assert not (tmp_path / f"pid1{SPOOL_SUFFIX}").exists()  # removed once decoded
    assert _as_tuples(concat(intake.chunks), doc["names"]) == _expected(buffers, doc)
    assert intake.stop_decode_ns > 0 and not intake.errors


def test_a_failing_disk_falls_back_to_decoding_and_loses_nothing(
        saved: Saved, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    buffers, doc = saved
    intake = _intake(doc, max(b.size for b in buffers))
    intake.attach_spool(tmp_path / f"pid1{SPOOL_SUFFIX}")
    for buf in buffers[:2]:
        _hand_over(intake, buf)
    real_writev = os.writev
    calls = [0]

    def full_disk(fd: int, parts: Any) -> int:
        calls[0] += 1
        if calls[0] == 1:  # half a frame gets out, then the disk is full
            return real_writev(fd, [bytes(memoryview(parts[0]))[:4]])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "writev", full_disk)
    for buf in buffers[2:]:
        _hand_over(intake, buf)
    monkeypatch.setattr(os, "writev", real_writev)
    assert intake.spool is None
    assert any("No space left" in e and "decoded as CUPTI handed them over" in e
               for e in intake.errors)
    intake.decode_spool()  # the two whole frames; the cut-off one is not read
    assert _as_tuples(concat(intake.chunks), doc["names"]) == _expected(buffers, doc)


def test_short_writes_still_make_whole_frames(saved: Saved, tmp_path: Path,  # noqa: F811
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    buffers, _doc = saved
    real_writev = os.writev

    def dribble(fd: int, parts: Any) -> int:  # at most 1,000 bytes per call
        data = b"".join(bytes(memoryview(p)) for p in parts)[:1000]
        return real_writev(fd, [data])
    monkeypatch.setattr(os, "writev", dribble)
    path = tmp_path / "s.cupti-spool"
    writer = SpoolWriter(path)
    for buf in buffers:
        writer.write(buf, buf.size)
    writer.close()
    back = [array[:valid].copy() for array, valid in read_frames(path)]
    assert [b.tobytes() for b in back] == [b.tobytes() for b in buffers]
    assert writer.good_bytes == path.stat().st_size


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 3000), max_size=8), cut=st.integers(0, 30_000),
       seed=st.integers(0, 2**16))
def test_a_cut_off_spool_reads_back_as_its_whole_frames(sizes: list[int], cut: int,
                                                        seed: int, tmp_path_factory: Any
                                                        ) -> None:
    path = tmp_path_factory.mktemp("spool") / "s.cupti-spool"
    rng = np.random.default_rng(seed)
    frames = [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]
    writer = SpoolWriter(path)
    for frame in frames:
        writer.write(frame, frame.size)
    writer.close()
    data = path.read_bytes()
    path.write_bytes(data[:cut])  # the process died here
    back = [array[:valid].tobytes() for array, valid in read_frames(path)]
    ends = np.cumsum([8 + f.size for f in frames]).tolist()
    whole = sum(1 for end in ends if end <= cut)
    assert back == [f.tobytes() for f in frames[:whole]]
    assert spool_summary(path) == (whole, sum(f.size for f in frames[:whole]))


def test_a_file_that_is_no_spool_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.cupti-spool"
    path.write_bytes(MAGIC + b"\x02\x00\x00\x00ab" + b"NOPE\x00\x00\x00\x00")
    with pytest.raises(SpoolError, match=r"not an activity spool .*byte 10"):
        list(read_frames(path))


def test_a_killed_processs_spool_is_kept_and_named(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "shards"
    root.mkdir()
    monkeypatch.setattr(user_program.tempfile, "mkdtemp", lambda prefix: str(root))
    left = root / "run0" / f"pid4242{SPOOL_SUFFIX}"

    def killed(argv: list[str], env: dict[str, str]) -> tuple[int, int]:
        writer = SpoolWriter(left)
        writer.write(np.arange(100, dtype=np.uint8), 100)  # then SIGKILL: no shard
        writer.close()
        return 4242, 137

    monkeypatch.setattr(user_program, "_run_once", killed)
    outcome = user_program.run_program(
        [sys.executable, "-c", "pass"], InjectConfig(shard_dir="", backend=FAKE_BACKEND))
    assert left.exists()  # not deleted with the temporary folder
    reason = outcome.run_file.status.reason or ""
    assert outcome.run_file.status.state == "incomplete" and outcome.exit_code == 137
    assert f"1 activity buffer(s), 0.0 MB handed over by CUPTI before it died, kept " \
           f"undecoded at {left}" in reason


def test_the_writes_system_calls_are_not_counted_as_a_hold(
        saved: Saved, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The write runs with the interpreter lock released (os.writev): a slow disk costs
    CUPTI's thread, not the program; the hold stamped is the rest of the callback. The write
    burns 30 ms of CPU and the hold must stay under half of it: wide enough that a loaded CI
    box preempting the callback does not fail the test (it did at 3 ms vs 1 ms)."""
    buffers, doc = saved
    intake = _intake(doc, max(b.size for b in buffers))
    intake.attach_spool(tmp_path / f"pid1{SPOOL_SUFFIX}")
    real_writev = os.writev

    def slow(fd: int, parts: Any) -> int:
        began = time.thread_time_ns()
        while time.thread_time_ns() - began < 30_000_000:  # 30 ms of CPU in the "system call"
            pass
        return real_writev(fd, parts)
    monkeypatch.setattr(os, "writev", slow)
    _hand_over(intake, buffers[0])
    (start, end, records), = intake.handovers
    assert intake.spool_write_ns >= 30_000_000
    assert records == 0 and end - start < 15_000_000


def test_a_dead_ranks_spool_beside_other_ranks_shards_marks_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under torchrun one rank can die while the others write their shards: the run is
    incomplete and says where that rank's buffers are, instead of saying nothing."""
    from perfdiff.schema.io import save_run_file

    root = tmp_path / "shards"
    root.mkdir()
    monkeypatch.setattr(user_program.tempfile, "mkdtemp", lambda prefix: str(root))
    config = InjectConfig(shard_dir="", backend=FAKE_BACKEND)
    left = root / "run0" / f"pid4243{SPOOL_SUFFIX}"

    def one_rank_killed(argv: list[str], env: dict[str, str]) -> tuple[int, int]:
        shard = user_program._empty_run_file(0, 4242, 0, config, "stand-in shard")
        save_run_file(shard, root / "run0" / "run0-rank0-pid4242.json.gz")
        writer = SpoolWriter(left)
        writer.write(np.arange(10, dtype=np.uint8), 10)
        writer.close()
        return 4000, 0

    monkeypatch.setattr(user_program, "_run_once", one_rank_killed)
    outcome = user_program.run_program([sys.executable, "-c", "pass"], config)
    reason = outcome.run_file.status.reason or ""
    assert left.exists() and outcome.run_file.status.state == "incomplete"
    assert "a process of this run was killed before it wrote its shard" in reason
    assert f"kept undecoded at {left}" in reason
