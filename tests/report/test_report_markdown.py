"""Renderers on hand-built Comparison objects: sections, formats, escaping, JSON envelope."""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from perfdiff.analysis.gate import find_regressions
from perfdiff.analysis.model import CompareOptions, Comparison, CycleTimeChange
from perfdiff.report import render_json, render_markdown, render_terminal
from perfdiff.report.format import PROSE_NAME_WIDTH, display_name, md_cell
from perfdiff.report.gate import regression_lines
from perfdiff.report.json_report import JSON_FORMAT_VERSION
from tests.report_factories import comparison, finding, row, side

SECTIONS = [
    "## 1. High-Level Performance Summary",
    "## 2. Cycle Duration Distribution Comparison",
    "## 3. In-depth Core Metric Comparison",
    "### Overview",
    "### Key Findings",
    "**Recommendation:**",
    "### Detailed comparison table",
    "## 4. Kernel inventory changes",
    "## 5. Environment",
    "## 6. Legend",
]


def regressions(c: Comparison, threshold_pct: float) -> list[str]:
    """The gate's lines, as ``compare --fail-on-regression`` prints them."""
    return regression_lines(find_regressions(c, threshold_pct))


def table_rows(text: str, after: str) -> list[str]:
    block = text.split(after, 1)[1]
    rows = []
    for line in block.splitlines():
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return rows


def n_cells(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line)) - 1


def test_sections_in_the_seed_order() -> None:
    text = render_markdown(comparison())
    positions = [text.index(s) for s in SECTIONS]
    assert positions == sorted(positions)


def test_notes_come_before_section_1() -> None:
    text = render_markdown(comparison(notes=("cycles were cut differently",)))
    assert text.index("> **Note:** cycles were cut differently") < text.index("## 1.")


def test_detailed_table_has_seed_columns_then_ours() -> None:
    header = table_rows(render_markdown(comparison()), "### Detailed comparison table")[0]
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[:4] == ["Function Name", "Metric Name", "Device", "Suspicion Score"]
    assert cells[16] == "U-test p(μ)"
    assert cells[17:] == ["q-value", "Time Δ (ms/cycle) [95 % interval]", "Verdict"]


def test_nan_prints_na_and_small_p_prints_floor() -> None:
    text = render_markdown(comparison())
    assert not re.search(r"\bnan\b", text, flags=re.IGNORECASE)
    assert "n/a" in text and "<0.001" in text
    assert "| 0.000 " not in text


def test_incomparable_cycles_are_not_compared() -> None:
    change = CycleTimeChange(comparable=False, delta_ms=math.nan, delta_pct=math.nan,
                             ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan,
                             verdict="insufficient data")
    c = comparison(cycle_time=change, abnormal=side("abnormal", (1.0, 1.1),
                                                    cycle_definition="DecoderLayer"))
    text = render_markdown(c)
    assert "**Cycle times not compared:**" in text
    assert "not compared" in table_rows(text, "## 1.")[4]
    rank_header = table_rows(text, "## 2.")[0]
    assert "Δ" not in rank_header
    # cycles cut differently: functions gate on their share (Δβ = +10 pp), never on times
    gate = regressions(c, 5.0)
    assert len(gate) == 1 and "+10.00 pp" in gate[0]
    assert regressions(c, 11.0) == []


def test_no_findings_says_so_and_gives_the_mde() -> None:
    c = comparison(findings=(), rows=(row(verdict="no change"),), inventory=())
    text = render_markdown(c)
    assert "No function's time changed significantly" in text
    assert "Changes smaller than about 0.80% of cycle time cannot be detected" in text
    assert "Both sides ran the same set of functions." in text


def test_environment_differences_are_highlighted() -> None:
    rows = table_rows(render_markdown(comparison()), "## 5. Environment")
    torch_row = next(r for r in rows if r.startswith("| torch"))
    assert "**2.11.0**" in torch_row and "**2.12.0**" in torch_row and "**no**" in torch_row
    gpu_row = next(r for r in rows if r.startswith("| GPU"))
    assert "**" not in gpu_row


def test_max_rows_limits_the_table_and_says_so() -> None:
    many = tuple(row(f"k{i}", verdict="no change") for i in range(12))
    text = render_markdown(comparison(rows=many), max_rows=5)
    assert len(table_rows(text, "### Detailed comparison table")) == 2 + 5
    assert "7 more rows not shown" in text
    assert len(table_rows(render_markdown(comparison(rows=many), max_rows=None),
                          "### Detailed comparison table")) == 2 + 12


