"""A rich rendering of the report for a terminal (``perfdiff compare`` when stdout is a tty).

Why a separate renderer rather than rendering the markdown: a terminal is narrow, so this view
shows the summary, the key findings and the top rows of the table with fewer columns; the
markdown (``-o report.md`` or a pipe) stays the document to attach to a ticket. It uses the same
number format functions, so the two never disagree on a number.
"""

from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from perfdiff.analysis.model import Comparison
from perfdiff.report.format import (
    display_name,
    fmt_int,
    fmt_interval,
    fmt_metric,
    fmt_ms,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pp,
    metric_name,
)
from perfdiff.report.headline_section import HEADLINE_PARTS, rest_label

TERMINAL_ROWS = 15
_VERDICT_STYLE = {"slower": "bold red", "faster": "bold green", "appeared": "yellow",
                  "vanished": "yellow", "insufficient data": "dim", "no change": ""}


def _verdict(verdict: str) -> str:
    style = _VERDICT_STYLE.get(verdict, "")
    return f"[{style}]{verdict}[/]" if style else verdict


def render_terminal(comparison: Comparison, console: Console) -> None:
    """Print the comparison to ``console`` (names escaped: rich markup in names is inert)."""
    n, a, change = comparison.normal, comparison.abnormal, comparison.cycle_time
    console.rule(f"perfdiff: {escape(n.label)} vs {escape(a.label)}")
    for note in comparison.notes:
        console.print(f"[yellow]Note:[/] {escape(note)}")
    summary = Table(box=box.SIMPLE_HEAD, title="Cycle time")
    for col in ("", n.label, a.label, "Δ", "Change"):
        summary.add_column(escape(col), justify="right" if col else "left")
    summary.add_row("cycles", fmt_int(n.n_cycles), fmt_int(a.n_cycles),
                    f"{a.n_cycles - n.n_cycles:+,d}", "")
    if change.comparable:
        summary.add_row("mean (ms)", fmt_ms(n.cycle_ms_mean), fmt_ms(a.cycle_ms_mean),
                        fmt_ms(change.delta_ms, signed=True),
                        fmt_pct(change.delta_pct, signed=True))
        summary.add_row("median (ms)", fmt_ms(n.cycle_ms_median), fmt_ms(a.cycle_ms_median),
                        "", "")
    console.print(summary)
    if change.comparable:
        console.print(
            f"Verdict: {_verdict(change.verdict)}  (95 % interval "
            f"{fmt_interval(change.ci_low_pct, change.ci_high_pct, 'pct')}, "
            f"p {fmt_p(change.p_value)}; test unit: {comparison.test_unit})"
        )
    else:
        console.print("[yellow]Cycle times not compared: cycles were cut differently.[/]")
    _headline(comparison, console)
    _findings(comparison, console)
    _rows(comparison, console)
    for inv in comparison.inventory[:TERMINAL_ROWS]:  # a precision change lists dozens
        console.print(f"{_verdict(inv.change)}: {escape(display_name(inv.function, 60))} "
                      f"({escape(inv.device)}, {fmt_ms(inv.time_ms_per_cycle)} ms/cycle)")
    if len(comparison.inventory) > TERMINAL_ROWS:
        console.print(f"... and {len(comparison.inventory) - TERMINAL_ROWS} more kernels that "
                      "appeared or vanished (section 4 of the report)")
    console.print("[dim]Full report: --format markdown (or pipe the output); "
                  "all rows and full names: --format json[/]")


