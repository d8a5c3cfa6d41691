"""Sentence-level helpers shared by the markdown report's sections.

Why a module of their own: the header, the summary and section 3 all say "p < 0.001", name a
device with its pid, or count "3 functions" the same way; one definition keeps the wording and
the number format identical everywhere.
"""

from __future__ import annotations

import math

from perfdiff.analysis.model import Comparison, SideSummary
from perfdiff.report.format import NA, fmt_int, fmt_p, md_cell, md_code

TEST_UNIT_TEXT = {
    "runs": "run-level means (each run is one sample; cycles within a run are correlated)",
    "batch means": "batch means (one run per side: its cycles grouped into consecutive batches, "
    "each batch one sample, because consecutive cycles are correlated)",
    "cycles": "individual cycles (seed-compatible mode: cycles treated as independent, as "
    "LatencyPrism does)",
}


MAX_CYCLE_DEFINITION = 100


def cycle_definition_md(side: SideSummary) -> str:
    """Where a side's cycles were cut, as markdown for a sentence.

    Why not always the label in a code span: built-in workloads (gpt-infer, train-step) mark
    each iteration without a label, and an empty or made-up "label" in a code span read as if
    the run file held that text. Those say what the cycles are: the workload's iterations.
    """
    if not side.cycle_definition.strip():
        workload = md_code(side.workload) if side.workload else "the workload"
        return f"each iteration of {workload} (unlabelled cycle markers)"
    return md_code(cycle_definition(side.cycle_definition))


def cycle_definition(text: str) -> str:
    """A cycle definition fit for one line: a long list of case labels is cut, with its count."""
    if not text.strip():
        return "unlabelled cycle markers"
    if len(text) <= MAX_CYCLE_DEFINITION:
        return text
    items = text.split(", ")
    if len(items) == 1:
        return text[:MAX_CYCLE_DEFINITION] + "…"
    shown: list[str] = []
    for item in items:
        if shown and len(", ".join([*shown, item])) > MAX_CYCLE_DEFINITION:
            break
        shown.append(item)
    return f"{', '.join(shown)}, … (+{len(items) - len(shown)} more labels)"


def p_text(p: float) -> str:
    """``p < 0.001`` / ``p = 0.012`` / ``p n/a``: the p-value inside a sentence."""
    text = fmt_p(p)
    if text == NA:
        return "p n/a"
    return f"p {text[0]} {text[1:]}" if text.startswith("<") else f"p = {text}"


def q_text(q: float) -> str:
    """``q < 0.001`` / ``q = 0.021``: the q-value inside a sentence."""
    return "q" + p_text(q)[1:]


def device_text(device: str, pid: int | None, comparison: Comparison) -> str:
    """``GPU 7``, or ``GPU 7 (pid 923229)`` when the comparison holds several processes."""
    pids = {r.pid for r in comparison.rows} | {d.pid for d in comparison.devices}
    if pid is not None and len(pids) > 1:
        return f"{device} (pid {pid})"
    return device


def device_cell(device: str, pid: int | None, comparison: Comparison) -> str:
    return md_cell(device_text(device, pid, comparison))


def moved(before: float, after: float) -> str:
    if math.isnan(before) or math.isnan(after):
        return "changed"
    if after > before:
        return "increased"
    if after < before:
        return "decreased"
    return "did not change"


def count(n: int, noun: str) -> str:
    """``1 function`` / ``3 functions``."""
    return f"{fmt_int(n)} {noun}" + ("" if n == 1 else "s")
