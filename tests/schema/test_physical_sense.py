"""Impossible data is refused where it is read, in one line naming the file and the record.

Why: these inputs (tests/impossible.py, issue 16) used to give exit 0 and a verdict computed
from the impossible records ("Mean cycle time changed by -658,968,213 % ... slower").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfdiff.errors import ExitCode, InputError
from perfdiff.schema.io import load_run_file
from tests.conftest import Runner
from tests.impossible import (
    LP_MUTATIONS,
    RUN_FIXTURE,
    RUN_MUTATIONS,
    impossible_lp_folder,
    impossible_run_file,
    load_doc,
)
from tests.shared_data import missing_reason, shared

LP_NORMAL = shared("latencyprism", "sglang", "gpu_instability", "normal_perf_data")

NEEDLES = {
    "cycles_end_before_start": "ends before it starts",
    "kernels_end_before_start": "ends before it starts",
    "kernel_lasts_1e15_ns": "beyond the run",
    "kernel_ends_at_int64_max": "beyond the run",
    "kernel_in_missing_cycle": "points at cycle 10000",
    "kernel_on_unknown_device": "device 7",
    "kernel_starts_before_zero": "negative time",
    "metric_value_infinite": "value inf is not a possible pct reading",
    "cycle_index_twice": "same cycle index twice",
}


@pytest.fixture(scope="module")
def doc() -> dict[str, object]:
    if not RUN_FIXTURE.exists():
        pytest.skip(f"{RUN_FIXTURE} not found")
    return load_doc()


@pytest.mark.parametrize("name", sorted(RUN_MUTATIONS))
def test_impossible_run_file_is_refused_naming_the_record(name: str, doc: dict[str, object],
                                                          tmp_path: Path) -> None:
    path = impossible_run_file(name, tmp_path, doc)
    with pytest.raises(InputError) as refused:
        load_run_file(path)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(str(path)), line
    assert NEEDLES[name] in line, line
    assert "runs[0]" in line and "re-record" in line, line


def test_the_real_fixtures_are_all_sound() -> None:
    for path in sorted((RUN_FIXTURE.parent).glob("*.json.gz")):
        load_run_file(path)


@pytest.mark.skipif(not LP_NORMAL.is_dir(), reason=missing_reason(LP_NORMAL))
@pytest.mark.parametrize("name", sorted(LP_MUTATIONS))
def test_impossible_latencyprism_rows_are_refused(name: str, tmp_path: Path,
                                                  run_cli: Runner) -> None:
    folder = impossible_lp_folder(name, LP_NORMAL, tmp_path)
    code, out, err = run_cli("compare", str(LP_NORMAL), str(folder))
    assert code == ExitCode.BAD_INPUT, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "line " in lines[0] and "export" in lines[0], err
    assert out == ""
