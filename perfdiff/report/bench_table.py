"""Benchmark tables in the seeds' layouts: ``perfdiff bench RUN [RUN]``.

- ``linalg`` (``../shared/seeds/linalg-magma-vs-cusolver-table.md``): one row per batch x n,
  CPU time, GPU time before and after (the two runs' backends), and ``***regressed`` where the
  statistics say so (the rule is in the legend under the table);
- ``rmsnorm`` (``../shared/seeds/rmsnorm-custom-op-benchmark.md``): one table per dtype x
  direction, implementations as columns, and "speedup vs BASELINE" (baseline time / target
  time, as the seed's "speedup vs triton" is triton / cuda);
- anything else (a user program's labelled cycles): one row per case.

Pure: the numbers and verdicts come from :mod:`perfdiff.analysis.bench_cases`; this module
only pivots them into :class:`BenchTable` models, rendered as markdown or as rich tables from
the same model, so the two outputs cannot disagree.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from perfdiff import __version__
from perfdiff.analysis.bench_cases import (
    BenchRules,
    BenchRun,
    CaseChange,
    CaseSummary,
)
from perfdiff.report.format import fmt_int, fmt_ms, fmt_num, fmt_p, md_cell
from perfdiff.report.json_report import clean_json
from perfdiff.report.table import pipe_table

IMPL_ORDER = ("naive", "torchscript", "triton", "cuda")
DTYPE_ORDER = ("float64", "float32", "float16", "bfloat16")
US_DECIMALS = 3
REGRESSED = "***regressed"
FASTER = "faster"


@dataclass(frozen=True)
class BenchTable:
    """One table: a title line, headers, formatted cells (plain text: each renderer escapes
    for its medium); ``right`` = numeric columns."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: tuple[int, ...]


@dataclass(frozen=True)
class BenchView:
    """Everything a rendering shows: tables, then legend lines."""

    heading: str
    tables: tuple[BenchTable, ...]
    legend: tuple[str, ...]


def _flag(change: CaseChange | None) -> str:
    if change is None:
        return ""
    return {"regressed": REGRESSED, "faster": FASTER}.get(change.verdict, "")


def _measure_text(run: BenchRun) -> str:
    if run.measure == "kernels":
        return ("GPU time: the sum of the durations of the kernels launched in the cycle "
                "(CUPTI records; gaps between kernels not counted)")
    if run.measure == "stream":
        return ("GPU time: from the end of the GPU lead (the spin kernel before the cycle) to "
                "the end of the last GPU activity launched in the cycle (CUPTI records)")
    if run.measure == "call":
        return ("GPU time: from the end of the GPU lead to the later of the end of the last "
                "GPU activity launched in the cycle and the GPU start of the cycle's end "
                "boundary mark, issued when the call returned to Python (CUPTI records)")
    return ("GPU time: from the start of the first GPU activity to the end of the last one "
            "launched in the cycle (CUPTI kernel/memcpy/memset records)")


def _us(ms: float) -> str:
    return fmt_num(ms * 1000.0, US_DECIMALS)


def _describe(run: BenchRun) -> str:
    n = {s.n for s in run.case_summaries}
    cycles = "/".join(str(v) for v in sorted(n))
    return f"{run.source} ({run.workload} on {run.gpu}, {cycles} cycles per case)"


def _counts(changes: Sequence[CaseChange]) -> str:
    verdicts = [c.verdict for c in changes]
    parts = [f"{verdicts.count(v)} {v}" for v in ("regressed", "faster", "no change",
                                                  "insufficient data", "only before",
                                                  "only after") if verdicts.count(v)]
    return f"{len(changes)} cases compared: " + ", ".join(parts) + "."


# ----------------------------------------------------------------------------- linalg

def _linalg_key(s: CaseSummary) -> tuple[str, str, str, str]:
    f = s.fields
    return (f.get("op", ""), f.get("batch", ""), f.get("n", ""), f.get("dtype", ""))


def _backend(run: BenchRun) -> str:
    return str(run.params.get("backend", "?"))


