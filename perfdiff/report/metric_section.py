"""Section 3 of the markdown report: Overview, Key Findings, Recommendation, Detailed table.

Why its own module: it is the heart of the report (what changed, by how much, how sure, and
which resource moved with it) and the longest section; the seed's columns come first in the
seed's order, then ours (q-value, time change with its interval, verdict).
"""

from __future__ import annotations

import math

from perfdiff.analysis.model import Comparison, Finding, MetricRow
from perfdiff.report.figure_links import FigureLinks, image_line
from perfdiff.report.format import (
    NA,
    PROSE_NAME_WIDTH,
    display_name,
    fmt_int,
    fmt_interval,
    fmt_metric,
    fmt_ms,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pp,
    md_cell,
    md_code,
    metric_name,
)
from perfdiff.report.markdown_text import (
    TEST_UNIT_TEXT,
    count,
    device_cell,
    device_text,
    moved,
    p_text,
    q_text,
)
from perfdiff.report.table import pipe_table


def metric_section(comparison: Comparison, max_rows: int | None,
                   figures: FigureLinks | None = None) -> str:
    """Section 3 as markdown; ``max_rows`` limits the detailed table (None: every row);
    ``figures``: the forest plot heads the key findings, the μ distributions follow them."""
    out = ["## 3. In-depth Core Metric Comparison", "", "### Overview", "",
           _overview(comparison), "", "### Key Findings", "",
           *image_line(figures, "what-changed")]
    out += _key_findings(comparison)
    out += _launch_change_lines(comparison)
    why = image_line(figures, "why")
    if why:
        out += ["", why[0]]
    out += ["", _recommendation(comparison), "", "### Detailed comparison table", ""]
    out += _detailed_table(comparison, max_rows)
    return "\n".join(out) + "\n"


MAX_LAUNCH_CHANGES = 12  # functions listed by name; the rest are counted


def _launch_change_lines(comparison: Comparison) -> list[str]:
    """Functions launched a different number of times per cycle (the same kernels doing more
    or less work: recomputation, a loop instead of a fused kernel), largest time change first."""
    changes = comparison.launch_changes
    if not changes:
        return []
    lines = ["", f"Launched a different number of times per cycle "
                 f"({count(len(changes), 'function')}; same kernels, different amount of work):"]
    for change in changes[:MAX_LAUNCH_CHANGES]:
        name = md_code(display_name(change.function, PROSE_NAME_WIDTH))
        where = md_code(device_text(change.device, change.pid, comparison))
        lines.append(
            f"- **{name}** on {where}: {fmt_num(change.launches_normal, 1)} → "
            f"{fmt_num(change.launches_abnormal, 1)} launches per cycle, "
            f"{fmt_ms(change.time_ms_normal)} → {fmt_ms(change.time_ms_abnormal)} ms per cycle."
        )
    if len(changes) > MAX_LAUNCH_CHANGES:
        lines.append(f"- … and {count(len(changes) - MAX_LAUNCH_CHANGES, 'more function')} "
                     "(`--format json` lists all).")
    return lines


def _changed_rows(comparison: Comparison) -> list[MetricRow]:
    return [r for r in comparison.rows if r.verdict in ("slower", "faster")]


def _overview(comparison: Comparison) -> str:
    opts = comparison.options
    n_rows = len(comparison.rows)
    functions = {(r.function, r.device, r.pid) for r in comparison.rows}
    changed = _changed_rows(comparison)
    changed_functions = {(r.function, r.device, r.pid) for r in changed}
    text = (
        f"{fmt_int(n_rows)} (function, metric, device) rows over {fmt_int(len(functions))} "
        f"functions were tested on {TEST_UNIT_TEXT[comparison.test_unit]}. "
    )
    if comparison.options.seed_compatible:
        text += "Rows are ranked by Suspicion Score, as in LatencyPrism's report. "
    text += (
        f"{count(len(changed_functions), 'function')} changed: q < {fmt_num(opts.alpha, 3)} "
        f"(Benjamini-Hochberg) and a change of time per cycle above "
        f"{fmt_pct(opts.practical_threshold_pct)} of cycle time."
    )
    if comparison.findings:
        top = comparison.findings[0]
        text += (
            f" The primary difference between {md_code(comparison.normal.label)} and "
            f"{md_code(comparison.abnormal.label)} appears to be driven by "
            f"**{md_code(display_name(top.function, PROSE_NAME_WIDTH))}**, which got "
            f"**{top.verdict}**."
        )
    return text


