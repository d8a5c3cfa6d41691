"""A :class:`RanksReport` as markdown (for people) or JSON (every number, versioned).

Why its own renderer: ``perfdiff ranks`` answers another question than ``compare`` (which rank
of one job the others wait for); the report states the verdict first, then the kernels that make
the straggler slow and where the others wait, then every rank's numbers.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from perfdiff import __version__
from perfdiff.analysis.ranks.model import KernelExcess, RankRow, RanksReport
from perfdiff.report.format import display_name, fmt_int, fmt_ms, fmt_p, fmt_pct, md_cell, md_code
from perfdiff.report.json_report import clean_json
from perfdiff.report.table import pipe_table

JSON_FORMAT = "perfdiff.ranks"
JSON_FORMAT_VERSION = "1.0"


def render_ranks_markdown(report: RanksReport) -> str:
    """The straggler report as markdown."""
    lines = [f"# Ranks of {md_code(report.workload or report.source)}", "",
             f"{fmt_int(report.n_ranks)} ranks, {fmt_int(report.n_cycles)} cycles common to "
             f"every rank; source {md_code(report.source)}.", "", "## Verdict", ""]
    stragglers = report.stragglers
    if not stragglers:
        lines.append("**No straggler**: no rank does significantly more GPU work per cycle "
                     "than the others while waiting no longer in collectives.")
    for row in stragglers:
        lines += _straggler(row, report.options.top)
    while lines[-1] == "":
        lines.pop()
    lines += ["", "## Every rank (per cycle, mean)", "", _rank_table(report.ranks), "",
              "## Notes", ""]
    lines += [f"- {note}" for note in report.notes]
    return "\n".join(lines) + "\n"


def _straggler(row: RankRow, top: int) -> list[str]:
    lines = [f"**{row.rank} is a straggler**: {fmt_ms(row.work_ms)} ms of GPU work per cycle "
             f"against {fmt_ms(row.others_work_ms)} ms on the other ranks (median), "
             f"{fmt_ms(row.excess_work_ms, signed=True)} ms = "
             f"{fmt_pct(row.excess_work_pct, signed=True)} of its cycle (q {fmt_p(row.q_value)}); "
             f"it waits {fmt_ms(row.wait_ms)} ms per cycle in collectives, the others "
             f"{fmt_ms(row.others_wait_ms)} ms.", ""]
    if row.kernels:
        lines += [f"Kernels that make {row.rank} slow:", "",
                  _kernel_table(row.kernels[:top], "excess (ms)"), ""]
        if len(row.kernels) > top:
            lines += [f"({len(row.kernels) - top} more in `--format json`.)", ""]
    if row.waits:
        lines += ["Collectives the other ranks wait in:", "",
                  _kernel_table(row.waits[:top], "others wait longer (ms)"), ""]
    return lines


def _kernel_table(kernels: tuple[KernelExcess, ...], what: str) -> str:
    rows = [[md_cell(display_name(k.function)), fmt_ms(k.rank_ms), fmt_ms(k.others_ms),
             fmt_ms(abs(k.excess_ms)), fmt_pct(k.share_of_excess_pct), fmt_p(k.q_value)]
            for k in kernels]
    return pipe_table(["Kernel", "this rank (ms)", "others (ms)", what, "of the excess", "q"],
                      rows, right=range(1, 6))


def _rank_table(ranks: tuple[RankRow, ...]) -> str:
    rows = [[md_cell(r.rank), md_cell(", ".join(r.devices) or "n/a"), fmt_ms(r.cycle_ms),
             fmt_ms(r.work_ms), fmt_ms(r.wait_ms), fmt_ms(r.excess_work_ms, signed=True),
             fmt_pct(r.excess_work_pct, signed=True), fmt_p(r.q_value), r.verdict]
            for r in ranks]
    return pipe_table(["Rank", "Devices", "cycle (ms)", "work (ms)", "wait (ms)",
                       "excess work (ms)", "of cycle", "q", "verdict"], rows,
                      right=range(2, 8))


def ranks_to_dict(report: RanksReport) -> dict[str, Any]:
    """The report as plain data in a versioned envelope (NaN -> null)."""
    body = asdict(report)
    body["stragglers"] = [r.rank for r in report.stragglers]
    return {"format": JSON_FORMAT, "version": JSON_FORMAT_VERSION, "tool_version": __version__,
            "ranks_report": clean_json(body)}


def render_ranks_json(report: RanksReport) -> str:
    """``--format json``."""
    return json.dumps(ranks_to_dict(report), indent=2, allow_nan=False) + "\n"


__all__ = ["JSON_FORMAT", "JSON_FORMAT_VERSION", "ranks_to_dict", "render_ranks_json",
           "render_ranks_markdown"]
