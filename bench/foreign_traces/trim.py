"""Trim a public torch.profiler trace into a fixture: drop the event kinds perfdiff never reads.

Why: the fixtures under fixtures/kineto/foreign are real traces recorded by others (provenance
in fixtures/README.md); most of their bytes are ``python_function`` events (the Python call
stack), flows and CPU instant events, which the reader turns away unread. Every other event
and every top-level key is kept byte for byte (msgspec raw slices: timestamps with nanosecond
decimals are never round-tripped through a float), so the reader sees what it would in the
original.

  python bench/foreign_traces/trim.py SOURCE.json.gz DEST.json.gz
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import msgspec

DROPPED = frozenset({"python_function", "cpu_instant_event", "ac2g", "fwdbwd"})


class _Cat(msgspec.Struct):
    cat: str = ""


def trim(source: Path, dest: Path) -> tuple[int, int]:
    """Write ``source`` without the dropped categories; (events before, events after)."""
    data = source.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    trace = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    events = msgspec.json.decode(trace["traceEvents"], type=list[msgspec.Raw])
    cat = msgspec.json.Decoder(_Cat).decode
    kept = [raw for raw in events if cat(raw).cat not in DROPPED]
    trace["traceEvents"] = msgspec.Raw(b"[" + b",\n".join(bytes(r) for r in kept) + b"]")
    dest.write_bytes(gzip.compress(msgspec.json.encode(trace), compresslevel=9, mtime=0))
    return len(events), len(kept)


if __name__ == "__main__":
    before, after = trim(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{sys.argv[2]}: {after} of {before} events kept")
