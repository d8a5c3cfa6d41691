"""Which framework op and which module launched each kernel of a torch.profiler trace.

Why its own module: the link is a walk of its own (kernel -> its launch by correlation -> the
host ops open on the launching thread at that moment), over events the rest of the reader never
decodes (``cpu_op``, ``python_function``); keeping it here leaves the reader's main path as it
was and puts the one rule of "which level names the op" in one place.

The rule (docs/explanation/families.md, "Framework ops"): a kernel's op is the *outermost*
``cpu_op`` open on the launching thread (the op the Python code called, e.g. ``aten::linear``,
``aten::scaled_dot_product_attention``, ``aten::softmax``), followed by the *innermost* one
when it differs (the op that launched, e.g. ``aten::addmm``, ``aten::bmm``): ``aten::linear >
aten::addmm``. Backward ops run under ``autograd::engine::evaluate_function: XBackward0``; that
wrapper is shown as ``XBackward0``. The outermost op alone would merge different launchers
(``aten::matmul`` runs ``bmm`` or ``mm``), the innermost alone would hide what the user called
(``aten::_scaled_dot_product_cudnn_attention`` for SDPA); the two together say both. A kernel's
module is the path of ``nn.Module: X_n`` ranges (``with_modules=True`` or ``with_stack=True``)
open on the launching thread, outermost first, joined by ``/``.

A kernel whose launch is not in the trace, or whose launch ran under no op (a graph replay, a
Triton launch outside any op), gets no op (-1): the statistics put it in a row that says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import numpy as np

from perfdiff.readers.torch_profiler.events import BadTrace, decode_kept
from perfdiff.readers.torch_profiler.timestamps import us_texts_to_ns
from perfdiff.schema.model import IntArray

MODULE_PREFIX = "nn.Module: "  # a python_function range that is a module's forward
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "  # autograd's wrapper of XBackward0
NO_OP = -1  # a kernel whose launching op is not known


class HostOp(msgspec.Struct, gc=False):
    """A ``cpu_op`` or ``python_function`` range: which thread, when, and its name."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: msgspec.Raw = msgspec.Raw(b"")


HOST_OP_DECODER = msgspec.json.Decoder(HostOp)
Thread = tuple[int | str, int | str]  # (pid, tid) as the trace writes them


@dataclass
class HostRanges:
    """The kept ranges, copied out of the file (a decoded event's raw ``ts`` would hold the
    whole file's bytes): name, op (True) or module (False), thread, times as JSON text."""

    name: list[str]
    is_op: list[bool]
    thread: list[Thread]
    ts: list[bytes]
    dur: list[bytes]


@dataclass
class LaunchThreads:
    """Each launch's correlation, thread and time (ns), in the order the launches were read."""

    correlation: list[int]
    pid: list[int | str]
    tid: list[int | str]
    ts_ns: IntArray


@dataclass(frozen=True)
class KernelOps:
    """Per kernel row: the index of its op label and of its module label in ``labels``
    (:data:`NO_OP` where unknown); one label table for both."""

    op_id: IntArray
    module_id: IntArray
    labels: list[str]
    with_modules: bool  # the trace had module ranges at all


def host_ops(raws: list[msgspec.Raw]) -> HostRanges:
    """Decode the kept ``cpu_op`` / ``python_function`` slices; only complete ranges, and of
    the Python functions only modules (``with_stack`` writes every frame: most of a trace)."""
    kept = [op for op in decode_kept(raws, HOST_OP_DECODER)
            if op.ph == "X" and (op.cat == "cpu_op" or op.name.startswith(MODULE_PREFIX))]
    return HostRanges(name=[op.name for op in kept], is_op=[op.cat == "cpu_op" for op in kept],
                      thread=[(op.pid, op.tid) for op in kept],
                      ts=[bytes(op.ts) for op in kept], dur=[bytes(op.dur) or b"0" for op in kept])


