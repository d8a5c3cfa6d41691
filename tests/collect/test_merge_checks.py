"""``perfdiff merge`` refuses what is not one experiment unless ``--force`` (issue 16).

The same file twice (by name, link or copy), an H100 recording with an H200 one, a contended
run with an uncontended one, another driver: each refused in one line with exit 4; with
``--force`` the merge goes ahead and the merged file keeps every input's GPUs and says what
differed.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from perfdiff.errors import ExitCode
from perfdiff.schema.io import load_run_file, save_run_file
from perfdiff.schema.model import RunFile
from tests.conftest import Runner
from tests.factories import make_run_file


def _save(run_file: RunFile, path: Path) -> str:
    return str(save_run_file(run_file, path))


def _with(run_file: RunFile, **params: object) -> RunFile:
    workload = dataclasses.replace(run_file.workload,
                                   params={**run_file.workload.params, **params})
    return dataclasses.replace(run_file, workload=workload)


@pytest.fixture
def base(tmp_path: Path) -> str:
    return _save(_with(make_run_file(seed=1, pid=1000), contend=0.0), tmp_path / "a.json.gz")


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_same_file_twice_by_name_link_or_copy(run_cli: Runner, base: str,
                                              tmp_path: Path) -> None:
    link = tmp_path / "link.json.gz"
    link.symlink_to(base)
    copy = tmp_path / "copy.json.gz"
    shutil.copy(base, copy)
    out = str(tmp_path / "m.json.gz")
    for other, needle in ((base, "same file"), (str(link), "same file"),
                          (str(copy), "same content")):
        code, _, err = run_cli("merge", base, other, "-o", out)
        assert code == ExitCode.INCOMPARABLE, err
        assert needle in _one_line(err) and "--force" in err
    assert not Path(out).exists()


@pytest.mark.parametrize(("change", "needle"), [
    ({"gpu_name": "NVIDIA H200"}, "different GPU models (NVIDIA H200 vs NVIDIA H100"),
    ({"contend": 0.5}, "workload parameter 'contend' (0.5 vs 0.0)"),
    ({"driver": "590.1"}, "different GPU drivers (590.1 vs 580.159.04)"),
    ({"workload": "other"}, "different workloads ('other' vs 'synthetic')"),
])
def test_not_one_experiment_is_refused_then_forced(run_cli: Runner, base: str, tmp_path: Path,
                                                   change: dict[str, object],
                                                   needle: str) -> None:
    other = make_run_file(seed=1, pid=2000, gpu_name=str(change.get("gpu_name",
                                                                    "NVIDIA H100 80GB HBM3")),
                          workload=str(change.get("workload", "synthetic")))
    other = _with(other, contend=change.get("contend", 0.0))
    if "driver" in change:
        other = dataclasses.replace(other, environment=dataclasses.replace(
            other.environment, driver_version=str(change["driver"])))
    second = _save(other, tmp_path / "b.json.gz")
    out = tmp_path / "m.json.gz"
    code, _, err = run_cli("merge", base, second, "-o", str(out))
    assert code == ExitCode.INCOMPARABLE, err
    assert needle in _one_line(err), err
    code, _, err = run_cli("merge", base, second, "-o", str(out), "--force")
    assert code == 0, err
    merged = load_run_file(out)
    assert any("merged with --force although" in w for w in merged.collection.warnings)
    if "gpu_name" in change:  # both GPUs kept, each run on its own
        names = sorted(d.name for d in merged.environment.devices)
        assert names == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
        assert [sorted(set(r.kernels.device.tolist())) for r in merged.runs] == [[0], [1]]


def test_replicates_of_one_experiment_merge(run_cli: Runner, base: str, tmp_path: Path) -> None:
    second = _save(_with(make_run_file(seed=1, pid=2000, n_cycles=25), contend=0.0,
                         collect_command="perfdiff collect -o b.json.gz"),
                   tmp_path / "b.json.gz")
    code, out, err = run_cli("merge", base, second, "-o", str(tmp_path / "m.json.gz"))
    assert code == 0, err
    assert "2 run(s)" in out


def test_what_the_collector_measured_of_itself_is_no_difference_of_experiment() -> None:
    """Issue 28: two replicates differ in their untraced-cycle schedule's measurements and
    their decoding times; merged without --force, each run's are kept (times summed, the
    schedules listed)."""
    from perfdiff.collect.merge import merge_run_files
    from perfdiff.collect.merge_checks import check_one_experiment

    def recorded(ratio: float, decode_ms: float) -> RunFile:
        rf = make_run_file()
        params = {**rf.workload.params, "intake_after_run_ms": decode_ms,
                  "untraced_pause": ["cupti_activity"],
                  "untraced_schedule": {"chosen_by": "cost target", "traced_cost_ratio": ratio}}
        return dataclasses.replace(rf, workload=dataclasses.replace(rf.workload, params=params))

    first, second = recorded(1.4, 10.0), recorded(1.5, 12.5)
    check_one_experiment([first, second], ["a", "b"])  # no refusal
    merged = merge_run_files([first, second], ["a", "b"])
    assert merged.workload.params["intake_after_run_ms"] == 22.5
    assert merged.workload.params["untraced_pause"] == ["cupti_activity"]
    assert [s["traced_cost_ratio"] for s in merged.workload.params["untraced_schedule"]] == [
        1.4, 1.5]