def _finding_lines(finding: Finding, comparison: Comparison) -> list[str]:
    where = md_code(device_text(finding.device, finding.pid, comparison))
    name = md_code(display_name(finding.function, PROSE_NAME_WIDTH))
    lines = [f"- **{name}** on device {where}: **{finding.verdict}**."]
    if finding.verdict in ("appeared", "vanished"):
        lines.append(f"  - Time per cycle {fmt_ms(finding.time_ms_normal)} ms → "
                     f"{fmt_ms(finding.time_ms_abnormal)} ms.")
        return lines
    if math.isnan(finding.time_ms_normal) or math.isnan(finding.time_ms_abnormal):
        lines.append("  - Time per cycle not compared (cycles were cut differently).")
    else:
        lines.append(
            f"  - Time per cycle {moved(finding.time_ms_normal, finding.time_ms_abnormal)} from "
            f"**{fmt_ms(finding.time_ms_normal)} ms** to "
            f"**{fmt_ms(finding.time_ms_abnormal)} ms** "
            f"({fmt_ms(finding.time_delta_ms, signed=True)} ms, 95 % interval "
            f"{fmt_interval(finding.time_ci_low_ms, finding.time_ci_high_ms)} ms)."
        )
    lines.append(
        f"  - Its contribution to total cycle time (β) "
        f"{moved(finding.cycle_share_pct_normal, finding.cycle_share_pct_abnormal)} from "
        f"**{fmt_pct(finding.cycle_share_pct_normal)}** to "
        f"**{fmt_pct(finding.cycle_share_pct_abnormal)}** "
        f"({fmt_pp(finding.delta_cycle_share_pp)}); {q_text(finding.q_value)}, "
        f"{p_text(finding.p_value)}."
    )
    if finding.metric_moves:
        lines.append("  - Resource metrics (μ) that moved with it:")
        for move in finding.metric_moves:
            lines.append(
                f"    - **{md_code(metric_name(move.metric))}**: "
                f"{moved(move.metric_mean_normal, move.metric_mean_abnormal)} "
                f"from {fmt_metric(move.metric_mean_normal)} "
                f"to {fmt_metric(move.metric_mean_abnormal)} "
                f"({p_text(move.p_value)})."
            )
    else:
        lines.append("  - No resource metric (μ) moved significantly with it.")
    return lines


def _key_findings(comparison: Comparison) -> list[str]:
    findings = comparison.findings[: max(comparison.options.top, 0)]
    lines: list[str] = []
    if comparison.described and not findings:
        n, a = comparison.normal.n_cycles, comparison.abnormal.n_cycles
        return [
            f"Not tested ({fmt_int(n)} vs {fmt_int(a)} cycles): too few cycles per side for a "
            "test to tell a change from noise. The headline ranks the largest changes by size "
            "(appeared, vanished and replaced kernels included); the table below has them all."
        ]
    if not findings:
        lines.append(
            "No function's time changed significantly: no row has q < "
            f"{fmt_num(comparison.options.alpha, 3)} together with a change above "
            f"{fmt_pct(comparison.options.practical_threshold_pct)} of cycle time."
        )
    for finding in findings:
        lines += _finding_lines(finding, comparison)
    hidden = len(comparison.findings) - len(findings)
    if hidden > 0:
        lines.append(f"- … and {fmt_int(hidden)} more (see the table; `--top` shows more).")
    return lines + _near_misses(comparison)


NEAR_MISSES = 3


def _near_misses(comparison: Comparison) -> list[str]:
    """The largest changes of time per cycle that are *not* findings, with the reason why.

    Why: a real but small slowdown (not significant at this sample size, or significant but
    below the practical threshold) would otherwise be invisible in the prose; naming it with its
    interval, its q-value and the reason lets the reader decide to record more cycles or lower
    ``--threshold``, without the report calling it a finding.
    """
    if not comparison.cycle_time.comparable:
        return []
    found = {(f.function, f.device, f.pid) for f in comparison.findings}
    best: dict[tuple[str, str, int | None], MetricRow] = {}
    for row in comparison.rows:
        key = (row.function, row.device, row.pid)
        if key in found or key in best or row.verdict != "no change":
            continue
        if not math.isnan(row.time_delta_ms) and row.time_delta_ms != 0:
            best[key] = row
    ranked = sorted(best.values(), key=lambda r: (-abs(r.time_delta_ms), r.function))
    if not ranked:
        return []
    opts = comparison.options
    threshold_ms = opts.practical_threshold_pct / 100.0 * comparison.normal.cycle_ms_mean
    mde = comparison.mde_pct
    lines = ["", "Largest other changes of time per cycle (verdict *no change*):"]
    for row in ranked[:NEAR_MISSES]:
        name = md_code(display_name(row.function, PROSE_NAME_WIDTH))
        where = md_code(device_text(row.device, row.pid, comparison))
        if math.isnan(row.q_value):
            why = "not tested (too few samples, or a value constant on both sides)"
        elif row.q_value < opts.alpha:
            why = (f"significant, but below the practical threshold of "
                   f"{fmt_ms(threshold_ms)} ms ({fmt_pct(opts.practical_threshold_pct)} of "
                   "cycle time)")
        else:
            why = "not significant at this number of samples" + (
                f" (minimum detectable change: {fmt_pct(mde)} of cycle time)"
                if not math.isnan(mde) else "")
        lines.append(
            f"- {name} on {where}: {fmt_ms(row.time_delta_ms, signed=True)} ms per cycle "
            f"(95 % interval {fmt_interval(row.time_ci_low_ms, row.time_ci_high_ms)} ms), "
            f"{q_text(row.q_value)}: {why}."
        )
    return lines


