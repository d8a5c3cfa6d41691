"""CUPTI activity buffers -> columnar records, vectorised; layouts checked, never guessed.

Why not cupti-python's callback: it builds one Python object per record on CUPTI's thread
while the program runs (3.6-7 us each with our conversion, H100 2026-11-24), which for a
launch-bound program is most of a profiler's cost above CUPTI's own. A buffer is a plain run
of C structs, so the fields perfdiff keeps are copied out with numpy, a few array copies per
run of same-kind records.

A buffer holds records of several kinds back to back; each starts with its ``kind`` (int32)
and has the size of the struct version this CUPTI writes. The walk finds runs of same-kind
records (``_RunChains``: one table per kind and buffer, then one lookup per run), so a buffer of
kernels only is one numpy check, and mixed buffers cost one Python step per run.

Layout: the record version depends on the CUPTI release (CUPTI 13.4 writes a
CONCURRENT_KERNEL record that is not ``activity_kernel10``: gpu-notes). ``LAYOUTS`` lists the
record sizes per CUPTI API version, each checked on a real GPU against cupti-python's own
objects (scripts/gpu/intake_check.py); a CUPTI not listed is refused with one line, and a
buffer that does not parse exactly (an unknown kind, a record cut off at the end) raises one
line instead of being decoded into garbage. The fields read lie at the same offsets in every
listed version (cupti-python's ``activity_kernel9_dtype`` .. ``kernel13``, ``memcpy6/7``,
``memset4/5``, ``api``), which ``tests/collect/cupti_tests/test_decode.py`` checks against
those dtypes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from perfdiff.collect.columns import (
    API_DTYPE,
    KERNEL_DTYPE,
    MEMSET_KIND,
    TRANSFER_DTYPE,
    TraceColumns,
)
from perfdiff.errors import CollectorUnavailableError

# CUpti_ActivityKind values
KIND_MEMCPY = 1
KIND_MEMSET = 2
KIND_DRIVER = 4
KIND_RUNTIME = 5
KIND_CONCURRENT_KERNEL = 10

Array = np.ndarray[Any, np.dtype[Any]]


class RecordLayoutError(CollectorUnavailableError):
    """A buffer or a CUPTI whose record layout perfdiff does not know; one line."""


@dataclass(frozen=True)
class RecordLayout:
    """Record size in bytes of each activity kind this CUPTI writes."""

    cupti_api_version: int
    sizes: dict[int, int]
    note: str  # which struct versions, and how that was checked


# Field offsets shared by the struct versions listed (cupti-python 13.4 dtypes)
_KERNEL_FIELDS = {
    "start": ("<u8", 16), "end": ("<u8", 24), "device_id": ("<u4", 40),
    "stream_id": ("<u4", 48), "grid_x": ("<i4", 52), "grid_y": ("<i4", 56),
    "grid_z": ("<i4", 60), "block_x": ("<i4", 64), "block_y": ("<i4", 68),
    "block_z": ("<i4", 72), "correlation_id": ("<u4", 92), "name": ("<i8", 104),
}
_MEMCPY_FIELDS = {
    "copy_kind": ("u1", 4), "bytes": ("<u8", 8), "start": ("<u8", 16), "end": ("<u8", 24),
    "device_id": ("<u4", 32), "stream_id": ("<u4", 40), "correlation_id": ("<u4", 44),
}
_MEMSET_FIELDS = {
    "bytes": ("<u8", 8), "start": ("<u8", 16), "end": ("<u8", 24), "device_id": ("<u4", 32),
    "stream_id": ("<u4", 40), "correlation_id": ("<u4", 44),
}
_API_FIELDS = {"start": ("<u8", 8), "correlation_id": ("<u4", 32)}
FIELDS_BY_KIND = {
    KIND_CONCURRENT_KERNEL: _KERNEL_FIELDS, KIND_MEMCPY: _MEMCPY_FIELDS,
    KIND_MEMSET: _MEMSET_FIELDS, KIND_RUNTIME: _API_FIELDS, KIND_DRIVER: _API_FIELDS,
}
# Smallest record size each kind can have and still hold the fields above
MIN_SIZE = {kind: max(np.dtype(t).itemsize + o for t, o in f.values())
            for kind, f in FIELDS_BY_KIND.items()}

# Every struct version whose fields above lie at these offsets (cupti-python 13.4's dtypes):
# kernel9..13, memcpy6/7, memset4/5, api. A record of another size is refused.
KNOWN_SIZES: dict[int, tuple[int, ...]] = {
    KIND_CONCURRENT_KERNEL: (208, 216, 224, 232, 248), KIND_MEMCPY: (96, 112),
    KIND_MEMSET: (88, 104), KIND_RUNTIME: (40,), KIND_DRIVER: (40,),
}

LAYOUTS: dict[int, RecordLayout] = {}


def register_layout(layout: RecordLayout) -> None:
    for kind, size in layout.sizes.items():
        if kind in KNOWN_SIZES and size not in KNOWN_SIZES[kind]:
            raise ValueError(f"record size {size} for kind {kind} cannot hold its fields")
    LAYOUTS[layout.cupti_api_version] = layout


def layout_for(cupti_api_version: int) -> RecordLayout:
    """The layout of this CUPTI, or a one-line RecordLayoutError."""
    found = LAYOUTS.get(cupti_api_version)
    if found is None:
        known = ", ".join(str(v) for v in sorted(LAYOUTS)) or "none"
        raise RecordLayoutError(
            f"CUPTI API version {cupti_api_version} writes activity records in a layout "
            f"perfdiff has not checked (known: {known}); install the nvidia-cuda-cupti "
            "version perfdiff lists in docs/howto/collect.md"
        )
    return found


def _view_dtype(fields: dict[str, tuple[str, int]], size: int) -> np.dtype[Any]:
    return np.dtype({"names": list(fields), "formats": [t for t, _ in fields.values()],
                     "offsets": [o for _, o in fields.values()], "itemsize": size})


def walk(buffer: Array, valid: int, sizes: dict[int, int]) -> list[tuple[int, int, int]]:
    """Runs of same-kind records in ``buffer[:valid]``: (kind, byte offset, count).

    Raises RecordLayoutError (one line) for a kind with no known size or a record that runs
    past ``valid`` (a truncated buffer).
    """
    if valid > buffer.size:
        raise RecordLayoutError(f"activity buffer claims {valid} valid bytes but holds "
                                f"{buffer.size}; the buffer is truncated")
    runs: list[tuple[int, int, int]] = []
    view = buffer.data.cast("B")
    chains = _RunChains(buffer, valid)
    offset = 0
    while offset < valid:
        kind, size = _kind_at(view, offset, valid, sizes)
        fits = (valid - offset) // size
        if fits == 0:
            raise _truncated(offset, valid, f"a {size}-byte record of kind {kind}")
        count = 1
        if fits > 1 and int.from_bytes(view[offset + size:offset + size + 4], "little",
                                       signed=True) == kind:
            count = chains.run_length(kind, size, offset, fits)
        runs.append((kind, offset, count))
        offset += count * size
    return runs


class _RunChains:
    """How far a run of same-kind records goes from any record start, one lookup per run.

    Why: a launch-bound program's buffers interleave kernels with memcpys (HF GPT-2
    ``generate``: one every ~25 kernels), and finding where each run ends with a few numpy
    calls per run cost ~15 us a run on the H100 host, ~1.3 ms per 256 KiB hand-over, inside
    the program's steps. Records start on 8-byte slots. For a kind of ``size`` bytes, the
    slots whose first word is that kind are found once (one comparison); each such slot
    links to the one ``size / 8`` slots on when that holds the kind too, and pointer doubling
    over those links (a few gathers over ~1,000 slots) gives every slot the length of the run
    it starts: a table computed once per kind and buffer, then looked up. A buffer of one
    kind only is one comparison.
    """

    def __init__(self, buffer: Array, valid: int) -> None:
        self._buffer = buffer
        self._valid = valid
        self._lengths: dict[int, Array] = {}
        self._kinds: Array | None = None

    def run_length(self, kind: int, size: int, offset: int, fits: int) -> int:
        if size % 8 or offset % 8:  # not slot-aligned: check record by record (never seen)
            return _strided_run(self._buffer, offset, size, fits, kind)
        lengths = self._lengths.get(kind)
        if lengths is None:
            if offset == 0 and fits * size == self._valid and bool(np.all(
                    _strided_kinds(self._buffer, 0, size, fits) == kind)):
                return fits  # the whole buffer is one run
            lengths = self._lengths[kind] = self._run_lengths(kind, size // 8)
        return min(int(lengths[offset // 8]), fits)

    def _run_lengths(self, kind: int, width: int) -> Array:
        """Per slot holding ``kind``: how many records of that kind follow back to back."""
        if self._kinds is None:
            usable = self._valid - self._valid % 8
            self._kinds = np.ascontiguousarray(self._buffer[:usable].view("<i4")[::2])
        kinds = self._kinds
        starts = np.flatnonzero(kinds == kind)
        follower = np.minimum(np.searchsorted(starts, starts + width), starts.size - 1)
        linked = starts[follower] == starts + width
        last = np.where(linked, follower, np.arange(starts.size))
        while True:  # pointer doubling: each slot -> the last record of its run
            further = last[last]
            if np.array_equal(further, last):
                break
            last = further
        lengths = np.empty(kinds.size, dtype=np.int64)  # read only where a run starts
        lengths[starts] = (starts[last] - starts) // width + 1
        return lengths


def _strided_kinds(buffer: Array, offset: int, size: int, count: int) -> Array:
    return np.ndarray((count,), dtype="<i4", buffer=buffer, offset=offset, strides=(size,))


def _strided_run(buffer: Array, offset: int, size: int, fits: int, kind: int) -> int:
    """Length of the same-kind run from ``offset``, by one strided comparison."""
    other = np.flatnonzero(_strided_kinds(buffer, offset, size, fits) != kind)
    return int(other[0]) if other.size else fits


def _kind_at(view: memoryview, offset: int, valid: int, sizes: dict[int, int]) -> tuple[int, int]:
    if valid - offset < 4:
        raise _truncated(offset, valid, "a record header")
    kind = int.from_bytes(view[offset:offset + 4], "little", signed=True)
    size = sizes.get(kind)
    if size is None:
        raise RecordLayoutError(
            f"activity buffer holds a record of kind {kind} at byte {offset}, which this "
            f"layout does not know (known kinds: {sorted(sizes)}); not decoded"
        )
    return kind, size


def _truncated(offset: int, valid: int, what: str) -> RecordLayoutError:
    return RecordLayoutError(f"activity buffer ends at byte {valid}, inside {what} starting "
                             f"at byte {offset}; the buffer is truncated, not decoded")


def decode_buffer(buffer: Array, valid: int, layout: RecordLayout) -> TraceColumns:
    """The kernels, memcpys, memsets and launch records of one buffer, columnar.

    Kernel ``name_key`` is the address of CUPTI's name string; ``names`` is left empty for
    the caller to resolve (only the distinct addresses, once: raw_intake.py).
    """
    buf = np.asarray(buffer, dtype=np.uint8).reshape(-1)
    by_kind: dict[int, list[tuple[int, int]]] = {}
    for kind, offset, count in walk(buf, valid, layout.sizes):
        by_kind.setdefault(kind, []).append((offset, count))
    parts: dict[int, Array] = {}
    for kind, runs in by_kind.items():
        if kind not in FIELDS_BY_KIND:
            continue  # a kind perfdiff does not read (its size came from CUPTI's walk)
        size = layout.sizes[kind]
        fields = FIELDS_BY_KIND[kind]
        if len(runs) == 1:  # one run: a strided view, no index array
            offset, count = runs[0]
            view = np.ndarray((count,), dtype=_view_dtype(fields, size), buffer=buf,
                              offset=offset)
            parts[kind] = _compact(kind, {name: view[name] for name in fields})
        else:
            parts[kind] = _compact(kind, _gather(buf, _record_offsets(runs, size), fields))
    api = [parts[k] for k in (KIND_RUNTIME, KIND_DRIVER) if k in parts]
    return TraceColumns(
        kernels=_join([parts[KIND_CONCURRENT_KERNEL]] if KIND_CONCURRENT_KERNEL in parts
                      else None, KERNEL_DTYPE),
        memcpy=_join([parts[KIND_MEMCPY]] if KIND_MEMCPY in parts else None, TRANSFER_DTYPE),
        memset=_join([parts[KIND_MEMSET]] if KIND_MEMSET in parts else None, TRANSFER_DTYPE),
        api=_join(api or None, API_DTYPE),
    )


def _record_offsets(runs: list[tuple[int, int]], size: int) -> Array:
    """Byte offset of every record of the runs, in order."""
    starts = np.asarray([o for o, _ in runs], dtype=np.int64)
    counts = np.asarray([c for _, c in runs], dtype=np.int64)
    first = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(first, counts)
    out: Array = np.repeat(starts, counts) + within * size
    return out


def _gather(buf: Array, offsets: Array, fields: dict[str, tuple[str, int]]) -> dict[str, Array]:
    """Each field at ``offsets + field offset``, read through a view of its own width
    (records start 8-byte aligned and every field lies at a multiple of its width)."""
    usable = buf.size - buf.size % 8
    out = {}
    for name, (fmt, field_offset) in fields.items():
        dtype = np.dtype(fmt)
        words = buf[:usable].view(dtype)
        out[name] = words[(offsets + field_offset) // dtype.itemsize]
    return out


def _join(arrays: list[Array] | None, dtype: np.dtype[Any]) -> Array:
    if not arrays:
        return np.zeros(0, dtype=dtype)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _compact(kind: int, view: dict[str, Array]) -> Array:
    if kind == KIND_CONCURRENT_KERNEL:
        out = np.empty(view["start"].size, dtype=KERNEL_DTYPE)
        out["name_key"] = view["name"]
        for name in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"):
            out[name] = view[name]
    elif kind in (KIND_MEMCPY, KIND_MEMSET):
        out = np.empty(view["start"].size, dtype=TRANSFER_DTYPE)
        out["bytes"] = view["bytes"]
        out["kind"] = view["copy_kind"] if kind == KIND_MEMCPY else MEMSET_KIND
    else:
        out = np.empty(view["start"].size, dtype=API_DTYPE)
        out["start"] = view["start"]
        out["correlation_id"] = view["correlation_id"]
        return out
    out["start"] = view["start"]
    out["end"] = view["end"]
    out["correlation_id"] = view["correlation_id"]
    out["device"] = view["device_id"]
    out["stream"] = view["stream_id"]
    return out


__all__ = ["FIELDS_BY_KIND", "LAYOUTS", "RecordLayout", "RecordLayoutError", "decode_buffer",
           "layout_for", "register_layout", "walk"]


# CUPTI 13.4 (nvidia-cuda-cupti 13.4.92, CUPTI_API_VERSION 130401) writes the newest struct
# versions of its header: CUpti_ActivityKernel13, Memcpy7, Memset5, API. Checked on the
# H100 against cupti-python's objects (record addresses and every field perfdiff keeps):
# scripts/gpu/intake_check.py, bench/README.md "Raw intake".
register_layout(RecordLayout(
    cupti_api_version=130401,
    sizes={KIND_CONCURRENT_KERNEL: 248, KIND_MEMCPY: 112, KIND_MEMSET: 104,
           KIND_RUNTIME: 40, KIND_DRIVER: 40},
    note="CUPTI 13.4: kernel13, memcpy7, memset5, api",
))
