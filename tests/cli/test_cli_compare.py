"""``perfdiff compare`` end to end through the real entry point (``perfdiff.cli.app.main``).

Why through ``main`` and not only typer's CliRunner: the one-line error and the exit code are
produced by ``main``'s handler; CliRunner would bypass it and test something users never run.
Every bad input must give exactly one line on stderr, no traceback, and its documented code.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import pytest

from perfdiff.errors import ExitCode
from perfdiff.report.json_report import JSON_FORMAT, JSON_FORMAT_VERSION
from perfdiff.schema import run_file_to_dict, save_run_file
from perfdiff.schema.model import RunFile
from tests.conftest import Runner
from tests.factories import ODD_NAMES, KernelSpec, make_run_file
from tests.shared_data import missing_reason, shared

SLOW_KERNELS = (
    KernelSpec("gemm_kernel", 1.6, {"tensor_pct": 50.0, "dram_pct": 30.0}),
    KernelSpec("softmax_kernel", 0.3, {"tensor_pct": 0.0, "dram_pct": 70.0}),
    KernelSpec("layernorm_kernel", 0.2, {"tensor_pct": 0.0, "dram_pct": 60.0}, launches=2),
)


def save(run_file: RunFile, path: Path) -> str:
    save_run_file(run_file, path)
    return str(path)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("runs")
    return {
        "normal": save(make_run_file(seed=1), d / "normal.json.gz"),
        "again": save(make_run_file(seed=2), d / "again.json.gz"),
        "slow": save(make_run_file(SLOW_KERNELS, seed=3), d / "slow.json"),
        "other_gpu": save(make_run_file(seed=4, gpu_name="NVIDIA A100-SXM4-80GB"),
                          d / "a100.json"),
    }


def assert_one_line_error(code: int, out: str, err: str, expected: int, *needles: str) -> None:
    assert code == expected, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("perfdiff: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0]


# ----------------------------------------------------------------------------- bad input


def test_missing_file(run_cli: Runner, inputs: dict[str, str], tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")
    assert_one_line_error(*run_cli("compare", inputs["normal"], missing), ExitCode.BAD_INPUT,
                          missing, "no such file")


def test_folder_that_is_not_latencyprism(run_cli: Runner, inputs: dict[str, str],
                                         tmp_path: Path) -> None:
    assert_one_line_error(*run_cli("compare", str(tmp_path), inputs["normal"]),
                          ExitCode.BAD_INPUT, str(tmp_path))


def test_not_json(run_cli: Runner, inputs: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json {", encoding="utf-8")
    assert_one_line_error(*run_cli("compare", inputs["normal"], str(bad)), ExitCode.BAD_INPUT,
                          str(bad))


def test_truncated_gzip(run_cli: Runner, inputs: dict[str, str], tmp_path: Path) -> None:
    data = Path(inputs["normal"]).read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert_one_line_error(*run_cli("compare", inputs["normal"], str(cut)), ExitCode.BAD_INPUT,
                          str(cut), "truncated")


def test_unknown_schema_major(run_cli: Runner, inputs: dict[str, str], tmp_path: Path) -> None:
    doc = run_file_to_dict(make_run_file(seed=5))
    doc["schema_version"] = "99.0"
    future = tmp_path / "future.json.gz"
    future.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert_one_line_error(*run_cli("compare", inputs["normal"], str(future)),
                          ExitCode.BAD_INPUT, str(future), "99.0")


def test_run_without_measured_cycles(run_cli: Runner, inputs: dict[str, str],
                                     tmp_path: Path) -> None:
    only_warmup = save(make_run_file(n_cycles=1, n_warmup=1, seed=6), tmp_path / "w.json")
    assert_one_line_error(*run_cli("compare", inputs["normal"], only_warmup),
                          ExitCode.BAD_INPUT, only_warmup, "measured cycles")


def test_run_with_one_measured_cycle_is_insufficient_not_a_finding(
        run_cli: Runner, inputs: dict[str, str], tmp_path: Path) -> None:
    one = save(make_run_file(SLOW_KERNELS, n_cycles=2, n_warmup=1, seed=7), tmp_path / "1.json")
    code, out, err = run_cli("compare", inputs["normal"], one, "--fail-on-regression", "1")
    assert code == ExitCode.OK, err
    assert "**Verdict: insufficient data.**" in out
    assert "**slower**" not in out


def test_nan_metrics_and_hostile_names_give_a_correct_report(run_cli: Runner,
                                                             tmp_path: Path) -> None:
    specs = [KernelSpec(n, 0.4, {"tensor_pct": 20.0}) for n in ODD_NAMES]
    a = save(make_run_file(specs, seed=8), tmp_path / "a.json")
    b = save(make_run_file(specs, seed=9, nan_metric_fraction=0.5), tmp_path / "b.json")
    code, out, err = run_cli("compare", a, b, "--rows", "0")
    assert code == ExitCode.OK, err
    assert not re.search(r"\bnan\b", out, flags=re.IGNORECASE)
    table = out.split("### Detailed comparison table")[1].split("## 4.")[0]
    rows = [line for line in table.splitlines() if line.startswith("|")]
    n_cols = rows[0].count("|") - rows[0].count("\\|")
    for line in rows:
        assert line.count("|") - line.count("\\|") == n_cols, line
    assert "kernel\\|with\\|pipes" in table
    assert "\\`backticked\\`" in table


def test_incomparable_gpus_refused_unless_forced(run_cli: Runner,
                                                 inputs: dict[str, str]) -> None:
    assert_one_line_error(*run_cli("compare", inputs["normal"], inputs["other_gpu"]),
                          ExitCode.INCOMPARABLE, "--force", "A100")
    code, out, err = run_cli("compare", inputs["normal"], inputs["other_gpu"], "--force")
    assert code == ExitCode.OK, err
    assert "Compared with --force despite different GPU models" in out


def test_bad_option_is_usage_error(run_cli: Runner, inputs: dict[str, str]) -> None:
    code, _, err = run_cli("compare", inputs["normal"], inputs["again"], "--alpha", "2")
    assert code == ExitCode.USAGE
    assert "Traceback" not in err


# ----------------------------------------------------------------------------- outputs and gate


def test_fail_on_regression_exit_codes(run_cli: Runner, inputs: dict[str, str]) -> None:
    code, out, err = run_cli("compare", inputs["normal"], inputs["slow"],
                             "--fail-on-regression", "5")
    assert code == ExitCode.REGRESSION
    assert "## 1. High-Level Performance Summary" in out  # the report is still written
    assert err.startswith("perfdiff: regression: ")
    code, _, err = run_cli("compare", inputs["normal"], inputs["slow"],
                           "--fail-on-regression", "500")
    assert code == ExitCode.OK, err


def test_same_configuration_passes_the_gate(run_cli: Runner, inputs: dict[str, str]) -> None:
    code, out, err = run_cli("compare", inputs["normal"], inputs["again"],
                             "--fail-on-regression", "0")
    assert code == ExitCode.OK, err
    assert "**slower**" not in out and "**faster**" not in out


def test_json_output_parses_and_carries_its_version(run_cli: Runner,
                                                    inputs: dict[str, str]) -> None:
    code, out, err = run_cli("compare", inputs["normal"], inputs["slow"], "--format", "json")
    assert code == ExitCode.OK, err
    doc = json.loads(out)
    assert doc["format"] == JSON_FORMAT and doc["version"] == JSON_FORMAT_VERSION
    cmp = doc["comparison"]
    assert cmp["normal"]["source"] == inputs["normal"]
    assert cmp["findings"][0]["function"] == "gemm_kernel"
    for row in cmp["rows"]:
        # the JSON keeps LatencyPrism's names (beta, mu) although the code calls them otherwise
        for key in ("p_beta", "u_p_beta", "p_mu", "u_p_mu", "q_value"):
            assert row[key] is None or 0.0 <= row[key] <= 1.0


def test_output_file_and_plots(run_cli: Runner, inputs: dict[str, str], tmp_path: Path) -> None:
    report = tmp_path / "out" / "report.md"
    plots = tmp_path / "plots"
    code, out, err = run_cli("compare", inputs["normal"], inputs["slow"], "-o", str(report),
                             "--plots", str(plots))
    assert code == ExitCode.OK, err
    assert out == ""
    assert report.read_text(encoding="utf-8").startswith("# Performance comparison")
    for name in ("what-changed.png", "cycles.png"):
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_is_deterministic(run_cli: Runner, inputs: dict[str, str]) -> None:
    first = run_cli("compare", inputs["normal"], inputs["slow"])
    second = run_cli("compare", inputs["normal"], inputs["slow"])
    assert first == second


def test_slower_gemm_is_the_first_finding(run_cli: Runner, inputs: dict[str, str]) -> None:
    code, out, err = run_cli("compare", inputs["normal"], inputs["slow"], "--top", "1")
    assert code == ExitCode.OK, err
    findings = out.split("### Key Findings")[1].split("**Recommendation:**")[0]
    assert findings.lstrip().startswith("- **`gemm_kernel`**")
    assert "**`tensor_pct`**: decreased" in findings


def test_plots_without_matplotlib_fail_early_with_one_line(
        run_cli: Runner, inputs: dict[str, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    report = tmp_path / "r.md"
    code, out, err = run_cli("compare", inputs["normal"], inputs["slow"], "--plots",
                             str(tmp_path / "p"), "-o", str(report))
    assert_one_line_error(code, out, err, ExitCode.USAGE, "perfdiff[plots]")
    assert not report.exists()  # nothing written before the option was checked


def test_terminal_gets_the_rich_summary(run_cli: Runner, inputs: dict[str, str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = run_cli("compare", inputs["normal"], inputs["slow"])
    assert code == ExitCode.OK, err
    assert "Key findings" in out and "Functions by size of the change" in out
    assert "## 1. High-Level" not in out
    assert out.index("Where the cycle time went") < out.index("Key findings")


def test_the_terminal_rows_are_sorted_by_the_size_of_the_change() -> None:
    from rich.console import Console

    from perfdiff.report.terminal import render_terminal
    from tests.door import compare_inputs

    fixtures = Path(__file__).parents[2] / "fixtures" / "timm"
    c = compare_inputs(fixtures / "timm-vit-bf16.json.gz", fixtures / "timm-vit-fp32.json.gz")
    console = Console(width=160, record=True, force_terminal=False)
    render_terminal(c, console)
    text = console.export_text()
    table = text[text.index("Functions by size of the change"):]
    deltas = [float(m) for m in re.findall(r"\s([+-]\d+\.\d{3})\s+[+-]", table)]
    assert len(deltas) >= 10
    assert [abs(d) for d in deltas] == sorted((abs(d) for d in deltas), reverse=True)
    assert "other parts: " in text  # the summed headline parts are named


def test_a_bug_exits_internal_not_regression(run_cli: Runner, inputs: dict[str, str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Python's default exit code for a crash is 1 = REGRESSION: CI would misread it."""
    import perfdiff.analysis.comparison as comparison_module  # entry imports it when called

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(comparison_module, "compare_tables", broken)
    monkeypatch.delenv("PERFDIFF_DEBUG", raising=False)
    code, out, err = run_cli("compare", inputs["normal"], inputs["again"])
    assert code == ExitCode.INTERNAL and out == ""
    assert err.strip().splitlines() == [
        "perfdiff: internal error: RuntimeError: boom; please report it "
        "(rerun with PERFDIFF_DEBUG=1 for the traceback)"
    ]