def _headline(comparison: Comparison, console: Console) -> None:
    """Where the cycle-time change went (the headline's parts, largest first): on the first
    screen, before the findings, as in the markdown report."""
    split = comparison.headline
    if split is None:
        return
    unit = ("ms per cycle" if split.processes < 2 else
            f"{fmt_int(split.processes)} processes pooled, ms per cycle")
    table = Table(box=box.SIMPLE_HEAD,
                  title=f"Where the cycle time went ({escape(split.device)}, {unit})")
    for col in ("Part", comparison.normal.label, comparison.abnormal.label, "Δ"):
        table.add_column(escape(col), justify="left" if col == "Part" else "right")
    for part in split.parts[:HEADLINE_PARTS]:
        table.add_row(escape(part.label), fmt_ms(part.ms_normal), fmt_ms(part.ms_abnormal),
                      fmt_ms(part.delta_ms, signed=True))
    rest = split.parts[HEADLINE_PARTS:]
    if rest:
        table.add_row(escape(rest_label(rest)), fmt_ms(sum(p.ms_normal for p in rest)),
                      fmt_ms(sum(p.ms_abnormal for p in rest)),
                      fmt_ms(sum(p.delta_ms for p in rest), signed=True))
    table.add_row("cycle time", fmt_ms(split.cycle_ms_normal), fmt_ms(split.cycle_ms_abnormal),
                  fmt_ms(split.delta_ms, signed=True))
    console.print(table)


def _findings(comparison: Comparison, console: Console) -> None:
    console.rule("Key findings")
    findings = comparison.findings[: max(comparison.options.top, 0)]
    if not findings:
        console.print("No function's time changed significantly.")
    for f in findings:
        console.print(
            f"[bold]{escape(display_name(f.function, 80))}[/] on {escape(f.device)}: "
            f"{_verdict(f.verdict)}, {fmt_ms(f.time_ms_normal)} → {fmt_ms(f.time_ms_abnormal)} "
            f"ms/cycle ({fmt_ms(f.time_delta_ms, signed=True)} ms), β "
            f"{fmt_pct(f.cycle_share_pct_normal)} → {fmt_pct(f.cycle_share_pct_abnormal)} "
            f"({fmt_pp(f.delta_cycle_share_pp)}), "
            f"q {fmt_p(f.q_value)}"
        )
        for m in f.metric_moves:
            console.print(
                f"    {escape(metric_name(m.metric))}: {fmt_metric(m.metric_mean_normal)} → "
                f"{fmt_metric(m.metric_mean_abnormal)} (p {fmt_p(m.p_value)})"
            )


_ROW_COLUMNS = (("Device", 6), ("ms/cycle n → a", 21), ("Δ (ms)", 9), ("Δβ (pp)", 7),
                ("q", 6), ("Verdict", 10))
_NARROW_COLUMNS = ("Δ (ms)", "q", "Verdict")  # what fits beside a name on an 80-column terminal


def _rows(comparison: Comparison, console: Console) -> None:
    """One line per function (its first row in the ranking): a terminal is too narrow for the
    per-metric table, which the markdown and JSON outputs keep. Numbers get fixed widths; the
    name takes what is left, shortened in the middle."""
    columns = [(c, w) for c, w in _ROW_COLUMNS
               if console.width >= 110 or c in _NARROW_COLUMNS]
    name_width = max(16, console.width - 2 - sum(w + 2 for _, w in columns) - 2)
    table = Table(box=box.SIMPLE_HEAD, title="Functions by size of the change")
    table.add_column("Function", width=name_width, no_wrap=True, overflow="ellipsis")
    for col, width in columns:
        table.add_column(col, justify="left" if col in ("Device", "Verdict") else "right",
                         no_wrap=True, width=width, overflow="fold")
    seen: set[tuple[str, str, int | None]] = set()
    first_rows = []
    for r in comparison.rows:  # one line per function: its first row in the ranking
        key = (r.function, r.device, r.pid)
        if key not in seen:
            seen.add(key)
            first_rows.append(r)
    # sorted by the size of the change of time per cycle (the verdict is in its column)
    first_rows.sort(key=lambda r: -abs(r.time_delta_ms) if math.isfinite(r.time_delta_ms)
                    else math.inf)
    for r in first_rows[:TERMINAL_ROWS]:
        cells = {
            "Device": escape(r.device),
            "ms/cycle n → a": f"{fmt_ms(r.time_ms_normal)} → {fmt_ms(r.time_ms_abnormal)}",
            "Δ (ms)": fmt_ms(r.time_delta_ms, signed=True),
            "Δβ (pp)": fmt_num(r.delta_cycle_share_pp, signed=True),
            "q": fmt_p(r.q_value),
            "Verdict": _verdict(r.verdict),
        }
        table.add_row(escape(display_name(r.function, name_width)),
                      *(cells[c] for c, _ in columns))
    console.print(table)
