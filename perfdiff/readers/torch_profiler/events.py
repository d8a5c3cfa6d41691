"""Trace events as msgspec structs, and the one filter that decides which are decoded.

Why its own module: every other part of the reader works on these structs, and the memory
rule of the reader lives here: each event stays a raw slice of the file until its category
says it is needed (GPU, launch, annotation); CPU-side events are only counted.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Any, TypeVar

import msgspec

from perfdiff.readers.torch_profiler.spellings import (
    CATEGORY_SPELLINGS,
    COUNTERS,
    CPU_RANGE,
    GPU_KINDS,
    GPU_RANGE,
    HOST_OP,
    LAUNCH,
    PY_FUNCTION,
    STEP_OPERATOR,
)

_STEP_BYTES = b'"ProfilerStep#'  # a CPU op kept as a range only when it is a step


class EventArgs(msgspec.Struct, gc=False):
    """The args perfdiff reads; any other key (Input Dims, Call stack, ...) is never built.

    Types are loose on purpose (a CPU event may carry a key of the same name with another
    type); a kept event's values are checked when its columns are built.
    """

    correlation: int | str | None = None
    device: int | str | None = None
    stream: int | str | None = None
    bytes: int | float | str | None = None
    grid: list[Any] | int | str | None = None
    block: list[Any] | int | str | None = None


class Event(msgspec.Struct, gc=False):
    """One trace event, as little of it as the reader may need (the rest is never built)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: msgspec.Raw = msgspec.Raw(b"")
    args: EventArgs | None = None  # a non-object args fails the decode (one line)


class LaunchArgs(msgspec.Struct, gc=False):
    """A launch's args: only its correlation (the GPU event it launched) is read."""

    correlation: int | str | None = None


class Launch(msgspec.Struct, gc=False):
    """A launch event (``cuda_runtime``/``cuda_driver``, HIP's): when, by which process, and
    which GPU event; its other fields are never built (launches are half the kept events)."""

    name: str = ""
    pid: int | str = 0
    tid: int | str = 0  # the launching thread: its open ops named the kernel's op (ops.py)
    ts: msgspec.Raw = msgspec.Raw(b"")
    args: LaunchArgs | None = None


class _Kind(msgspec.Struct, gc=False):
    """What decides whether an event is kept: its phase and category."""

    ph: str = ""
    cat: str = ""


class Trace(msgspec.Struct, gc=False):
    """The top level of a Kineto trace: each event stays a raw slice of the file (no copy)
    until its category says it is needed; metadata keys stay raw until asked for."""

    traceEvents: list[msgspec.Raw]
    schemaVersion: msgspec.Raw = msgspec.Raw(b"")
    baseTimeNanoseconds: msgspec.Raw = msgspec.Raw(b"")
    deviceProperties: msgspec.Raw = msgspec.Raw(b"")
    distributedInfo: msgspec.Raw = msgspec.Raw(b"")
    cuda_driver_version: msgspec.Raw = msgspec.Raw(b"")
    cuda_runtime_version: msgspec.Raw = msgspec.Raw(b"")
    hip_runtime_version: msgspec.Raw = msgspec.Raw(b"")
    roctracer_version: msgspec.Raw = msgspec.Raw(b"")
    cupti_version: msgspec.Raw = msgspec.Raw(b"")
    host_name: msgspec.Raw = msgspec.Raw(b"")
    hostname: msgspec.Raw = msgspec.Raw(b"")


class _CounterEvent(msgspec.Struct, gc=False):
    """A ``hardware_counters`` sample: its args are metric -> value, so they stay a dict."""

    ph: str = ""
    cat: str = ""
    pid: int | str = 0
    ts: msgspec.Raw = msgspec.Raw(b"")
    args: dict[str, Any] | None = None


_T = TypeVar("_T")
TRACE_DECODER = msgspec.json.Decoder(Trace)
_KIND_DECODER = msgspec.json.Decoder(_Kind)
EVENT_DECODER = msgspec.json.Decoder(Event)
LAUNCH_DECODER = msgspec.json.Decoder(Launch)
COUNTER_DECODER = msgspec.json.Decoder(_CounterEvent)
ANY_DECODER = msgspec.json.Decoder()


class BadTrace(Exception):
    """Internal: the trace breaks a rule; the message says which (the caller adds the file)."""


class _Sorted(msgspec.Struct, gc=False):
    """The kept events of a trace, still raw slices, by what they are; and the few counts of
    the others that the reader reports."""

    gpu: dict[str, list[msgspec.Raw]]  # kernel / gpu_memcpy / gpu_memset, in file order
    launches: list[msgspec.Raw]
    ranges: dict[str, list[msgspec.Raw]]  # user_annotation, gpu_user_annotation, operator
    counters: list[msgspec.Raw]  # hardware_counters samples (ph "C")
    # positions in traceEvents of the kept events, by kind (GPU kinds, LAUNCH, the range
    # kinds, COUNTERS), for the error lines: 8 bytes an event
    at: dict[str, array[int]]
    host_ops: list[msgspec.Raw]  # cpu_op and python_function ranges (ops.py links them)
    profiler_ranges: int  # cuda_profiler_range events (their trace has no kernels)
    categories: dict[str, int]  # categories and counts, of a trace without GPU events only


REEXPORT = "the trace is damaged or was edited: re-export it from torch.profiler"


