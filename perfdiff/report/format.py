"""The one number format and the escaping rules every human-readable report uses.

Why one module: the seed report mixed "1001081.25" with "771,618.75" and printed p = 0 for rows
that did not change. Here every number goes through one of a few functions:

- fixed decimals with thousands separators (``1,234.57``), ``+`` on signed changes;
- ``n/a`` for NaN (not defined), ``inf`` / ``-inf`` for infinities, never ``nan`` or ``0``;
- p- and q-values with three decimals, and ``<0.001`` below that (a p-value is never "0");
- negative zero prints as zero, so output is identical across platforms.

Names come from users' programs and may hold ``|``, ``<``, ``*``, ``_`` or backticks:
:func:`md_cell` makes them inert inside a table cell, :func:`md_code` inside prose.
"""

from __future__ import annotations

import math
import re

from perfdiff.schema.names import base_name as base_name  # where it lived before

NA = "n/a"
P_FLOOR = 0.001  # p and q below this print as "<0.001"

MS_DECIMALS = 3  # times in milliseconds: microsecond resolution
PCT_DECIMALS = 2  # shares and relative changes, %
STAT_DECIMALS = 2  # z-scores, metric means, suspicion scores
SMALL_MU_DECIMALS = 4  # metric means below 0.1 (fractions, tiny utilisations)


def fmt_num(value: float, decimals: int = STAT_DECIMALS, *, signed: bool = False) -> str:
    """``1234.5 -> "1,234.50"``; NaN -> ``n/a``; ``signed`` adds ``+`` to positive values."""
    if value is None or math.isnan(value):
        return NA
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    rounded = round(value, decimals)
    if rounded == 0:
        rounded = 0.0  # no "-0.00"
    text = f"{rounded:,.{decimals}f}"
    if signed and rounded > 0:
        text = "+" + text
    return text


def fmt_metric(value: float, *, signed: bool = False) -> str:
    """A metric mean (μ): two decimals, four below 0.1 so small utilisations do not print 0.00."""
    small = not math.isnan(value) and 0 < abs(value) < 0.1
    return fmt_num(value, SMALL_MU_DECIMALS if small else STAT_DECIMALS, signed=signed)


def fmt_ms(value: float, *, signed: bool = False) -> str:
    """A time in milliseconds (three decimals)."""
    return fmt_num(value, MS_DECIMALS, signed=signed)


def fmt_pct(value: float, *, signed: bool = False) -> str:
    """A percentage with its sign: ``4.66 -> "4.66%"`` (``"+4.66%"`` when signed)."""
    text = fmt_num(value, PCT_DECIMALS, signed=signed)
    return text if text == NA else text + "%"


def fmt_pp(value: float) -> str:
    """A change of a share, in percentage points: ``"+5.91 pp"``."""
    text = fmt_num(value, PCT_DECIMALS, signed=True)
    return text if text == NA else text + " pp"


def fmt_p(value: float) -> str:
    """A p- or q-value: three decimals, ``<0.001`` below that, ``n/a`` when no test ran."""
    if value is None or math.isnan(value):
        return NA
    if value < P_FLOOR:
        return "<0.001"
    return f"{min(value, 1.0):.3f}"


def fmt_int(value: int) -> str:
    """A count with thousands separators."""
    return f"{value:,}"


def fmt_interval(low: float, high: float, fmt: str = "ms") -> str:
    """``[low, high]`` in the same format as the value it brackets."""
    if math.isnan(low) or math.isnan(high):
        return NA
    if fmt == "pct":
        return f"[{fmt_pct(low, signed=True)}, {fmt_pct(high, signed=True)}]"
    return f"[{fmt_ms(low, signed=True)}, {fmt_ms(high, signed=True)}]"


# ----------------------------------------------------------------------------- escaping

_CELL_ESCAPES = {
    "\\": "\\\\",
    "|": "\\|",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "<": "\\<",  # a backslash escape, not &lt;: the raw markdown stays readable
    ">": "\\>",
    "&": "\\&",
}