def test_seed_compatible_mode_keeps_the_seed_columns_only() -> None:
    c = comparison(options=CompareOptions(seed_compatible=True), test_unit="cycles")
    text = render_markdown(c)
    header = table_rows(text, "### Detailed comparison table")[0]
    assert "q-value" not in header and header.count("|") == 18
    assert "| Total Cycles" in text and "| Avg Cycle Time (us)" in text


hostile = st.text(alphabet=st.sampled_from(list("ab|`*_<>\\[]&#\n\x1e ")), min_size=1,
                  max_size=30)


@settings(max_examples=60, deadline=None)
@given(hostile, hostile, hostile)
def test_hostile_names_cannot_break_any_table(function: str, metric: str, label: str) -> None:
    c = comparison(
        rows=(row(function, metric=metric),),
        findings=(finding(function),),
        normal=side(label),
    )
    text = render_markdown(c)
    tables: list[list[str]] = []
    previous_was_row = False
    for line in text.splitlines():
        is_row = line.startswith("|")
        if is_row and not previous_was_row:
            tables.append([])
        if is_row:
            tables[-1].append(line)
        previous_was_row = is_row
    assert len(tables) == 6  # summary, devices, ranks, detailed, inventory, environment
    for table in tables:
        assert {n_cells(line) for line in table} == {n_cells(table[0])}, table


def test_output_is_deterministic_and_row_order_is_kept() -> None:
    c = comparison(rows=(row("b"), row("a")))
    assert render_markdown(c) == render_markdown(c)
    table = "\n".join(table_rows(render_markdown(c), "### Detailed comparison table"))
    assert table.index("| b ") < table.index("| a ")


def test_json_envelope_nan_is_null_and_names_are_full() -> None:
    long_name = "void " + "x" * 300 + "<int>(int)"
    c = comparison(rows=(row(long_name, z_metric_mean=math.nan),))
    doc = json.loads(render_json(c))
    assert doc["version"] == JSON_FORMAT_VERSION
    assert doc["comparison"]["rows"][0]["function"] == long_name
    assert doc["comparison"]["rows"][0]["z_mu"] is None
    assert doc["comparison"]["normal"]["environment"]["GPU"] == "NVIDIA H100 80GB HBM3"
    assert long_name not in render_markdown(c)  # tables shorten it


def test_terminal_rendering_escapes_markup() -> None:
    console = Console(record=True, width=160, color_system=None)
    render_terminal(comparison(rows=(row("[bold]kernel[/]"),),
                               findings=(finding("[red]x[/]"),)), console)
    out = console.export_text()
    assert "[bold]kernel[/]" in out and "[red]x[/]" in out
    assert "Key findings" in out


def test_gate_counts_only_significant_slowdowns_above_the_threshold() -> None:
    c = comparison()  # cycle +12.9 % slower; gemm +1.5 ms on a ~10 ms cycle; new_kernel 0.25 ms
    assert len(regressions(c, 1.0)) == 3
    assert len(regressions(c, 13.0)) == 1  # only gemm: 1.5 / 10.05 = 14.9 %
    assert regressions(c, 20.0) == []
    quiet = replace(c, rows=tuple(replace(r, verdict="no change") for r in c.rows),
                    cycle_time=replace(c.cycle_time, verdict="no change"), inventory=())
    assert regressions(quiet, 0.0) == []


any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
verdicts = st.sampled_from(["slower", "faster", "no change", "insufficient data"])


@settings(max_examples=40, deadline=None)
@given(
    # names without "nan" in them: the check below is for numbers printed as "nan"
    st.lists(st.tuples(st.text(max_size=20).filter(lambda s: "nan" not in s.lower()),
                       any_float, any_float, any_float, verdicts),
             max_size=6),
    any_float, any_float, st.lists(st.floats(0.001, 1e6), max_size=5),
)
def test_any_numbers_render_without_error(
    values: list[tuple[str, float, float, float, str]], delta_pct: float, mde: float,
    cycles: list[float],
) -> None:
    rows = tuple(
        row(
            name,
            cycle_share_pct_normal=b,
            z_cycle_share=z,
            p_cycle_share=p,
            q_value=p,
            time_delta_ms=z,
            verdict=verdict,
        )
        for name, b, z, p, verdict in values
    )
    c = comparison(rows=rows, mde_pct=mde, normal=side("normal", tuple(cycles)),
                   cycle_time=replace(comparison().cycle_time, delta_pct=delta_pct))
    text = render_markdown(c)
    assert not re.search(r"\bnan\b", text, flags=re.IGNORECASE)
    json.loads(render_json(c))
    render_terminal(c, Console(file=io.StringIO(), width=100))


