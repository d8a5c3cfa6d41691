"""Trace events as msgspec structs, and the one filter that decides which are decoded.

Why its own module: every other part of the reader works on these structs, and the memory
rule of the reader lives here: each event stays a raw slice of the file until its category
says it is needed (GPU, launch, annotation); CPU-side events are only counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "hip_driver"})
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
RANGE_CATEGORIES = frozenset({"user_annotation", "gpu_user_annotation"})
COUNTER_CATEGORY = "hardware_counters"


class _Args(msgspec.Struct, gc=False):
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


class _Event(msgspec.Struct, gc=False):
    """One trace event, as little of it as the reader may need (the rest is never built)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: msgspec.Raw = msgspec.Raw(b"")
    args: _Args | None = None  # a non-object args fails the decode (one line)


class _Kind(msgspec.Struct, gc=False):
    """What decides whether an event is kept: its phase and category."""

    ph: str = ""
    cat: str = ""


class _Trace(msgspec.Struct, gc=False):
    """The top level of a Kineto trace: each event stays a raw slice of the file (no copy)
    until its category says it is needed; metadata keys stay raw until asked for."""

    traceEvents: list[msgspec.Raw]
    schemaVersion: msgspec.Raw = msgspec.Raw(b"")
    baseTimeNanoseconds: msgspec.Raw = msgspec.Raw(b"")
    deviceProperties: msgspec.Raw = msgspec.Raw(b"")
    distributedInfo: msgspec.Raw = msgspec.Raw(b"")
    cuda_driver_version: msgspec.Raw = msgspec.Raw(b"")
    cuda_runtime_version: msgspec.Raw = msgspec.Raw(b"")
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


_TRACE_DECODER = msgspec.json.Decoder(_Trace)
_KIND_DECODER = msgspec.json.Decoder(_Kind)
_EVENT_DECODER = msgspec.json.Decoder(_Event)
_KEPT_CATEGORIES = GPU_CATEGORIES | LAUNCH_CATEGORIES | RANGE_CATEGORIES
_COUNTER_DECODER = msgspec.json.Decoder(_CounterEvent)
_ANY = msgspec.json.Decoder()


class _Bad(Exception):
    """Internal: the trace breaks a rule; the message says which (the caller adds the file)."""


def _kept_events(raws: list[msgspec.Raw], counted: dict[tuple[str, str], int],
                 counters: list[msgspec.Raw]) -> Iterator[_Event]:
    """The GPU, launch and annotation events, decoded; every other event is looked at only
    for its category and phase, which ``counted`` tallies (CPU ops, Python functions and
    flows are most of a trace); ``hardware_counters`` samples go to ``counters`` as they are."""
    kind_of = _KIND_DECODER.decode
    event_of = _EVENT_DECODER.decode
    # popped from the end, each slice is freed once looked at (``raws`` ends empty): the
    # memory the kept events take is what the slices gave back, not more on top
    raws.reverse()
    try:
        while raws:
            raw = raws.pop()
            kind = kind_of(raw)
            if kind.cat in _KEPT_CATEGORIES:
                yield event_of(raw)
            else:
                key = (kind.cat, kind.ph)
                counted[key] = counted.get(key, 0) + 1
                if key == (COUNTER_CATEGORY, "C"):
                    counters.append(raw)
    except msgspec.ValidationError as exc:
        raise _Bad(f"malformed trace event ({exc})") from None
