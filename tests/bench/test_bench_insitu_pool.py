"""bench/insitu_pool.py: passes pooled per case without changing any pairing (hand cases)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"bench.{name}")


def _pass(tmp: Path, name: str, call_ms: list[float], *, workload: str = "linalg",
          gpu: str = "NVIDIA H100 80GB HBM3", events_ms: float = 0.100) -> Path:
    """One in-situ result with one case whose events all read ``events_ms``."""
    cc = _module("bench_crosscheck")
    ev = np.full(len(call_ms), events_ms)
    row = cc.case_row("batch=[2] n=2", ev, {"call": np.asarray(call_ms)}, 0.05)
    summary = {"mode": "in-situ", "workload": workload, "gpu": gpu,
               **cc.in_situ_summary([row], "call", 5.0)}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({"summary": summary, "rows": [row]}))
    return path


def test_pooled_median_is_over_every_cycle_of_every_pass(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    # per-cycle differences +6 % (one pass, a slow host), +2 %, +1 %: pooled median +2 %
    a = _pass(tmp_path, "a", [0.106, 0.106, 0.106])
    b = _pass(tmp_path, "b", [0.102, 0.102, 0.102])
    c = _pass(tmp_path, "c", [0.101, 0.101, 0.101])
    out = tmp_path / "pooled.json"
    assert _module("insitu_pool").main([str(a), str(b), str(c), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    row = doc["rows"][0]
    assert row["n"] == 9
    assert row["paired_diff_call_pct"] == pytest.approx(2.0)
    assert row["per_pass_paired_pct"]["call"] == pytest.approx([6.0, 2.0, 1.0])
    assert doc["summary"]["within_limit"] == 1
    assert [p["within_limit"] for p in doc["summary"]["per_pass"]] == [0, 1, 1]
    assert "in-situ pooled" in capsys.readouterr().out


def test_pooling_cannot_hide_a_case_that_misses_in_most_passes(tmp_path: Path) -> None:
    a = _pass(tmp_path, "a", [0.106, 0.106])
    b = _pass(tmp_path, "b", [0.107, 0.107])
    c = _pass(tmp_path, "c", [0.101, 0.101])
    assert _module("insitu_pool").main([str(a), str(b), str(c)]) == 1


@pytest.mark.parametrize("problem", ["workload", "no-cycles", "one-pass", "not-json"])
def test_unusable_input_is_one_line_and_exit_2(tmp_path: Path, problem: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    a = _pass(tmp_path, "a", [0.101])
    other: Any
    if problem == "workload":
        other = _pass(tmp_path, "b", [0.101], workload="rmsnorm")
    elif problem == "no-cycles":
        other = _pass(tmp_path, "b", [0.101])
        doc = json.loads(other.read_text())
        del doc["rows"][0]["cycles"]
        other.write_text(json.dumps(doc))
    elif problem == "not-json":
        other = tmp_path / "b.json"
        other.write_text("{truncated")
    args = [str(a)] if problem == "one-pass" else [str(a), str(other)]
    assert _module("insitu_pool").main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("insitu_pool: ") and "\n" not in err