def _decodes(decode: Any, raw: msgspec.Raw) -> bool:
    """Whether one event decodes (used only to name the first bad one in the error)."""
    try:
        decode_replacing(decode, raw)
    except msgspec.ValidationError:
        return False
    return True


def not_utf8(exc: Exception) -> bool:
    """Whether a decode failed only because a string is not UTF-8. msgspec up to 0.22 raised
    ``UnicodeDecodeError``; 0.23 raises a plain ``DecodeError`` ("Invalid UTF-8 encoded
    string"), which the CI's fresh install met as exit 70. Both spellings are recognised, so
    the reader does not depend on which msgspec a user has."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    return (isinstance(exc, msgspec.DecodeError) and not isinstance(exc, msgspec.ValidationError)
            and "UTF-8" in str(exc))


def decode_replacing(decode: Any, raw: msgspec.Raw) -> Any:
    """``decode(raw)``; an event whose strings are not UTF-8 is decoded with each bad byte
    replaced by U+FFFD (Kineto writes names as the program gave them; a non-UTF-8 kernel name
    ended in exit 70). The replacement keeps every other byte, so times and ids are intact."""
    try:
        return decode(raw)
    except (UnicodeDecodeError, msgspec.DecodeError) as exc:
        if not not_utf8(exc):
            raise
    return decode(bytes(raw).decode("utf-8", "replace").encode("utf-8"))


def sort_events(raws: list[msgspec.Raw]) -> _Sorted:
    """Every event is looked at for its category and phase only (CPU ops, Python functions
    and flows are most of a trace, and are dropped here); GPU, launch and annotation events
    are kept as raw slices, to be decoded a kind at a time (:func:`decode_kept`).

    Why slices first and decoding after: a decoded event costs several objects, a slice one;
    and a list of one kind decodes and becomes columns in list comprehensions, not a Python
    call per event. ``raws`` ends empty.
    """
    kind_of = _KIND_DECODER.decode
    gpu: dict[str, list[msgspec.Raw]] = {kind: [] for kind in GPU_KINDS}
    at: dict[str, array[int]] = {kind: array("q") for kind in (*GPU_KINDS, LAUNCH, CPU_RANGE,
                                                                 GPU_RANGE, STEP_OPERATOR,
                                                                 COUNTERS)}
    launches: list[msgspec.Raw] = []
    ranges: dict[str, list[msgspec.Raw]] = {CPU_RANGE: [], GPU_RANGE: [], STEP_OPERATOR: []}
    counters: list[msgspec.Raw] = []
    host_ops: list[msgspec.Raw] = []
    categories: dict[str, int] = {}
    profiler_ranges = 0
    spelling = CATEGORY_SPELLINGS  # one dict lookup turns away most CPU-side events
    try:
        for position, raw in enumerate(raws):
            event = decode_replacing(kind_of, raw)
            cat = event.cat
            if cat not in spelling:
                continue
            kind = spelling[cat]
            if kind in gpu:
                gpu[kind].append(raw)
            elif kind == LAUNCH:
                launches.append(raw)
            elif kind == STEP_OPERATOR:
                if _STEP_BYTES not in bytes(raw):
                    continue
                ranges[kind].append(raw)
            elif kind in ranges:
                ranges[kind].append(raw)
            elif kind in (HOST_OP, PY_FUNCTION):
                host_ops.append(raw)  # ops.py links them; no error line names them
                continue
            elif kind == COUNTERS:
                if event.ph != "C":
                    continue
                counters.append(raw)
            else:
                profiler_ranges += 1
                continue
            at[kind].append(position)
    except msgspec.ValidationError as exc:
        where = next((i for i, raw in enumerate(raws) if not _decodes(kind_of, raw)), None)
        shown = "" if where is None else f" at traceEvents[{where}]"
        raise BadTrace(f"malformed trace event{shown} ({exc}); {REEXPORT}") from None
    if not any(gpu.values()):  # the error line lists the categories: counted only then
        categories = dict(Counter(decode_replacing(kind_of, raw).cat for raw in raws))
    # the dropped slices go now; the kept ones hold the file's bytes until they are decoded
    raws.clear()
    return _Sorted(gpu, launches, ranges, counters, at, host_ops, profiler_ranges,
                   categories)


def decode_kept(raws: list[msgspec.Raw], decoder: msgspec.json.Decoder[_T],
                at: array[int] | None = None) -> list[_T]:
    """Decode kept slices (GPU, annotation or launch events) with ``decoder``; the list of
    slices is emptied, so that each is freed with its event. ``at``: their positions in
    ``traceEvents`` (GPU events), named in the error line."""
    decode = decoder.decode
    try:
        try:
            events = [decode(raw) for raw in raws]
        except (UnicodeDecodeError, msgspec.DecodeError) as exc:
            if not not_utf8(exc):
                raise
            # a name that is not UTF-8: kept, with U+FFFD for its bytes
            events = [decode_replacing(decode, raw) for raw in raws]
    except msgspec.ValidationError as exc:
        bad = next((i for i, raw in enumerate(raws) if not _decodes(decode, raw)), None)
        shown = "" if bad is None else bytes(raws[bad])[:80].decode("utf-8", "replace")
        where = f" at traceEvents[{at[bad]}]" if at is not None and bad is not None else ""
        raise BadTrace(f"malformed trace event{where} ({exc}; the event begins {shown!r}); "
                       f"{REEXPORT}") from None
    del raws[:]
    return events