LATENCYPRISM = shared("latencyprism", "sglang", "gpu_instability")


@pytest.mark.skipif(not LATENCYPRISM.is_dir(), reason=missing_reason(LATENCYPRISM))
def test_latencyprism_folders_are_not_refused_for_their_parent_names(
        run_cli: Runner, tmp_path: Path) -> None:
    """A LatencyPrism folder has no workload name; its parent folder's name must not count."""
    (tmp_path / "monday").mkdir()
    (tmp_path / "tuesday").mkdir()
    normal = tmp_path / "monday" / "normal_perf_data"
    abnormal = tmp_path / "tuesday" / "abnormal_perf_data"
    normal.symlink_to(LATENCYPRISM / "normal_perf_data")
    abnormal.symlink_to(LATENCYPRISM / "abnormal_perf_data")
    code, out, err = run_cli("compare", str(normal), str(abnormal), "--format", "json")
    assert code == ExitCode.OK, err
    assert json.loads(out)["comparison"]["findings"]


def test_json_carries_the_headline_replacements_and_the_grouping(run_cli: Runner) -> None:
    """JSON 1.2 (issue 23): headline, replacements, described changes and what a row is."""
    kineto = Path(__file__).parents[2] / "fixtures" / "kineto"
    normal, abnormal = (str(kineto / f"gpt2-generate-{v}.pt.trace.json.gz")
                        for v in ("eager", "sdpa"))
    code, out, err = run_cli("compare", normal, abnormal, "--format", "json")
    assert code == ExitCode.OK, err
    cmp = json.loads(out)["comparison"]
    assert JSON_FORMAT_VERSION == "1.2" and cmp["by"] == "kernel"
    parts = cmp["headline"]["parts"]
    assert sum(p["delta_ms"] for p in parts) == pytest.approx(cmp["headline"]["delta_ms"])
    assert any(r["function"].startswith("[replaced]") for r in cmp["replacements"])
    assert {"family", "replaced"} <= {r["func_type"] for r in cmp["rows"]}
    code, out, err = run_cli("compare", normal, abnormal, "--format", "json", "--by", "op")
    assert code == ExitCode.OK, err
    cmp = json.loads(out)["comparison"]
    assert cmp["by"] == "op" and cmp["replacements"] == []
    functions = {r["function"] for r in (*cmp["rows"], *cmp["described"])}
    assert "aten::softmax > aten::_softmax" in functions
    assert any(f.startswith("aten::scaled_dot_product_attention > ") for f in functions)
