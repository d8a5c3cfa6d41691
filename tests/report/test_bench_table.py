"""``perfdiff bench``: the seeds' table layouts (rmsnorm per dtype x direction with a speedup
column; linalg with CPU time and before/after GPU times) and the command end to end."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfdiff.analysis.bench_cases import BenchRules, bench_run, compare_cases
from perfdiff.errors import ExitCode
from perfdiff.report.bench_table import bench_view, render_markdown
from perfdiff.schema import save_run_file
from tests.bench_factories import (
    BenchFileSpec,
    CaseSpec,
    linalg_cases,
    make_bench_file,
    rmsnorm_cases,
)
from tests.conftest import Runner

PLANTED = "impl=cuda dtype=float32 direction=forward shape=4x2048x4096"
LINALG_PLANTED = "op=eigh device=cuda batch=[2] n=64 dtype=float32"


def _save(tmp_path: Path, name: str, spec: BenchFileSpec) -> str:
    path = tmp_path / name
    save_run_file(make_bench_file(spec), path)
    return str(path)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_rmsnorm_one_table_per_dtype_and_direction_with_impls_as_columns() -> None:
    run = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases(), noise=0.0)), "r.json.gz")
    text = render_markdown(bench_view(run, None, None, BenchRules()))
    titles = re.findall(r"^torch\.(\w+) (forward|backward):$", text, flags=re.M)
    assert titles == [("float32", "forward"), ("float32", "backward"),
                      ("bfloat16", "forward"), ("bfloat16", "backward")]
    header = next(line for line in text.splitlines() if line.startswith("| shape"))
    assert _cells(header) == ["shape", "naive", "torchscript", "triton", "cuda",
                              "cuda speedup vs triton"]
    row = next(line for line in text.splitlines() if "128, 64" in line)
    cells = _cells(row)
    triton_us, cuda_us = float(cells[3]), float(cells[4])
    assert triton_us == pytest.approx(9.0, abs=0.01)  # factory: one 0.009 ms kernel
    assert float(cells[5]) == pytest.approx(triton_us / cuda_us, abs=0.002)


def test_rmsnorm_baseline_and_target_are_options() -> None:
    run = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases(), noise=0.0)))
    view = bench_view(run, None, None, BenchRules(), baseline="naive", target="triton")
    assert view.tables[0].headers[-1] == "triton speedup vs naive"
    unknown = bench_view(run, None, None, BenchRules(), baseline="nope")
    assert "speedup" not in " ".join(unknown.tables[0].headers)


def test_rmsnorm_two_runs_flag_the_regressed_cell_only() -> None:
    a = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases(), seed=1, noise=0.005)))
    b = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases({PLANTED: 1.3}), seed=2,
                                                noise=0.005)))
    text = render_markdown(bench_view(a, b, compare_cases(a, b), BenchRules()))
    flagged = [line for line in text.splitlines() if "regressed" in line and line.startswith("|")]
    assert len(flagged) == 1 and "2048, 4096" in flagged[0]
    assert "1 regressed, 31 no change" in text


def test_linalg_layout_matches_the_seed() -> None:
    a = bench_run(make_bench_file(BenchFileSpec(linalg_cases(), seed=1, workload="linalg",
                                                params={"backend": "magma"})))
    b = bench_run(make_bench_file(BenchFileSpec(
        linalg_cases({LINALG_PLANTED: 1.5}, cpu=False), seed=2, workload="linalg",
        params={"backend": "cusolver"})))
    view = bench_view(a, b, compare_cases(a, b), BenchRules())
    table = view.tables[0]
    assert table.headers[:4] == ("shape", "cpu_time (ms)", "gpu_time_before (magma) (ms)",
                                 "gpu_time_after (cusolver) (ms)")
    assert [r[0] for r in table.rows][:2] == ["[] 2 torch.float32", "[] 64 torch.float32"]
    flags = {r[0]: r[-1] for r in table.rows}
    assert flags["[2] 64 torch.float32"] == "***regressed"
    assert sum(1 for f in flags.values() if f) == 1
    # CPU time comes from the first run's CPU case (the factory: 0.2 ms x size + lead)
    cpu = {r[0]: float(r[1]) for r in table.rows}
    assert cpu["[] 512 torch.float32"] > cpu["[] 64 torch.float32"] > 0
    assert any("q below 0.05" in line for line in view.legend)


def test_bench_command_one_run_markdown(run_cli: Runner, tmp_path: Path) -> None:
    path = _save(tmp_path, "a.json.gz", BenchFileSpec(rmsnorm_cases()))
    code, out, err = run_cli("bench", path, "--plain")
    assert code == 0, err
    assert out.count("| shape") == 4 and "cuda speedup vs triton" in out


def test_bench_command_gate_and_output_file(run_cli: Runner, tmp_path: Path) -> None:
    a = _save(tmp_path, "a.json.gz", BenchFileSpec(rmsnorm_cases(), seed=1, noise=0.005))
    b = _save(tmp_path, "b.json.gz", BenchFileSpec(rmsnorm_cases({PLANTED: 1.3}), seed=2,
                                                   noise=0.005))
    report = tmp_path / "bench.md"
    code, _, err = run_cli("bench", a, b, "-o", str(report), "--fail-on-regression", "0")
    assert code == ExitCode.REGRESSION, err
    assert "***regressed" in report.read_text().replace("\\", "")
    code, _, err = run_cli("bench", a, a, "--plain", "--fail-on-regression", "0")
    assert code == 0, err


def test_bench_command_refuses_different_workloads(run_cli: Runner, tmp_path: Path) -> None:
    a = _save(tmp_path, "a.json.gz", BenchFileSpec(rmsnorm_cases()))
    b = _save(tmp_path, "b.json.gz", BenchFileSpec(linalg_cases(), workload="linalg"))
    code, _, err = run_cli("bench", a, b, "--plain")
    assert code == ExitCode.INCOMPARABLE
    assert err.count("\n") == 1 and "--force" in err
    code, _, err = run_cli("bench", a, b, "--plain", "--force")
    assert code == 0, err


def test_bench_command_bad_input_is_one_line(run_cli: Runner, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(b"\x1f\x8b not really gzip")
    code, _, err = run_cli("bench", str(broken))
    assert code == ExitCode.BAD_INPUT and err.count("\n") == 1
    code, _, err = run_cli("bench", str(tmp_path / "missing.json"))
    assert code == ExitCode.BAD_INPUT and err.count("\n") == 1


def test_other_workloads_get_one_row_per_case(run_cli: Runner, tmp_path: Path) -> None:
    odd = "user | label <b>"
    path = _save(tmp_path, "u.json.gz", BenchFileSpec([CaseSpec(odd), CaseSpec("step")],
                                                      workload="user-program"))
    code, out, err = run_cli("bench", path, "--plain")
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith("| ") and "case" not in line]
    assert len(rows) == 2 and all(len(_cells(r.replace("\\|", ""))) == 6 for r in rows)


def test_terminal_rendering_shows_the_same_cells() -> None:
    from rich.console import Console

    from perfdiff.report.bench_table import render_rich

    a = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases(), seed=1, noise=0.005)))
    b = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases({PLANTED: 1.3}), seed=2,
                                                noise=0.005)))
    view = bench_view(a, b, compare_cases(a, b), BenchRules())
    console = Console(width=160, record=True)
    render_rich(view, console)
    text = console.export_text()
    assert "***regressed" in text and "[4, 2048, 4096]" in text
    assert text.count("torch.float32 forward:") == 1
