"""The markdown report: the seed's sections, in the seed's order, with the seed's flaws fixed.

Sections: headline (``headline_section``); notes; 1 High-Level Performance Summary; 2 Cycle
Duration Distribution Comparison; 3 In-depth Core Metric Comparison (Overview, Key Findings,
Recommendation, Detailed table); 4 Kernel inventory changes; 5 Environment; 6 Legend. In
``--seed-compatible`` mode sections 1 and 2 are LatencyPrism's own layout
(:mod:`perfdiff.report.seed_sections`).

Why plain functions returning strings: the report is deterministic text (no clock, sorted
input from the analysis), so golden files can pin it and review its diffs.
"""

from __future__ import annotations

from perfdiff.analysis.model import (
    Comparison,
    SideSummary,
)
from perfdiff.errors import ExitCode
from perfdiff.report.figure_links import FigureLinks, image_line
from perfdiff.report.format import (
    NA,
    display_name,
    fmt_int,
    fmt_interval,
    fmt_ms,
    fmt_num,
    fmt_pct,
    md_cell,
    md_code,
    metric_name,
)
from perfdiff.report.headline_section import headline_section
from perfdiff.report.markdown_text import (
    TEST_UNIT_TEXT,
    count,
    cycle_definition_md,
    device_cell,
    p_text,
)
from perfdiff.report.metric_section import metric_section
from perfdiff.report.seed_sections import seed_rank_section, seed_summary_section
from perfdiff.report.table import pipe_table

DEFAULT_MAX_ROWS = 30  # detailed-table rows in markdown (JSON always has all)
MAX_RANKS = 20  # rank-table rows before the rest is summarised


def render_markdown(comparison: Comparison, *, max_rows: int | None = DEFAULT_MAX_ROWS,
                    figures: FigureLinks | None = None) -> str:
    """The whole report as markdown text. ``max_rows=None`` keeps every detailed-table row;
    ``figures`` links each figure in the section it belongs to (``--plots``)."""
    seed = comparison.options.seed_compatible
    # the headline (verdict, where the time went, first findings) before the notes and the
    # long tables: it is what the first screen must show
    parts = [_title(comparison), headline_section(comparison), _notes(comparison)]
    if seed:
        parts += [seed_summary_section(comparison), seed_rank_section(comparison)]
    else:
        parts += [_summary_section(comparison), _rank_section(comparison)]
    if figures:
        # figures of sections 1 and 2 go at their ends (the seed layout keeps its own text)
        parts[-2] = "\n".join([parts[-2].rstrip("\n"), "", *image_line(figures, "where-it-ran")])
        parts[-1] = "\n".join([parts[-1].rstrip("\n"), "", *image_line(figures, "cycles")])
    parts += [
        metric_section(comparison, max_rows, figures),
        _inventory_section(comparison, figures),
        _environment_section(comparison),
        _legend_section(comparison),
    ]
    return "\n".join(p for p in parts if p).rstrip("\n") + "\n"


# ----------------------------------------------------------------------------- header




def _side_line(side: SideSummary) -> str:
    runs = "run" if side.n_runs == 1 else "runs"
    return (
        f"- **{md_cell(side.label)}**: {md_code(side.source)} — workload "
        f"{md_code(side.workload)}, {fmt_int(side.n_runs)} {runs}, "
        f"{count(side.n_cycles, 'measured cycle')}, cycles cut at "
        f"{cycle_definition_md(side)}"
    )


def _title(comparison: Comparison) -> str:
    n, a = comparison.normal, comparison.abnormal
    kind = "Strict Performance Comparison" if comparison.options.seed_compatible else (
        "Performance comparison")
    return (
        f"# {kind}: {md_cell(n.label)} vs {md_cell(a.label)}\n\n"
        f"{_side_line(n)}\n{_side_line(a)}\n"
    )


def _notes(comparison: Comparison) -> str:
    if not comparison.notes:
        return ""
    # one blockquote per note: consecutive "> " lines would merge into one paragraph
    return "\n\n".join(f"> **Note:** {md_cell(note)}" for note in comparison.notes) + "\n"


# ----------------------------------------------------------------------------- section 1


