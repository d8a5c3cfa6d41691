"""``perfdiff kernels RUN``: the per-kernel table in the seeds' format, or aggregated by name.

The seeds (``kernel-table-*.txt``) list every launch in launch order as fixed-width text::

    Kernel                                                 Latency Tensor   DRAM
    elementwise_kernel_with_index                     |       4192   0.00   0.00

latency in ns, tensor-pipe and DRAM utilisation as fractions (0-1) of peak. We keep that layout
exactly for launch order, so users can diff our output against tables they already have.
``--by name`` aggregates (count, total, mean, share of GPU time) as a markdown table.

Pure formatting: the rows (selection, utilisation, grouping, ranking) are built in
:mod:`perfdiff.analysis.kernel_rows`; this module only lays them out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict

from perfdiff import __version__
from perfdiff.analysis.kernel_rows import LaunchRow, NameRow
from perfdiff.report.format import fmt_int, fmt_num, md_cell
from perfdiff.report.json_report import clean_json
from perfdiff.report.table import pipe_table
from perfdiff.schema.names import NameStyle

SEED_NAME_WIDTH = 50  # the seeds cut names to 47 characters + "..."


def _fraction(value: float) -> str:
    return "   n/a" if math.isnan(value) else f"{value:6.2f}"


def _seed_name(name: str, style: NameStyle) -> str:
    if style == "short" and len(name) > SEED_NAME_WIDTH:
        return name[: SEED_NAME_WIDTH - 3] + "..."
    return name.ljust(SEED_NAME_WIDTH)


def render_launch_table(rows: list[LaunchRow], names: NameStyle = "short") -> str:
    """The seeds' fixed-width text table (one line per launch)."""
    lines = [f"{'Kernel':<{SEED_NAME_WIDTH + 1}}{'Latency':>11}{'Tensor':>7}{'DRAM':>7}"]
    lines += [
        f"{_seed_name(' '.join(r.name.split()), names)}|{r.latency_ns:>11}"
        f" {_fraction(r.tensor)} {_fraction(r.dram)}"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def render_launch_markdown(rows: list[LaunchRow]) -> str:
    """Launches as a markdown table (names escaped; utilisation as fractions, like the seeds)."""
    headers = ["#", "Kernel", "Device", "Latency (ns)", "Tensor", "DRAM"]
    cells = [
        [fmt_int(i), md_cell(r.name), str(r.device), fmt_int(r.latency_ns), fmt_num(r.tensor),
         fmt_num(r.dram)]
        for i, r in enumerate(rows, start=1)
    ]
    return pipe_table(headers, cells, right=(0, 2, 3, 4, 5)) + "\n"


def render_name_table(rows: list[NameRow]) -> str:
    """Aggregated rows as a markdown table (names escaped for the table)."""
    headers = ["Kernel", "Launches", "Total (ms)", "Mean (us)", "Share of GPU time (%)",
               "Tensor", "DRAM"]
    cells = [
        [md_cell(r.name), fmt_int(r.count), fmt_num(r.total_ns / 1e6, 3),
         fmt_num(r.mean_ns / 1e3, 2), fmt_num(r.share_pct, 2), fmt_num(r.tensor, 2),
         fmt_num(r.dram, 2)]
        for r in rows
    ]
    return pipe_table(headers, cells, right=(1, 2, 3, 4, 5, 6)) + "\n"


KERNELS_JSON_FORMAT = "perfdiff.kernels"
KERNELS_JSON_VERSION = "1.0"  # 1.0 (perfdiff 0.1.0): first format


def render_kernels_json(rows: Sequence[LaunchRow] | Sequence[NameRow], *, by: str,
                        source: str) -> str:
    """``kernels --format json``: every row (full names as chosen by ``--names``) in a
    versioned envelope; NaN utilisation becomes null."""
    envelope = {"format": KERNELS_JSON_FORMAT, "version": KERNELS_JSON_VERSION,
                "tool_version": __version__, "source": source, "by": by,
                "rows": clean_json([asdict(r) for r in rows])}
    return json.dumps(envelope, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def terminal_note(shown: int, total: int, *, by: str) -> str:
    """What a terminal view left out and how to see all of it."""
    what = "launches" if by == "launch" else "kernel names"
    return (f"Showing the {shown:,} {what} with the most GPU time of {total:,}. For all of them: "
            "--all (launch order), --top N, or pipe / -o FILE for the full table.")
