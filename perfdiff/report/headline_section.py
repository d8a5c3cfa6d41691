"""The report's first screen: the verdict, where the cycle time went, the first findings and
what replaced what.

Why first: a reader decides from the first screen what to look at; the long tables (cycle
ranks, the detailed comparison, the inventory) come after it. Everything here was built by
``analysis`` (``headline.py``, ``replacements.py``, ``few_cycles.py``); this module only
formats it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfdiff.analysis.model import (
    Comparison,
    DescribedChange,
    Finding,
    Headline,
    HeadlinePart,
    Replacement,
)
from perfdiff.report.format import (
    PROSE_NAME_WIDTH,
    display_name,
    fmt_int,
    fmt_interval,
    fmt_ms,
    fmt_num,
    fmt_pct,
    md_cell,
    md_code,
)
from perfdiff.report.markdown_text import device_text, q_text
from perfdiff.report.table import pipe_table

HEADLINE_PARTS = 6  # parts listed before the rest is summed into one row
FIRST_FINDINGS = 3
DESCRIBED_SHOWN = 8
MEMBER_NAMES = 3  # kernel names shown per side of a replacement
MEMBER_NAME_WIDTH = 60

IDLE_TEXT = "GPU idle (host: Python, launches, synchronisation)"


def headline_section(comparison: Comparison) -> str:
    """``## Headline``: nothing in ``--seed-compatible`` mode (LatencyPrism's own layout)."""
    if comparison.options.seed_compatible:
        return ""
    lines = ["## Headline", "", _verdict_line(comparison)]
    split = comparison.headline
    if split is not None:
        lines += ["", *_split_lines(split, comparison)]
    lines += ["", *_first_lines(comparison)]
    if comparison.replacements:
        lines += ["", *_replacement_lines(comparison)]
    return "\n".join(lines) + "\n"


def _verdict_line(comparison: Comparison) -> str:
    change = comparison.cycle_time
    if not change.comparable:
        return ("**Cycle times not compared**: the two sides' cycles were cut differently "
                "(see the notes); the findings compare shares of cycle time.")
    pct = fmt_pct(change.delta_pct, signed=True)
    if change.verdict == "no change" and math.isfinite(change.ci_low_pct):
        # the interval beside the word: "No change" at +45.5 % is a change this pair cannot
        # tell from noise, not a change measured to be small (one run a side of a host-bound
        # step, train-step fixtures: [-1.8, +100.0] %)
        pct += (f"; 95 % interval [{fmt_pct(change.ci_low_pct, signed=True)}, "
                f"{fmt_pct(change.ci_high_pct, signed=True)}], not significant")
    size = f"mean cycle time {fmt_ms(change.delta_ms, signed=True)} ms ({pct})"
    split = comparison.headline
    work = ""
    if split is not None and split.gpu_work_ms_normal > 0:
        rel = 100.0 * split.gpu_work_delta_ms / split.gpu_work_ms_normal
        work = (f"; GPU work per cycle on {md_code(split.device)} "
                f"{fmt_ms(split.gpu_work_ms_normal)} → {fmt_ms(split.gpu_work_ms_abnormal)} ms "
                f"({fmt_pct(rel, signed=True)})")
    verdict = change.verdict
    if verdict == "insufficient data":
        return (f"**Not tested** ({_cycles_text(comparison)}): {size}{work}.")
    return f"**{verdict.capitalize()}**: {size}{work}."


def _cycles_text(comparison: Comparison) -> str:
    n, a = comparison.normal.n_cycles, comparison.abnormal.n_cycles
    return f"{fmt_int(n)} vs {fmt_int(a)} cycles"


def _split_lines(split: Headline, comparison: Comparison) -> list[str]:
    lead: list[str] = []
    if split.traced and split.host_bound:
        lead = [
            "Cycles are host-bound under tracing: the recording's host cost per launch is "
            "inside GPU idle, so the change of **GPU work** is the program's own; compare bare "
            "runs (`perfdiff bench`) for the wall-clock effect.",
            "",
        ]
    shown = list(split.parts[:HEADLINE_PARTS])
    rest = split.parts[HEADLINE_PARTS:]
    rows = [
        [md_cell(IDLE_TEXT if p.kind == "idle" else p.label), fmt_ms(p.ms_normal),
         fmt_ms(p.ms_abnormal), fmt_ms(p.delta_ms, signed=True), _mix_cell(p.detail_normal,
                                                                       p.detail_abnormal)]
        for p in shown
    ]
    if rest:
        rows.append([md_cell(rest_label(rest)),
                     fmt_ms(sum(p.ms_normal for p in rest)),
                     fmt_ms(sum(p.ms_abnormal for p in rest)),
                     fmt_ms(sum(p.delta_ms for p in rest), signed=True), ""])
    rows.append(["**cycle time**", fmt_ms(split.cycle_ms_normal), fmt_ms(split.cycle_ms_abnormal),
                 f"**{fmt_ms(split.delta_ms, signed=True)}**", ""])
    where = md_code(device_text(split.device, split.pid, comparison))
    pooled = ("" if split.processes < 2 else
              f", every cycle of the {fmt_int(split.processes)} processes pooled as the mean "
              "cycle time is (each process on its busiest device)")
    title = (f"Where the cycle time went on {where}{pooled}, mean ms per cycle (the parts add "
             "up to the change; families sum their kernels' and copies' time):")
    table = pipe_table(
        ["Part", md_cell(comparison.normal.label), md_cell(comparison.abnormal.label), "Δ",
         "precision, engine (normal → abnormal)"],
        rows, right=[1, 2, 3])
    return [*lead, title, "", table.rstrip("\n")]


