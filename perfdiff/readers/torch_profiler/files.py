"""Finding trace files and getting their bytes: detection by content, gzip, the top-level decode.

Why its own module: ``perfdiff import`` and the input dispatcher ask "is this a trace?"
without reading one, and every failure to get a decodable document (missing, unreadable,
truncated gzip, empty, not JSON) is a one-line InputError naming the file, decided here.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import msgspec

from perfdiff.errors import InputError
from perfdiff.limits import read_input_bytes
from perfdiff.readers.torch_profiler.events import TRACE_DECODER, Trace

_SNIFF_BYTES = 1 << 20  # how much of a (decompressed) file is looked at to tell its kind


def _head(path: Path) -> bytes:
    """The first bytes of a file, decompressed when it is gzip (a damaged tail is fine here)."""
    with path.open("rb") as fh:
        data = fh.read(_SNIFF_BYTES)
    if data[:2] != b"\x1f\x8b":
        return data
    inflater = zlib.decompressobj(wbits=31)
    try:
        return inflater.decompress(data, _SNIFF_BYTES)
    except zlib.error:
        return b""


def is_trace_file(path: Path) -> bool:
    """Whether a file holds a Kineto trace (by its content: a ``traceEvents`` key)."""
    try:
        head = _head(path)
    except OSError:
        return False
    start = head.lstrip()[:1]
    if start != b"{":
        return False
    if b'"schema_version"' in head and b'"runs"' in head:  # a perfdiff run file
        return False
    return b'"traceEvents"' in head


def trace_files_in(folder: Path) -> list[Path]:
    """The Kineto traces directly in a folder (one per rank, as tensorboard_trace_handler)."""
    candidates = sorted(p for p in folder.iterdir() if p.is_file() and (
        p.name.endswith((".json", ".json.gz"))))
    return [p for p in candidates if is_trace_file(p)]


def is_torch_profiler_input(path: Path) -> bool:
    """A trace file, or a folder holding at least one trace file."""
    if path.is_dir():
        return bool(trace_files_in(path))
    return path.is_file() and is_trace_file(path)


def file_bytes(path: Path) -> bytes:
    if not path.exists():
        raise InputError(f"{path}: no such file; check the path")
    data = read_input_bytes(path, "re-copy or re-export the trace")  # bounded
    if not data or data.isspace():  # not data.strip(): that copies the whole file
        raise InputError(f"{path}: file is empty")
    return data


def decode_trace(path: Path, data: bytes) -> Trace:
    try:
        return TRACE_DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise InputError(f"{path}: not a torch.profiler trace as expected ({exc})") from None
    except RecursionError:
        raise InputError(f"{path}: not a torch.profiler trace (JSON nested too deeply); pass "
                         "the trace file itself") from None
    except msgspec.DecodeError as exc:
        hint = "file is truncated" if "truncated" in str(exc) else "not valid JSON"
        raise InputError(f"{path}: {hint} ({exc}); re-copy or re-export the trace") from None