def _summary_section(comparison: Comparison) -> str:
    n, a, change = comparison.normal, comparison.abnormal, comparison.cycle_time
    headers = ["Metric", md_cell(n.label), md_cell(a.label),
               f"Δ ({md_cell(a.label)} − {md_cell(n.label)})", "Change (%)"]
    compared = change.comparable
    rows = [
        ["Measured cycles", fmt_int(n.n_cycles), fmt_int(a.n_cycles),
         f"{a.n_cycles - n.n_cycles:+,d}", "-"],
        ["Runs", fmt_int(n.n_runs), fmt_int(a.n_runs), f"{a.n_runs - n.n_runs:+,d}", "-"],
        ["Mean cycle time (ms)", fmt_ms(n.cycle_ms_mean), fmt_ms(a.cycle_ms_mean),
         fmt_ms(change.delta_ms, signed=True) if compared else "not compared",
         fmt_pct(change.delta_pct, signed=True) if compared else "not compared"],
        ["Median cycle time (ms)", fmt_ms(n.cycle_ms_median), fmt_ms(a.cycle_ms_median),
         fmt_ms(a.cycle_ms_median - n.cycle_ms_median, signed=True) if compared
         else "not compared",
         fmt_pct((a.cycle_ms_median / n.cycle_ms_median - 1) * 100, signed=True)
         if compared and n.cycle_ms_median else "not compared" if not compared else NA],
    ]
    out = ["## 1. High-Level Performance Summary", "",
           pipe_table(headers, rows, right=(1, 2, 3, 4)), ""]
    if compared and change.verdict == "insufficient data":
        out.append(
            "**Verdict: insufficient data.** A side has too few cycles or runs to test the "
            f"change of mean cycle time ({fmt_pct(change.delta_pct, signed=True)} as measured)."
        )
    elif compared:
        out.append(
            f"**Verdict: {change.verdict}.** Mean cycle time changed by "
            f"{fmt_pct(change.delta_pct, signed=True)} (95 % interval "
            f"{fmt_interval(change.ci_low_pct, change.ci_high_pct, 'pct')}, "
            f"{p_text(change.p_value)}; a change counts when it exceeds "
            f"{fmt_pct(comparison.options.practical_threshold_pct)} with p < "
            f"{fmt_num(comparison.options.alpha, 3)})."
        )
    else:
        out.append(
            "**Cycle times not compared:** the two sides' cycles were cut differently "
            f"({cycle_definition_md(n)} vs {cycle_definition_md(a)}); only shares "
            "of cycle time (β) and metrics (μ) are compared below."
        )
    out.append("")
    if comparison.devices:
        out += [_device_table(comparison), ""]
    return "\n".join(out)




def _device_table(comparison: Comparison) -> str:
    n, a = comparison.normal, comparison.abnormal
    headers = ["Device", f"GPU busy, {md_cell(n.label)} (ms/cycle)",
               f"GPU busy, {md_cell(a.label)} (ms/cycle)", "Change (%)", "Verdict"]
    rows = [
        [device_cell(d.device, d.pid, comparison), fmt_ms(d.busy_ms_normal),
         fmt_ms(d.busy_ms_abnormal),
         fmt_pct(d.delta_pct, signed=True) if comparison.cycle_time.comparable
         else "not compared", d.verdict]
        for d in comparison.devices
    ]
    return "Per device (kernel time per cycle):\n\n" + pipe_table(headers, rows, right=(1, 2, 3))


# ----------------------------------------------------------------------------- section 2


def _rank_section(comparison: Comparison) -> str:
    n, a = comparison.normal, comparison.abnormal
    compared = comparison.cycle_time.comparable
    headers = ["Rank", f"{md_cell(n.label)} (ms)", f"{md_cell(a.label)} (ms)"]
    if compared:
        headers += ["Δ (ms)", "Δ (%)"]
    total = max(len(n.cycle_ms_desc), len(a.cycle_ms_desc))
    rows: list[list[str]] = []
    for rank in range(min(total, MAX_RANKS)):
        t_n = n.cycle_ms_desc[rank] if rank < len(n.cycle_ms_desc) else None
        t_a = a.cycle_ms_desc[rank] if rank < len(a.cycle_ms_desc) else None
        cells = [fmt_int(rank + 1), "-" if t_n is None else fmt_ms(t_n),
                 "-" if t_a is None else fmt_ms(t_a)]
        if compared:
            if t_n is None or t_a is None:
                cells += ["-", "-"]
            else:
                pct = fmt_pct((t_a / t_n - 1) * 100, signed=True) if t_n else NA
                cells += [fmt_ms(t_a - t_n, signed=True), pct]
        rows.append(cells)
    out = ["## 2. Cycle Duration Distribution Comparison", "",
           "Cycles of each side sorted longest first; rank *k* compares the *k*-th longest "
           "cycles.", "", pipe_table(headers, rows, right=tuple(range(len(headers)))), ""]
    if total > MAX_RANKS:
        out += [f"{fmt_int(total - MAX_RANKS)} more ranks not shown (all cycle times are in "
                "`--format json`).", ""]
    return "\n".join(out)




# ----------------------------------------------------------------------------- section 4


def _inventory_section(comparison: Comparison, figures: FigureLinks | None = None) -> str:
    out = ["## 4. Kernel inventory changes", "", *image_line(figures, "inventory")]
    if not comparison.inventory:
        out += ["Both sides ran the same set of functions.", ""]
        return "\n".join(out)
    out += ["Functions found on one side only. They are listed here with their time per cycle "
            "instead of being compared against zero.", ""]
    rows = [
        [md_cell(display_name(inv.function)), device_cell(inv.device, inv.pid, comparison),
         inv.change, fmt_ms(inv.time_ms_per_cycle), fmt_num(inv.launches_per_cycle)]
        for inv in comparison.inventory
    ]
    headers = ["Function", "Device", "Change", "Time per cycle (ms)", "Launches per cycle"]
    out += [pipe_table(headers, rows, right=(3, 4)), ""]
    return "\n".join(out)


