"""bench/bench_crosscheck.py without a GPU: ``--events-from`` against earlier event times.

Why: the GPU pass cannot run in CI, but everything around it can: which perfdiff time a row
carries for each ``--measure``, the per-row medians of every measure, the 5 % gate and the
exit codes (0 within, 1 a case off, 2 unusable input).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

import bench.bench_crosscheck as bench_crosscheck
from perfdiff.schema.io import save_run_file
from tests.analysis.test_bench_call_measure import SPEC, _with_marks
from tests.bench_factories import make_bench_file


def _script() -> ModuleType:
    return bench_crosscheck


def _earlier(tmp_path: Path, event_ms: float) -> Path:
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps({"rows": [{"case": "impl=a", "event_ms": event_ms,
                                          "event_cupti_ms": event_ms}]}))
    return path


@pytest.fixture
def marked(tmp_path: Path) -> Path:
    # host-bound: every measured cycle's call returned 40 us after its last GPU op
    rf = _with_marks(make_bench_file(SPEC), [0, 40_000, 40_000, 40_000, 40_000])
    return save_run_file(rf, tmp_path / "marked.json.gz")


def test_call_measure_matches_events_that_stream_misses(tmp_path: Path, marked: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    cc = _script()
    events = _earlier(tmp_path, 0.0722)  # what events around the call would say: 72.2 us
    out = tmp_path / "call.json"
    assert cc.main([str(marked), "--events-from", str(events), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    (row,) = doc["rows"]
    assert doc["summary"]["measure"] == "call" and doc["summary"]["within_limit"] == 1
    assert row["perfdiff_gpu_ms"] == pytest.approx(0.0722)
    assert row["call_ms"] == pytest.approx(0.0722)
    assert row["stream_ms"] == pytest.approx(0.0322)
    assert row["span_ms"] == pytest.approx(0.031)
    # the stream time misses the host tail: 55 % short, so the gate fails (rc 1)
    stream_out = tmp_path / "stream.json"
    assert cc.main([str(marked), "--measure", "stream", "--events-from", str(events),
                    "--json", str(stream_out)]) == 1
    (srow,) = json.loads(stream_out.read_text())["rows"]
    assert srow["diff_pct"] == pytest.approx(100 * (0.0322 - 0.0722) / 0.0722)
    capsys.readouterr()


def test_a_file_without_marks_is_one_line_rc_2(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    old = save_run_file(make_bench_file(SPEC), tmp_path / "old.json.gz")
    assert _script().main([str(old), "--events-from", str(_earlier(tmp_path, 0.03))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--measure stream" in err[0]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert _script().main([str(old), "--measure", "stream", "--events-from", str(bad)]) == 2
    assert "not an earlier --json output" in capsys.readouterr().err