def rest_label(rest: Sequence[HeadlinePart]) -> str:
    """The parts summed into one row, named (a bare "3 more parts" left readers guessing which):
    ``other parts: kernel overlap, softmax, reduction``; past four names, how many more."""
    names = ["GPU idle" if p.kind == "idle" else p.label for p in rest]
    shown = ", ".join(names[:4])
    more = f" and {fmt_int(len(names) - 4)} more" if len(names) > 4 else ""
    return f"other parts: {shown}{more}"


def _mix_cell(before: str, after: str) -> str:
    if not before and not after:
        return ""
    if before == after:
        return md_cell(before)
    return md_cell(f"{before or '-'} → {after or '-'}")


def _first_lines(comparison: Comparison) -> list[str]:
    if comparison.described:
        return _described_lines(comparison)
    findings = comparison.findings[:FIRST_FINDINGS]
    if not findings:
        return ["**First findings:** none; no function's time changed significantly "
                "(section 3 lists the largest changes and why they are not findings)."]
    lines = ["**First findings** (tested; section 3 has the evidence):", ""]
    for i, finding in enumerate(findings, 1):
        lines.append(f"{i}. {_finding_text(finding, comparison)}")
    return lines


def _finding_text(finding: Finding, comparison: Comparison) -> str:
    name = md_code(display_name(finding.function, PROSE_NAME_WIDTH))
    where = md_code(device_text(finding.device, finding.pid, comparison))
    if math.isnan(finding.time_delta_ms):
        size = (f"{fmt_pct(finding.cycle_share_pct_normal)} → "
                f"{fmt_pct(finding.cycle_share_pct_abnormal)} of cycle time")
    else:
        size = (f"{fmt_ms(finding.time_ms_normal)} → {fmt_ms(finding.time_ms_abnormal)} ms per "
                f"cycle ({fmt_ms(finding.time_delta_ms, signed=True)} ms, 95 % interval "
                f"{fmt_interval(finding.time_ci_low_ms, finding.time_ci_high_ms)} ms)")
    return f"{name} on {where}: **{finding.verdict}**, {size}, {q_text(finding.q_value)}."


def _described_lines(comparison: Comparison) -> list[str]:
    lines = [
        f"**Largest changes, not tested ({_cycles_text(comparison)})**: too few cycles for a "
        "test to tell a change from noise; ranked by size, appeared, vanished and replaced "
        "kernels included. Record more cycles to test them.",
        "",
    ]
    for i, change in enumerate(comparison.described[:DESCRIBED_SHOWN], 1):
        lines.append(f"{i}. {_described_text(change, comparison)}")
    return lines


def _described_text(change: DescribedChange, comparison: Comparison) -> str:
    name = md_code(display_name(change.function, PROSE_NAME_WIDTH))
    where = md_code(device_text(change.device, change.pid, comparison))
    return (f"{name} on {where}: {change.change}, {fmt_ms(change.time_ms_normal)} → "
            f"{fmt_ms(change.time_ms_abnormal)} ms per cycle "
            f"({fmt_ms(change.delta_ms, signed=True)} ms).")


def _replacement_lines(comparison: Comparison) -> list[str]:
    rows = {(r.function): r for r in comparison.rows}
    lines = ["**What replaced what** (kernels that took others' place in the launch order, in "
             "at least 90 % of the cycles on both sides; each is a row of section 3):", ""]
    ranked = sorted(comparison.replacements, key=lambda r: (
        -abs(_delta(rows.get(r.function))), r.function))
    for item in ranked:
        lines.append(f"- {_replacement_text(item, rows.get(item.function))}")
    return lines


def _delta(row: object) -> float:
    value = getattr(row, "time_delta_ms", math.nan)
    return float(value) if isinstance(value, float) and math.isfinite(value) else 0.0


def _replacement_text(item: Replacement, row: object) -> str:
    label = md_cell(item.function.removeprefix("[replaced] "))
    text = (f"**{label}**: {fmt_num(item.launches_normal, 1)} → "
            f"{fmt_num(item.launches_abnormal, 1)} launches per cycle")
    if row is not None:
        n_ms = getattr(row, "time_ms_normal", math.nan)
        a_ms = getattr(row, "time_ms_abnormal", math.nan)
        verdict = getattr(row, "verdict", "")
        verdict = "not tested" if verdict == "insufficient data" else verdict
        text += f", {fmt_ms(n_ms)} → {fmt_ms(a_ms)} ms per cycle ({verdict})"
    if item.members:
        first = item.members[0]
        text += (f"; e.g. {_names(first.before)} → {_names(first.after)}")
        if item.n_members > 1:
            text += f" ({fmt_int(item.n_members)} variants)"
    return text + "."


def _names(names: tuple[str, ...]) -> str:
    shown = [md_code(display_name(n, MEMBER_NAME_WIDTH)) for n in names[:MEMBER_NAMES]]
    more = f" + {fmt_int(len(names) - MEMBER_NAMES)} more" if len(names) > MEMBER_NAMES else ""
    return " + ".join(shown) + more