def linalg_view(before: BenchRun, after: BenchRun | None,
                changes: Sequence[CaseChange] | None, rules: BenchRules) -> BenchView:
    """The linalg seed's table: shape, cpu_time, gpu_time before (and after, flag)."""
    runs = [before] if after is None else [before, after]
    cpu: dict[tuple[str, str, str, str], float] = {}
    for run in reversed(runs):  # the first run's CPU time wins
        for s in run.case_summaries:
            if s.fields.get("device") == "cpu":
                cpu[_linalg_key(s)] = s.host_ms
    change_of = {c.label: c for c in changes or ()}
    if after is not None:
        headers = ["shape", "cpu_time (ms)", f"gpu_time_before ({_backend(before)}) (ms)",
                   f"gpu_time_after ({_backend(after)}) (ms)", "after/before", "q", ""]
    else:
        headers = ["shape", "cpu_time (ms)", f"gpu_time ({_backend(before)}) (ms)"]
    rows: list[tuple[str, ...]] = []
    labels = list(dict.fromkeys(
        s.label for run in runs for s in run.case_summaries if s.fields.get("device") == "cuda"
    ))
    by_label = {s.label: s for run in reversed(runs) for s in run.case_summaries}
    for label in labels:
        s = by_label[label]
        op, batch, n, dtype = _linalg_key(s)
        shape = f"{batch} {n} torch.{dtype}"
        cpu_ms = cpu.get((op, batch, n, dtype), math.nan)
        if after is None:
            rows.append((shape, fmt_ms(cpu_ms), fmt_ms(s.gpu_ms)))
            continue
        c = change_of.get(label)
        b_ms = c.before.gpu_ms if c is not None and c.before is not None else math.nan
        a_ms = c.after.gpu_ms if c is not None and c.after is not None else math.nan
        rows.append((shape, fmt_ms(cpu_ms), fmt_ms(b_ms), fmt_ms(a_ms),
                     fmt_num(c.ratio if c is not None else math.nan, 3),
                     fmt_p(c.q if c is not None else math.nan), _flag(c)))
    table = BenchTable("", tuple(headers), tuple(rows),
                       right=tuple(range(1, len(headers) - (1 if after is not None else 0))))
    legend = [
        f"Times are medians per cycle. {_measure_text(before)}; cpu_time: the same op on CPU "
        "tensors (host time).",
        f"Before: {_describe(before)}.",
    ]
    if after is not None:
        legend += [f"After: {_describe(after)}.", rules.legend(), _counts(changes or ())]
    return BenchView("linalg: batched eigh", (table,), tuple(legend))


# ----------------------------------------------------------------------------- rmsnorm

def _ordered(values: set[str], order: Sequence[str]) -> list[str]:
    return [v for v in order if v in values] + sorted(values - set(order))


def _shape_key(shape: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in shape.split("x"))
    except ValueError:
        return ()


def rmsnorm_view(before: BenchRun, after: BenchRun | None,
                 changes: Sequence[CaseChange] | None, rules: BenchRules,
                 *, baseline: str = "triton", target: str = "cuda") -> BenchView:
    """One table per dtype x direction; implementations as columns (median GPU us per call).

    With two runs, cells show the second run's times, flagged against the first.
    """
    shown = after if after is not None else before
    cases = {s.label: s for s in shown.case_summaries}
    change_of = {c.label: c for c in changes or ()}
    impls = _ordered({s.fields.get("impl", "") for s in cases.values()}, IMPL_ORDER)
    dtypes = _ordered({s.fields.get("dtype", "") for s in cases.values()}, DTYPE_ORDER)
    directions = _ordered({s.fields.get("direction", "") for s in cases.values()},
                          ("forward", "backward"))
    speedup = baseline in impls and target in impls and baseline != target
    tables = []
    for dtype in dtypes:
        for direction in directions:
            group = [s for s in cases.values()
                     if s.fields.get("dtype") == dtype and s.fields.get("direction") == direction]
            if not group:
                continue
            shapes = sorted({s.fields.get("shape", "") for s in group}, key=_shape_key)
            cell = {(s.fields.get("shape", ""), s.fields.get("impl", "")): s for s in group}
            headers = ["shape", *impls]
            if speedup:
                headers.append(f"{target} speedup vs {baseline}")
            rows = []
            for shape in shapes:
                row = [f"[{shape.replace('x', ', ')}]"]
                for impl in impls:
                    s = cell.get((shape, impl))
                    text = _us(s.gpu_ms) if s is not None else "n/a"
                    flag = _flag(change_of.get(s.label)) if s is not None else ""
                    row.append(f"{text} {flag}".strip())
                if speedup:
                    b, t = cell.get((shape, baseline)), cell.get((shape, target))
                    ratio = b.gpu_ms / t.gpu_ms if b is not None and t is not None and \
                        t.gpu_ms > 0 else math.nan
                    row.append(fmt_num(ratio, 3))
                rows.append(tuple(row))
            tables.append(BenchTable(f"torch.{dtype} {direction}:", tuple(headers),
                                     tuple(rows), right=tuple(range(1, len(headers)))))
    legend = [
        f"Times in us per call, median per case. {_measure_text(shown)}.",
        f"Run: {_describe(shown)}.",
    ]
    if speedup:
        legend.append(f"{target} speedup vs {baseline} = {baseline} time / {target} time.")
    if after is not None:
        legend += [f"Flags compare with: {_describe(before)}.", rules.legend(),
                   _counts(changes or ())]
    return BenchView("rmsnorm", tuple(tables), tuple(legend))


# ----------------------------------------------------------------------------- any cases