def op_label(outer: str, inner: str) -> str:
    """``aten::linear > aten::addmm``; one name when the op launched itself."""
    outer = outer.removeprefix(BACKWARD_PREFIX)
    inner = inner.removeprefix(BACKWARD_PREFIX)
    return outer if outer == inner else f"{outer} > {inner}"


def kernel_ops(ops: HostRanges, launches: LaunchThreads, kernel_correlation: list[int],
               base_ns: int) -> KernelOps:
    """The op and module of every kernel row (see the module's docstring for the rule)."""
    labels: dict[str, int] = {}
    by_corr = _launch_stacks(ops, launches, set(kernel_correlation), base_ns, labels)
    unknown = (NO_OP, NO_OP)
    pairs = [by_corr.get(corr, unknown) for corr in kernel_correlation]
    ids = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    with_modules = not all(ops.is_op)
    return KernelOps(ids[:, 0].copy(), ids[:, 1].copy(), list(labels), with_modules)


def _launch_stacks(ops: HostRanges, launches: LaunchThreads, wanted: set[int], base_ns: int,
                   labels: dict[str, int]) -> dict[int, tuple[int, int]]:
    """correlation -> (op label id, module label id) of each launch of a kernel, from one
    sweep per thread over its ranges (sorted by start, longest first) and its launches
    (sorted by time). Why a sweep: a trace holds 10^4-10^5 ranges and launches; the ranges
    open at a launch are a stack, so each range is pushed and popped once."""
    if not ops.name or not launches.correlation:
        return {}
    try:
        starts = us_texts_to_ns(ops.ts) + base_ns
        ends = starts + us_texts_to_ns(ops.dur)
    except ValueError as exc:
        raise BadTrace(f"a cpu_op or python_function event with a bad time ({exc})") from None
    points: dict[Thread, list[tuple[int, int]]] = {}
    for corr, pid, tid, when in zip(launches.correlation, launches.pid, launches.tid,
                                    launches.ts_ns.tolist(), strict=True):
        if corr in wanted:
            points.setdefault((pid, tid), []).append((when, corr))
    ranges: dict[Thread, list[tuple[int, int, int]]] = {thread: [] for thread in points}
    for i, (thread, start, end) in enumerate(zip(ops.thread, starts.tolist(), ends.tolist(),
                                                 strict=True)):
        if thread in ranges:
            ranges[thread].append((start, -end, i))
    out: dict[int, tuple[int, int]] = {}
    named: dict[tuple[int, ...], tuple[int, int]] = {}  # open ranges -> their label ids
    for thread, calls in points.items():
        spans = sorted(ranges[thread])
        calls.sort()
        stack: list[tuple[int, int]] = []  # (end, range index) of the ranges open now
        nxt, n_spans = 0, len(spans)
        for when, corr in calls:
            while nxt < n_spans and spans[nxt][0] <= when:
                start, neg_end, index = spans[nxt]
                while stack and stack[-1][0] < start:
                    stack.pop()
                stack.append((-neg_end, index))
                nxt += 1
            while stack and stack[-1][0] < when:
                stack.pop()
            # a range closed under a longer one that is still open may sit below the top
            key = tuple(index for end, index in stack if end >= when)
            found = named.get(key)
            if found is None:
                found = named[key] = (_op_id(ops, key, labels), _module_id(ops, key, labels))
            out[corr] = found
    return out


def _op_id(ops: HostRanges, open_now: tuple[int, ...], labels: dict[str, int]) -> int:
    names = [ops.name[i] for i in open_now if ops.is_op[i]]
    if not names:
        return NO_OP
    return labels.setdefault(op_label(names[0], names[-1]), len(labels))


def _module_id(ops: HostRanges, open_now: tuple[int, ...], labels: dict[str, int]) -> int:
    path = [ops.name[i].removeprefix(MODULE_PREFIX) for i in open_now if not ops.is_op[i]]
    if not path:
        return NO_OP
    return labels.setdefault("/".join(path), len(labels))