def _one_line(text: str) -> str:
    """Any line break or tab -> one space; other control characters -> U+FFFD.

    Python's ``splitlines`` also breaks at \\x1c-\\x1e, \\x85 and U+2028: a name holding one would
    split a table row in two. Control characters could also drive a terminal.
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif ch.isspace():
            out.append(" ")
        else:
            out.append("\ufffd")
    return "".join(out)


def md_cell(text: str) -> str:
    """Text that renders literally inside a GFM table cell (cannot open a column or a span).

    An ``_`` between two letters or digits cannot open or close emphasis (CommonMark forbids
    intraword ``_`` emphasis), so it is left alone: ``gpu_frequency`` stays readable raw.
    """
    text = _one_line(text)
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "_":
            end = i
            while end < len(text) and text[end] == "_":
                end += 1
            intraword = i > 0 and end < len(text) and text[i - 1].isalnum() and (
                text[end].isalnum()
            )
            out.append(text[i:end] if intraword else "\\_" * (end - i))
            i = end
            continue
        out.append(_CELL_ESCAPES.get(ch, ch))
        i += 1
    return "".join(out)


def md_code(text: str) -> str:
    """An inline code span holding ``text`` literally, whatever backticks it contains.

    CommonMark: the fence must be a backtick run longer than any run inside; a space pads the
    content when it starts or ends with a backtick. Not for table cells (``|`` would still split
    the row there): use :func:`md_cell`.
    """
    text = _one_line(text)
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# ----------------------------------------------------------------------------- names

TABLE_NAME_WIDTH = 72
PROSE_NAME_WIDTH = 120  # names in sentences and messages (JSON: full names)


def shorten_middle(text: str, width: int = TABLE_NAME_WIDTH) -> str:
    """Keep the start (qualified name) and the end (distinguishing suffix) of a long name.

    Why the middle: kernel names differ in their tails (``..._64x5_tn`` vs ``..._64x6_tn``) and
    template arguments; cutting the end would make distinct kernels look identical.
    """
    text = _one_line(text)
    if len(text) <= width:
        return text
    tail = max(1, (width - 1) // 3)
    head = width - 1 - tail
    return text[:head] + "…" + text[-tail:]


_QUALIFIER = re.compile(r"\(anonymous namespace\)::|\b[A-Za-z_]\w*::")
_LAMBDA = re.compile(r"\{lambda\([^{}]*?\)#\d+\}")  # {lambda(int)#1} -> λ
_CALL_OPERATOR = re.compile(r"::operator\(\)\(\)(?: const)?")
_LAMBDA_CHAIN = re.compile(r"λ(?:::λ)+")
_INNER_PARAMS = re.compile(r"(?<=[\w>])\([^()]+\)")  # f(int, T&) -> f(…), innermost first


def _without_parameters(text: str) -> str:
    """``f<T>(int, T)`` -> ``f<T>(…)``: the parameter list repeats the template arguments."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0 and i > 0:
            return text[:i] + "(…)" if text.endswith(")") else text
    return text


def compact_signature(text: str) -> str:
    """A demangled C++ signature reduced to what tells instantiations apart.

    Drops the return type, namespace qualifiers (``at::native::``, ``std::``), parameter lists
    (they repeat the template arguments) and lambda bodies' names (``{lambda(int)#1}`` -> ``λ``),
    keeping the kernel and its template arguments: the functor, the vector width, the dtype.
    """
    if text.startswith("void "):
        text = text[5:]
    text = _LAMBDA_CHAIN.sub("λ", _CALL_OPERATOR.sub("", _LAMBDA.sub("λ", text)))
    text = _QUALIFIER.sub("", text)
    collapsed = "\x00"  # an already collapsed "(…)", so that enclosing lists match next
    for _ in range(4):  # nested parameter lists, innermost first
        shorter = _INNER_PARAMS.sub(collapsed, text.replace("(…)", collapsed))
        if shorter == text.replace("(…)", collapsed):
            break
        text = shorter.replace(collapsed, "(…)")
    return _without_parameters(text.replace(collapsed, "(…)"))


# a framework op as ``compare --by op`` names it: ``aten::linear > aten::addmm`` (no template
# or parameter list: a kernel's demangled name always has one)
_OP_PART = r"[A-Za-z_][\w.]*(?:::[\w.]+)*"
_OP_LABEL = re.compile(rf"{_OP_PART}(?: > {_OP_PART})*")


def display_name(name: str, width: int = TABLE_NAME_WIDTH) -> str:
    """A function name for a table: what tells kernels apart, within ``width`` characters.

    C++ signatures are compacted (:func:`compact_signature`) and, if still long, cut at the end:
    their distinguishing part (the first template arguments) comes first. Other names
    (``ampere_..._64x5_tn``, ``Memcpy DtoH (Device -> Pageable)``) are shortened in the middle,
    since they differ in their tails.
    """
    text = _one_line(name)
    if _OP_LABEL.fullmatch(text):  # an op keeps its namespace: aten::mm, not mm
        return shorten_middle(text, width)
    if "::" in text or "<" in text:
        text = compact_signature(text)
        return text if len(text) <= width else text[: width - 1] + "…"
    return shorten_middle(text, width)


# PM-sampling metric names are long (Nsight Compute style); tables show a short alias and the
# legend maps each alias back to the full name. JSON keeps the full names.
METRIC_ALIASES = {
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed": "tensor_pct",
    "TPC.TriageCompute.sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_"
    "sustained_elapsed": "tensor_hmma_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "gpu_dram_pct",
}
METRIC_WIDTH = 40


def metric_name(name: str) -> str:
    """The metric as tables and prose show it: a known alias, or the name shortened."""
    return METRIC_ALIASES.get(name) or shorten_middle(name, METRIC_WIDTH)