def test_long_case_label_lists_are_cut_with_a_count() -> None:
    labels = ", ".join(f"impl=cuda shape=4x{i}" for i in range(300))
    text = render_markdown(comparison(normal=side("normal", cycle_definition=labels)))
    header = next(line for line in text.splitlines() if line.startswith("- **normal**"))
    assert len(header) < 300
    assert re.search(r"… \(\+\d+ more labels\)", header)


def test_largest_non_significant_changes_are_named_as_such() -> None:
    rows = (row(), row("small_slowdown", verdict="no change", time_delta_ms=0.3, q_value=0.2),
            row("tiny", verdict="no change", time_delta_ms=0.01, q_value=0.9))
    text = render_markdown(comparison(rows=rows))
    block = text.split("Largest other changes")[1].split("**Recommendation:**")[0]
    names = re.findall(r"^- `([^`]+)`", block, flags=re.MULTILINE)
    assert names == ["small_slowdown", "tiny"]  # largest first; the finding is not repeated
    assert "q = 0.200: not significant" in block
    below = render_markdown(comparison(rows=(row("x", verdict="no change", q_value=0.001,
                                                 time_delta_ms=0.05),)))
    assert "q = 0.001: significant, but below the practical threshold of 0.100 ms" in below
    not_comparable = replace(comparison(rows=rows).cycle_time, comparable=False)
    assert "Largest other changes" not in render_markdown(
        comparison(rows=rows, cycle_time=not_comparable))


def test_unlabelled_cycle_markers_name_the_workload_not_an_empty_code_span() -> None:
    """Built-in workloads cut cycles with unlabelled markers: the header said "cut at `  `"."""
    text = render_markdown(comparison(normal=side("normal", cycle_definition=""),
                                      abnormal=side("abnormal", cycle_definition=" ")))
    headers = [line for line in text.splitlines() if line.startswith("- **")][:2]
    assert len(headers) == 2
    for header in headers:
        assert "cycles cut at each iteration of `gpt-infer`" in header
        assert not re.search(r"`\s*`", header)


MASKED_FILL = (
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
    "at::native::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::"
    "operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half, bool)#1}>("
    "at::TensorIteratorBase&, at::native::masked_fill_kernel(at::TensorIterator&, c10::Scalar "
    "const&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda("
    "c10::Half, bool)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<"
    "at::native::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::"
    "operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half, bool)#1}>("
    "at::TensorIteratorBase&)::{lambda(int)#1})"
)
LAYER_NORM = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, "
              "float, false>(int, float, c10::Half const*, c10::Half const*, c10::Half const*, "
              "float*, float*, c10::Half*)")


def test_prose_names_are_the_tables_compacted_names_and_json_keeps_them_full() -> None:
    """Overview, Key Findings, the 'largest other changes' and the CI gate line name a long
    C++ kernel as the tables do (compacted), never by its full signature."""
    c = comparison(
        rows=(row(MASKED_FILL), row(LAYER_NORM, verdict="no change", q_value=0.4,
                                    time_delta_ms=0.3)),
        findings=(finding(MASKED_FILL),), inventory=(),
    )
    text = render_markdown(c)
    prose = display_name(MASKED_FILL, PROSE_NAME_WIDTH)
    table = display_name(MASKED_FILL)
    assert "at::native" not in text and "{lambda" not in text
    overview = text.split("### Overview", 1)[1].split("### Key Findings", 1)[0]
    findings = text.split("### Key Findings", 1)[1].split("### Detailed", 1)[0]
    assert f"`{prose}`" in overview
    assert f"`{prose}`" in findings
    assert f"`{display_name(LAYER_NORM, PROSE_NAME_WIDTH)}`" in findings  # largest other change
    assert md_cell(table) in "\n".join(table_rows(text, "### Detailed comparison table"))
    assert prose.startswith(table.removesuffix("…"))  # the table's cell is the prose name, cut
    gate = regressions(c, 1.0)
    assert any(line.startswith(f"{prose} on GPU 0") for line in gate), gate
    assert not any("at::native" in line for line in gate)
    doc = json.loads(render_json(c))
    assert doc["comparison"]["findings"][0]["function"] == MASKED_FILL
    assert {r["function"] for r in doc["comparison"]["rows"]} == {MASKED_FILL, LAYER_NORM}