# ----------------------------------------------------------------------------- section 5


def _environment_section(comparison: Comparison) -> str:
    n, a = comparison.normal, comparison.abnormal
    normal_env, abnormal_env = dict(n.environment), dict(a.environment)
    keys = [k for k, _ in n.environment] + [k for k, _ in a.environment if k not in normal_env]
    out = ["## 5. Environment", ""]
    if not keys:
        return "\n".join([*out, "No environment recorded (imported data).", ""])
    rows: list[list[str]] = []
    n_diff = 0
    for key in keys:
        v_n, v_a = normal_env.get(key, "-"), abnormal_env.get(key, "-")
        same = v_n == v_a
        n_diff += not same
        rows.append([md_cell(key), md_cell(v_n) if same else f"**{md_cell(v_n)}**",
                     md_cell(v_a) if same else f"**{md_cell(v_a)}**", "yes" if same else "**no**"])
    headers = ["Item", md_cell(n.label), md_cell(a.label), "Same"]
    out += [pipe_table(headers, rows), ""]
    if n_diff:
        out += [f"{fmt_int(n_diff)} item(s) differ (in bold): a difference here can explain a "
                "change by itself.", ""]
    return "\n".join(out)


# ----------------------------------------------------------------------------- section 6


def _legend_section(comparison: Comparison) -> str:
    opts = comparison.options
    mde = comparison.mde_pct
    metrics = {r.metric for r in comparison.rows} | {
        m.metric for f in comparison.findings for m in f.metric_moves}
    aliases = [f"{md_code(metric_name(m))} = {md_code(m)}"
               for m in sorted(metrics) if metric_name(m) != m]
    lines = [
        "## 6. Legend",
        "- **β (Beta)**: share of cycle time spent in the function, % (can exceed 100 for CPU "
        "pseudo-functions that run on several cores).",
        "- **μ (Mu)**: time-weighted mean of a resource metric while the function ran.",
        "- **Device**: the device the function ran on (GPU index, or Host for CPU functions).",
        "- **Z-Score(β / μ / log_μ)**: the change divided by a standard error that includes both "
        "sides plus a variance floor"
        + (" (seed-compatible mode: divided by the normal side's standard deviation, as "
           "LatencyPrism does)" if opts.seed_compatible else "") + ".",
        "- **p-value / U-test p**: Welch's t-test and the Mann-Whitney U test; `n/a` when a test "
        "cannot run (a constant metric, too few samples), never 0.",
        "- **Suspicion Score**: `|Δβ| * (|Z-Score(β)| + |Z-Score(log_μ)|)`, LatencyPrism's "
        "ranking score.",
        "- **q-value**: Benjamini-Hochberg adjusted p-value across all tests of this report "
        "(false-discovery rate).",
        "- **Time Δ**: change of the mean time spent in the function per cycle, with a 95 % "
        "bootstrap interval.",
        "- **Verdict**: *slower* / *faster* need q < α **and** a time change above the practical "
        "threshold; *no change* otherwise; *insufficient data* when a side has too few samples; "
        "*appeared* / *vanished*: present on one side only (section 4).",
        f"- **Test unit**: {TEST_UNIT_TEXT[comparison.test_unit]}. The method, with its "
        "reasons and limits: docs/explanation/statistics.md.",
        f"- **Settings**: α = {fmt_num(opts.alpha, 3)}; practical threshold = "
        f"{fmt_pct(opts.practical_threshold_pct)} of cycle time; minimum detectable change "
        f"(MDE) = {fmt_pct(mde) if mde == mde else NA} of cycle time; "
        f"{fmt_int(opts.bootstrap_resamples)} bootstrap resamples, seed {opts.seed}.",
        "- **Numbers**: thousands separators and fixed decimals (ms: 3, %: 2, μ: 2, or 4 "
        "below 0.1; others: 2); "
        "p and q below 0.001 print as `<0.001`; `n/a` = not defined.",
        *([f"- **Metric names** shortened in this report: {'; '.join(aliases)}."]
          if aliases else []),
        f"- **Exit codes** of `perfdiff compare`: {ExitCode.OK} report written; "
        f"{ExitCode.REGRESSION} regression above `--fail-on-regression`; {ExitCode.USAGE} bad "
        f"usage; {ExitCode.BAD_INPUT} bad input file; {ExitCode.INCOMPARABLE} runs not "
        f"comparable (use `--force`); {ExitCode.INTERNAL} internal error "
        "(docs/reference/exit-codes.md).",
    ]
    return "\n".join(lines) + "\n"


