"""Outputs never land on or inside an input, and a failed command writes nothing (issue 25).

Why: each case destroyed data on a fresh clone. ``import ranks/ -o ranks/rank1...`` exited 0
having overwritten rank 1's trace; ``compare lp/ lp2/ -o lp/result_perf_data.csv`` replaced an
input CSV; ``--plots`` into a folder that could not be written left a new report linking to
figures that did not exist, the previous report gone. The rule checked input *paths* only.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path

import pytest

import perfdiff.output as output
from perfdiff.errors import ExitCode, OutputError
from perfdiff.schema.io import save_run_file
from tests.conftest import Runner
from tests.factories import make_run_file
from tests.shared_data import missing_reason, shared

TRACES = sorted(shared("kineto", "hta", "trace_filter").glob("sampled_rank-*.json.gz"))
LP = shared("latencyprism", "sglang", "gpu_instability")


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def ranks(tmp_path: Path) -> Path:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank, trace in enumerate(TRACES):
        shutil.copy(trace, folder / f"rank{rank}.pt.trace.json.gz")
    return folder


@pytest.mark.skipif(len(TRACES) < 2, reason=missing_reason(shared("kineto", "hta")))
@pytest.mark.parametrize("target", ["rank1.pt.trace.json.gz", "new.json.gz", "sub/new.json.gz"])
def test_import_never_writes_into_the_folder_of_ranks(run_cli: Runner, ranks: Path,
                                                      target: str) -> None:
    before = _digests(ranks)
    code, _, err = run_cli("import", str(ranks), "-o", str(ranks / target))
    assert code == ExitCode.BAD_INPUT
    assert "inside the input folder" in _one_line(err)
    assert _digests(ranks) == before and not (ranks / "sub").exists()


@pytest.mark.skipif(not LP.is_dir(), reason=missing_reason(LP))
def test_compare_never_replaces_a_csv_of_a_latencyprism_folder(run_cli: Runner,
                                                              tmp_path: Path) -> None:
    normal = shutil.copytree(LP / "normal_perf_data", tmp_path / "normal_perf_data")
    os.chmod(normal, 0o755)
    for csv in normal.iterdir():
        os.chmod(csv, 0o644)
    before = _digests(normal)
    code, _, err = run_cli("compare", str(normal), str(LP / "abnormal_perf_data"),
                           "-o", str(normal / "result_perf_data.csv"))
    assert code == ExitCode.BAD_INPUT
    assert "inside the input folder" in _one_line(err)
    assert _digests(normal) == before


def test_a_file_a_link_in_an_input_folder_points_to_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "data.csv"
    outside.write_text("kept")
    folder = tmp_path / "in_perf_data"
    folder.mkdir()
    (folder / "result_perf_data.csv").symlink_to(outside)
    with pytest.raises(OutputError, match="points to"):
        output.write_atomic(outside, "x", inputs=[folder])
    assert outside.read_text() == "kept"
    # beside the folder, not inside it and not linked from it: written
    assert output.write_atomic(tmp_path / "report.md", "x", inputs=[folder]).read_text() == "x"


def test_a_name_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "a\nb"
    folder.mkdir()
    with pytest.raises(OutputError) as raised:
        output.write_atomic(folder / "r.md", "x", inputs=[folder])
    assert "\n" not in str(raised.value) and "a\\nb" in str(raised.value)


def test_files_land_together_or_not_at_all(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    report, figure = tmp_path / "r.md", tmp_path / "figs" / "cycles.png"
    report.write_text("old report")
    calls = []

    def second_write_fails(fd: int, data: bytes) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.write(fd, data)

    monkeypatch.setattr(output, "_write_all", second_write_fails)
    files = [output.output_file(report, "new report", "the report"),
             output.output_file(figure, b"png", "a figure")]
    with pytest.raises(OutputError, match="No space left"):
        output.write_together(files)
    assert report.read_text() == "old report" and not figure.exists()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["r.md"]


def test_compare_with_unwritable_plots_keeps_the_old_report(run_cli: Runner,
                                                            tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    a = save_run_file(make_run_file(seed=1), tmp_path / "a.json.gz")
    b = save_run_file(make_run_file(seed=2), tmp_path / "b.json.gz")
    report = tmp_path / "r.md"
    report.write_text("old report")
    (tmp_path / "blocker").write_text("a file where the figures' folder would go")
    code, _, err = run_cli("compare", str(a), str(b), "-o", str(report),
                           "--plots", str(tmp_path / "blocker" / "figs"))
    assert code == ExitCode.BAD_INPUT
    assert "cannot write a figure" in _one_line(err)
    assert report.read_text() == "old report"


def test_collect_of_a_one_word_program_is_not_a_workload_and_keeps_it(
        run_cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``collect -o r.json.gz -- ./train.sh`` said "unknown workload"; ``-o train.sh`` would
    have replaced the script after the recording."""
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("collect", "-o", "r.json.gz", "--", "./train.sh")
    assert "unknown workload" not in err and code != ExitCode.USAGE, err
    code, _, err = run_cli("collect", "-o", "train.sh", "--", "./train.sh")
    assert code == ExitCode.BAD_INPUT and "is one of the inputs" in _one_line(err)
    assert script.read_text() == "#!/bin/sh\n"
