"""Trace records held columnar: one numpy structured array per record type.

Why: a launch-bound program makes a million kernel launches in under a minute. One Python
object per record (the former path: cupti-python's objects, then our tuples) cost 3.6-7 us of
interpreter time per record while the program ran and hundreds of bytes each. Here a record
is a fixed-size row of the few fields perfdiff keeps (kernels 60 bytes, launch records 12),
filled by vectorised copies out of CUPTI's buffers (``decode.py``).

Kernel names are kept as *keys*: the address of CUPTI's name string for decoded records
(resolved once per distinct address, ``raw_intake.py``), or a negative key for records built
from Python tuples (fakes, tests); ``names`` maps every key to the mangled name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KERNEL_DTYPE = np.dtype([
    ("start", "<i8"), ("end", "<i8"), ("name_key", "<i8"), ("correlation_id", "<u4"),
    ("device", "<u4"), ("stream", "<u4"),
    ("grid_x", "<i4"), ("grid_y", "<i4"), ("grid_z", "<i4"),
    ("block_x", "<i4"), ("block_y", "<i4"), ("block_z", "<i4"),
])
TRANSFER_DTYPE = np.dtype([
    ("start", "<i8"), ("end", "<i8"), ("bytes", "<u8"), ("correlation_id", "<u4"),
    ("device", "<u4"), ("stream", "<u4"), ("kind", "u1"),
])
API_DTYPE = np.dtype([("correlation_id", "<u4"), ("start", "<i8")])

# CUPTI's CUpti_ActivityMemcpyKind values 0..10 as the run file spells them, then memset
TRANSFER_KINDS: tuple[str, ...] = ("unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD",
                                   "DtoA", "DtoD", "HtoH", "PtoP", "memset")
MEMSET_KIND = TRANSFER_KINDS.index("memset")
_KIND_CODE = {text: code for code, text in enumerate(TRANSFER_KINDS)}

Array = np.ndarray[Any, np.dtype[Any]]


def empty(dtype: np.dtype[Any]) -> Array:
    return np.zeros(0, dtype=dtype)


@dataclass
class TraceColumns:
    """Every record of one collection, columnar; ``names``: name key -> mangled name."""

    kernels: Array = field(default_factory=lambda: empty(KERNEL_DTYPE))
    memcpy: Array = field(default_factory=lambda: empty(TRANSFER_DTYPE))
    memset: Array = field(default_factory=lambda: empty(TRANSFER_DTYPE))
    api: Array = field(default_factory=lambda: empty(API_DTYPE))
    names: dict[int, str] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.kernels, self.memcpy, self.memset, self.api))

    def without_streams(self, streams: Iterable[int]) -> TraceColumns:
        """These columns less the kernels and memsets on ``streams``."""
        ids = np.asarray(sorted(set(streams)), dtype=np.uint32)
        return TraceColumns(
            kernels=self.kernels[~np.isin(self.kernels["stream"], ids)],
            memcpy=self.memcpy,
            memset=self.memset[~np.isin(self.memset["stream"], ids)],
            api=self.api, names=self.names,
        )


def concat(parts: Sequence[TraceColumns]) -> TraceColumns:
    """One TraceColumns holding the parts' records in order (name keys must not clash)."""
    if len(parts) == 1:
        return parts[0]
    names: dict[int, str] = {}
    for part in parts:
        names.update(part.names)

    def join(attr: str, dtype: np.dtype[Any]) -> Array:
        arrays = [getattr(p, attr) for p in parts]
        return np.concatenate(arrays) if arrays else empty(dtype)

    return TraceColumns(
        kernels=join("kernels", KERNEL_DTYPE), memcpy=join("memcpy", TRANSFER_DTYPE),
        memset=join("memset", TRANSFER_DTYPE), api=join("api", API_DTYPE), names=names,
    )


def kind_code(text: str) -> int:
    """The transfer-kind code of a run-file kind text ("unknown" for texts not listed)."""
    return _KIND_CODE.get(text, 0)


def from_records(kernels: Sequence[Any], memcpy: Sequence[Any], memset: Sequence[Any],
                 api: Sequence[Any]) -> TraceColumns:
    """Columns from ``records.py``'s tuples (the fakes' and tests' form); names get keys
    -1, -2, ... in order of first appearance."""
    keys: dict[str, int] = {}
    k = np.zeros(len(kernels), dtype=KERNEL_DTYPE)
    for i, r in enumerate(kernels):
        key = keys.setdefault(r.name, -1 - len(keys))
        k[i] = (r.start_ns, r.end_ns, key, r.correlation_id, r.device, r.stream,
                *r.grid, *r.block)
    out = TraceColumns(kernels=k, memcpy=_transfers(memcpy), memset=_transfers(memset),
                       names={v: name for name, v in keys.items()})
    a = np.zeros(len(api), dtype=API_DTYPE)
    for i, r in enumerate(api):
        a[i] = (r.correlation_id, r.start_ns)
    out.api = a
    return out


def _transfers(records: Sequence[Any]) -> Array:
    t = np.zeros(len(records), dtype=TRANSFER_DTYPE)
    for i, r in enumerate(records):
        t[i] = (r.start_ns, r.end_ns, r.bytes, r.correlation_id, r.device, r.stream,
                kind_code(r.kind))
    return t


__all__ = ["API_DTYPE", "KERNEL_DTYPE", "MEMSET_KIND", "TRANSFER_DTYPE", "TRANSFER_KINDS",
           "TraceColumns", "concat", "from_records", "kind_code"]