def cases_view(before: BenchRun, after: BenchRun | None,
               changes: Sequence[CaseChange] | None, rules: BenchRules) -> BenchView:
    """One row per case, for run files of any workload (labels as recorded)."""
    if after is None:
        headers = ("case", "cycles", "GPU ms", "kernel ms", "host ms", "kernels/cycle")
        rows = tuple(
            (s.label or "(unlabelled)", fmt_int(s.n), fmt_ms(s.gpu_ms),
             fmt_ms(s.kernel_ms), fmt_ms(s.host_ms), fmt_num(s.launches, 1))
            for s in before.case_summaries
        )
        table = BenchTable("", headers, rows, right=(1, 2, 3, 4, 5))
        return BenchView(before.workload, (table,), (f"Run: {_describe(before)}.",))
    headers = ("case", "GPU ms before", "GPU ms after", "after/before", "q", "verdict")
    rows = tuple(
        (c.label or "(unlabelled)",
         fmt_ms(c.before.gpu_ms if c.before is not None else math.nan),
         fmt_ms(c.after.gpu_ms if c.after is not None else math.nan),
         fmt_num(c.ratio, 3), fmt_p(c.q), _flag(c) or c.verdict)
        for c in changes or ()
    )
    table = BenchTable("", headers, rows, right=(1, 2, 3, 4))
    legend = (f"Before: {_describe(before)}.", f"After: {_describe(after)}.", rules.legend(),
              _counts(changes or ()))
    return BenchView(f"{before.workload} vs {after.workload}", (table,), legend)


def bench_view(before: BenchRun, after: BenchRun | None, changes: Sequence[CaseChange] | None,
               rules: BenchRules, *, baseline: str = "triton", target: str = "cuda") -> BenchView:
    """The layout that fits the workload of the (first) run."""
    if before.workload == "linalg":
        return linalg_view(before, after, changes, rules)
    if before.workload == "rmsnorm":
        return rmsnorm_view(before, after, changes, rules, baseline=baseline, target=target)
    return cases_view(before, after, changes, rules)


# ----------------------------------------------------------------------------- renderers

def render_markdown(view: BenchView) -> str:
    """The view as markdown: each table under its title, then the legend."""
    parts = [f"## perfdiff bench: {md_cell(view.heading)}", ""]
    for table in view.tables:
        if table.title:
            parts += [md_cell(table.title), ""]
        headers = [md_cell(h) for h in table.headers]
        rows = [[md_cell(c) for c in row] for row in table.rows]
        parts += [pipe_table(headers, rows, right=table.right), ""]
    parts += [f"- {md_cell(line)}" for line in view.legend]
    return "\n".join(parts) + "\n"


def render_rich(view: BenchView, console: Console) -> None:
    """The view as rich tables (cells escaped: rich markup in a label stays inert)."""
    console.rule(f"perfdiff bench: {escape(view.heading)}")
    for table in view.tables:
        rich_table = Table(box=box.SIMPLE_HEAD, title=escape(table.title) or None)
        for i, header in enumerate(table.headers):
            rich_table.add_column(escape(header), justify="right" if i in table.right else "left")
        for row in table.rows:
            rich_table.add_row(*(_rich_cell(c) for c in row))
        console.print(rich_table)
    for line in view.legend:
        console.print(escape(line), style="dim", highlight=False)


def _rich_cell(text: str) -> str:
    if REGRESSED in text:
        return "[bold red]" + escape(text) + "[/]"
    if text.endswith(FASTER):
        return "[green]" + escape(text) + "[/]"
    return escape(text)


__all__ = ["BenchTable", "BenchView", "bench_view", "cases_view", "linalg_view",
           "render_markdown", "render_rich", "rmsnorm_view"]


BENCH_JSON_FORMAT = "perfdiff.bench"
BENCH_JSON_VERSION = "1.0"  # 1.0 (perfdiff 0.1.0): first format


def _run_json(run: BenchRun) -> dict[str, object]:
    return {"source": run.source, "workload": run.workload, "gpu": run.gpu,
            "params": dict(run.params), "measure": run.measure,
            "cases": [asdict(s) for s in run.case_summaries]}


def render_bench_json(before: BenchRun, after: BenchRun | None,
                      changes: Sequence[CaseChange] | None, rules: BenchRules) -> str:
    """``bench --format json``: every case's medians and, with two runs, every comparison, in a
    versioned envelope (as ``compare --format json``); NaN becomes null."""
    body: dict[str, object] = {
        "rules": asdict(rules),
        "before": _run_json(before),
        "after": _run_json(after) if after is not None else None,
        "changes": [asdict(c) for c in changes] if changes is not None else None,
    }
    envelope = {"format": BENCH_JSON_FORMAT, "version": BENCH_JSON_VERSION,
                "tool_version": __version__, "bench": clean_json(body)}
    return json.dumps(envelope, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
