"""``perfdiff kernels``: the seeds' per-kernel table and the by-name aggregate."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from perfdiff.analysis.kernel_rows import launch_rows, name_rows
from perfdiff.errors import ExitCode
from perfdiff.report.kernel_table import render_launch_table
from perfdiff.schema import save_run_file
from tests.conftest import Runner
from tests.factories import ODD_NAMES, KernelSpec, make_run_file
from tests.shared_data import missing_reason, shared

SEED_TABLE = shared("seeds", "kernel-table-inference-fp16.txt")
SEED_LINE = re.compile(r"^.{50}\|[ \d]{11}[ \d.]{7}[ \d.]{7}$")

KERNELS = (
    KernelSpec("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,"
               " at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
               "at::detail::Array<char*, 1>)", 0.05, {"tensor_pct": 0.0, "dram_pct": 40.0}),
    KernelSpec("ampere_fp16_s16816gemm_fp16_64x128_ldg8_relu_f2f_stages_64x3_tn_with_a_long_tail",
               1.0, {"tensor_pct": 80.0, "dram_pct": 20.0}),
)



@pytest.fixture(scope="module")
def run_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("k") / "run.json.gz"
    save_run_file(make_run_file(KERNELS, n_cycles=4, n_warmup=1, sample_interval_ns=2_000),
                  path)
    return str(path)


def test_launch_table_matches_the_seed_layout(run_cli: Runner, run_path: str) -> None:
    code, out, err = run_cli("kernels", run_path)
    assert code == ExitCode.OK, err
    lines = out.splitlines()
    assert lines[0] == "Kernel" + " " * 49 + "Latency Tensor   DRAM"
    assert len(lines) == 1 + 3 * 2  # the 3 measured cycles; the warm-up one is left out
    for line in lines[1:]:
        assert SEED_LINE.match(line), line
    assert lines[1].startswith("vectorized_elementwise_kernel ")
    gemm = lines[2]
    assert gemm.startswith("ampere_fp16_s16816gemm_fp16_64x128_ldg8_relu_f2...|")
    tensor, dram = (float(x) for x in gemm.split()[-2:])
    assert tensor >= 0.5 and 0.1 <= dram <= 0.3


@pytest.mark.skipif(not SEED_TABLE.exists(), reason=missing_reason(SEED_TABLE))
def test_header_and_widths_equal_the_seed_file() -> None:
    seed = SEED_TABLE.read_text(encoding="utf-8").splitlines()
    ours = render_launch_table([]).splitlines()
    assert ours[0] == seed[0]
    assert all(len(line) == len(seed[0]) for line in seed[1:40])


def test_by_name_aggregates(run_cli: Runner, run_path: str) -> None:
    code, out, err = run_cli("kernels", run_path, "--by", "name", "--names", "full")
    assert code == ExitCode.OK, err
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert "ampere_fp16_s16816gemm" in rows[1]  # largest total first
    assert "vectorized_elementwise_kernel\\<4" in rows[2]  # full names, escaped


def test_by_name_shares_sum_to_100(run_path: str) -> None:
    from perfdiff.schema import load_run_file

    grouped = name_rows(launch_rows(load_run_file(run_path)))
    assert sum(r.count for r in grouped) == 8
    assert abs(sum(r.share_pct for r in grouped) - 100.0) < 1e-9


def test_cycle_and_run_selection(run_cli: Runner, run_path: str) -> None:
    code, out, _ = run_cli("kernels", run_path, "--cycle", "1", "--names", "mangled")
    assert code == ExitCode.OK
    assert len(out.splitlines()) == 3
    assert out.splitlines()[1].startswith("_Z")
    code, out, err = run_cli("kernels", run_path, "--run", "7")
    assert code == ExitCode.BAD_INPUT and out == ""
    assert err.startswith("perfdiff: error: run 7 is not in this file")
    code, out, err = run_cli("kernels", run_path, "--cycle", "999")
    assert code == ExitCode.BAD_INPUT and "cycle 999" in err


def test_warmup_cycles_are_left_out_unless_asked(run_cli: Runner, run_path: str) -> None:
    """Warm-up cycles come first in launch order and have no PM samples: the default listing
    opened with rows of n/a. Measured cycles only by default; --include-warmup and an explicit
    --cycle still reach the warm-up launches."""
    _, measured, _ = run_cli("kernels", run_path, "--names", "mangled")
    _, everything, _ = run_cli("kernels", run_path, "--names", "mangled", "--include-warmup")
    _, warmup, _ = run_cli("kernels", run_path, "--names", "mangled", "--cycle", "0")
    assert len(measured.splitlines()) == 1 + 3 * 2
    assert len(everything.splitlines()) == 1 + 4 * 2
    assert len(warmup.splitlines()) == 1 + 2
    assert everything.splitlines()[1:3] == warmup.splitlines()[1:3]
    assert everything.splitlines()[3:] == measured.splitlines()[1:]


def test_missing_run_file(run_cli: Runner, tmp_path: Path) -> None:
    code, out, err = run_cli("kernels", str(tmp_path / "none.json"))
    assert code == ExitCode.BAD_INPUT and out == "" and len(err.splitlines()) == 1


def test_hostile_names_stay_on_one_line(tmp_path: Path, run_cli: Runner) -> None:
    path = tmp_path / "odd.json"
    save_run_file(make_run_file([KernelSpec(n + "\nsecond line", 0.1) for n in ODD_NAMES],
                                n_cycles=2), path)
    code, out, _ = run_cli("kernels", str(path), "--names", "full")
    assert code == ExitCode.OK
    assert len(out.splitlines()) == 1 + len(ODD_NAMES)  # 1 measured cycle of 2
    code, out, _ = run_cli("kernels", str(path), "--by", "name", "--names", "full")
    assert all(line.count("|") - line.count("\\|") == 8 for line in out.splitlines())


def test_terminal_gets_a_rich_table(run_cli: Runner, run_path: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = run_cli("kernels", run_path)
    assert code == ExitCode.OK
    assert "Latency (ns)" in out and "|" not in out
    code, out, _ = run_cli("kernels", run_path, "--by", "name")
    assert code == ExitCode.OK and "Share (%)" in out
    code, out, _ = run_cli("kernels", run_path, "--plain")
    assert out.startswith("Kernel ")


def test_launch_order_as_markdown(run_cli: Runner, run_path: str) -> None:
    code, out, _ = run_cli("kernels", run_path, "--markdown", "--names", "full")
    assert code == ExitCode.OK
    rows = out.splitlines()
    assert [c.strip() for c in rows[0].split("|")[1:3]] == ["#", "Kernel"]
    assert len(rows) == 2 + 6
    assert all(line.count("|") - line.count("\\|") == 7 for line in rows)


KINETO = Path(__file__).parents[2] / "fixtures" / "kineto"


def test_kernels_by_op_names_the_launching_ops(run_cli: Runner) -> None:
    trace = str(KINETO / "gpt2-generate-sdpa.pt.trace.json.gz")
    code, out, _ = run_cli("kernels", trace, "--by", "op", "--format", "json")
    assert code == ExitCode.OK
    assert "aten::scaled_dot_product_attention > aten::_cudnn_attention_forward" in out
    assert "aten::addmm" in out


def test_kernels_by_op_of_a_perfdiff_recording_is_one_line(run_cli: Runner) -> None:
    recording = str(Path(__file__).parents[2] / "fixtures" / "timm" / "timm-vit-bf16.json.gz")
    code, out, err = run_cli("kernels", recording, "--by", "op")
    assert code == ExitCode.BAD_INPUT and out == ""
    assert "perfdiff collect records kernels, not their launching ops" in err
    assert len(err.strip().splitlines()) == 1


def test_an_imported_trace_keeps_its_ops(run_cli: Runner, tmp_path: Path) -> None:
    """perfdiff import links the ops, so the run file answers --by op later."""
    out_file = tmp_path / "timm.json.gz"
    code, _, err = run_cli("import", str(KINETO / "timm-vit-bf16.pt.trace.json.gz"), "-o",
                           str(out_file))
    assert code == ExitCode.OK, err
    code, out, err = run_cli("kernels", str(out_file), "--by", "op", "--format", "json")
    assert code == ExitCode.OK, err
    assert "aten::linear > aten::addmm" in out and "AddmmBackward0 > aten::mm" in out