def _recommendation(comparison: Comparison) -> str:
    if comparison.described and not comparison.findings:
        return (
            "**Recommendation:** start with the largest changes in the headline, and record "
            "more cycles per side (at least 6; 30 or more to see changes of a few percent) to "
            "test them."
        )
    if comparison.findings:
        return (
            "**Recommendation:** start with the first function above. Its change of time per "
            "cycle is measured directly; read the μ changes beside it (clocks, utilisation, "
            "link traffic) for the resource it waited on, and check section 4 for kernels that "
            "appeared or vanished."
        )
    mde = comparison.mde_pct
    more = (
        f" Changes smaller than about {fmt_pct(mde)} of cycle time cannot be detected with "
        "this many samples: record more cycles or runs to see smaller ones."
        if mde == mde else ""
    )
    return "**Recommendation:** no function needs investigation on this evidence." + more


_SEED_HEADERS = [
    "Function Name", "Metric Name", "Device", "Suspicion Score", "β_normal(%)",
    "β_abnormal(%)", "Δβ(%)", "Z-Score(β)", "p-value(β)", "U-test p(β)", "μ_normal",
    "μ_abnormal", "Δμ", "Z-Score(μ)", "Z-Score(log_μ)", "p-value(μ)", "U-test p(μ)",
]


def _row_cells(row: MetricRow, comparison: Comparison) -> list[str]:
    cells = [
        md_cell(display_name(row.function)),
        md_cell(metric_name(row.metric)) if row.metric else "-",
        device_cell(row.device, row.pid, comparison),
        fmt_num(row.suspicion),
        fmt_num(row.cycle_share_pct_normal),
        fmt_num(row.cycle_share_pct_abnormal),
        fmt_num(row.delta_cycle_share_pp, signed=True),
        fmt_num(row.z_cycle_share),
        fmt_p(row.p_cycle_share),
        fmt_p(row.u_p_cycle_share),
        fmt_metric(row.metric_mean_normal),
        fmt_metric(row.metric_mean_abnormal),
        fmt_metric(row.delta_metric_mean, signed=True),
        fmt_num(row.z_metric_mean),
        fmt_num(row.z_log_metric_mean),
        fmt_p(row.p_metric_mean),
        fmt_p(row.u_p_metric_mean),
    ]
    if not comparison.options.seed_compatible:
        delta = fmt_ms(row.time_delta_ms, signed=True)
        interval = fmt_interval(row.time_ci_low_ms, row.time_ci_high_ms)
        cells += [fmt_p(row.q_value),
                  delta if interval == NA else f"{delta} {interval}", row.verdict]
    return cells


_EMPTY = frozenset({NA, "-", ""})


def _filled_columns(rows: list[list[str]]) -> list[int]:
    """Indices of the columns with a value in at least one row (every row counted, shown or
    not): a column n/a for a whole input (μ without PM sampling) only widens the table."""
    if not rows:
        return []
    return [i for i in range(len(rows[0])) if i == 0 or any(r[i] not in _EMPTY for r in rows)]


def _detailed_table(comparison: Comparison, max_rows: int | None) -> list[str]:
    order = ("sorted by **Suspicion Score**, as LatencyPrism does"
             if comparison.options.seed_compatible
             else "findings first (verdict, then q-value and size of the change)")
    lines = [f"One row per (function, metric, device), {order}. Long names are compacted "
             "(namespaces, parameter lists and lambda names dropped) and cut; `--format json` "
             "has them in full.", ""]
    if not comparison.rows:
        return [*lines, "No rows: neither side has functions with samples on both sides."]
    headers = list(_SEED_HEADERS)
    if not comparison.options.seed_compatible:
        headers += ["q-value", "Time Δ (ms/cycle) [95 % interval]", "Verdict"]
    shown = comparison.rows if max_rows is None else comparison.rows[:max_rows]
    rows = [_row_cells(r, comparison) for r in shown]
    keep = list(range(len(headers)))
    if not comparison.options.seed_compatible:  # LatencyPrism's layout keeps every column
        keep = _filled_columns([_row_cells(r, comparison) for r in comparison.rows])
        dropped = [headers[i] for i in range(len(headers)) if i not in keep]
        if dropped:
            lines[0] += (" Columns empty (n/a) for every row of this comparison are left out: "
                         + ", ".join(dropped) + ".")
    right = tuple(j for j, i in enumerate(keep) if 3 <= i <= 18)
    lines.append(pipe_table([headers[i] for i in keep], [[r[i] for i in keep] for r in rows],
                            right=right))
    hidden = len(comparison.rows) - len(shown)
    if hidden > 0:
        lines += ["", f"{fmt_int(hidden)} more rows not shown (`--rows 0` shows all; "
                  "`--format json` has all)."]
    return lines
