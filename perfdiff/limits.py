"""Bounded reading: how large an input may be once decompressed, and how to get its bytes.

Why: a 6.3 MB gzip file that inflates to 6 GiB took 91 s and 18.5 GiB of memory before a
clean exit, and a 40 GiB file ended in a MemoryError (exit 70). Here every input's bytes are
read with two bounds, each a one-line :class:`InputError` naming the file and what to do:

- **size**: a plain file larger than the limit is refused before it is read, and a gzip file
  is refused as soon as its inflated size passes the limit (:data:`DEFAULT_MAX_INPUT_BYTES`,
  raised with ``--max-input-gib 16`` on any command that reads inputs, or for every command
  with the ``PERFDIFF_MAX_INPUT_GIB`` environment variable, e.g. ``=16``);
- **ratio**: real traces and run files inflate 3-20 times (the fixtures and the shared
  Kineto traces: at most 20x); a gzip stream whose first :data:`PROBE_BYTES` inflate more than
  :data:`MAX_RATIO` times is a decompression bomb (gzip's own maximum is ~1032x) and is
  refused after inflating at most ``PROBE_BYTES * MAX_RATIO`` bytes (50 MiB), in milliseconds.

Concatenated gzip members (``cat a.gz b.gz``, what ``gzip`` itself reads as one file) are read
whole; bytes after the last member that are not padding are refused, never dropped.

Standard library only: the door (``perfdiff.cli.entry``) may import it before numpy.
"""

from __future__ import annotations

import os
import zlib
from typing import TYPE_CHECKING

from perfdiff.errors import InputError, UsageError

if TYPE_CHECKING:  # pathlib costs the door ~40 ms at import (perfdiff.cli.input_limit)
    from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
MAX_INPUT_ENV = "PERFDIFF_MAX_INPUT_GIB"
DEFAULT_MAX_INPUT_BYTES = 4 << 30  # 4 GiB inflated: the largest real trace seen was 33 MiB
MAX_RATIO = 200
PROBE_BYTES = 256 << 10


MAX_INPUT_OPTION = "--max-input-gib"
_option_gib: float | None = None  # this command line's --max-input-gib (perfdiff.cli.input_limit)


def set_max_input_gib(gib: float | None) -> None:
    """The limit given on the command line (checked there), or None for the environment's.

    Why process state and not an argument: the limit is read where bytes are read, deep in
    every reader; one command runs per process (in-process callers set it per command)."""
    global _option_gib
    _option_gib = gib


def max_input_bytes() -> int:
    """The size limit: ``--max-input-gib``, else ``PERFDIFF_MAX_INPUT_GIB`` (a positive number
    of GiB), else the default."""
    if _option_gib is not None:
        return int(_option_gib * (1 << 30))
    raw = os.environ.get(MAX_INPUT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_INPUT_BYTES
    try:
        gib = float(raw)
    except ValueError:
        gib = float("nan")
    if not 0 < gib <= 1 << 20:  # NaN fails too
        raise UsageError(f"{MAX_INPUT_ENV}={raw!r} is not a size; give a number of GiB above 0 "
                         "(e.g. 16)")
    return int(gib * (1 << 30))


RAISE_LIMIT = (f"raise the limit ({MAX_INPUT_OPTION} 16, or {MAX_INPUT_ENV}=16 in the "
               "environment) on a machine with the memory for it")


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.3g} GiB"


def _too_large(source: str | Path, what: str) -> InputError:
    return InputError(
        f"{source}: {what}, above the input limit of {_gib(max_input_bytes())}; if the file is "
        f"real, {RAISE_LIMIT}"
    )


def read_input_bytes(path: Path, redo: str) -> bytes:
    """The bytes of ``path``, inflated when it is gzip, within both bounds.

    ``redo`` is what to do about a damaged file ("re-copy or re-record the file")."""
    limit = max_input_bytes()
    try:
        size = path.stat().st_size
        if size > limit:
            raise _too_large(path, f"the file holds {_gib(size)}")
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__}); "
                         "check the file and its permissions") from exc
    except MemoryError:
        raise _too_large(path, "the file does not fit in memory") from None
    if data[:2] == GZIP_MAGIC:
        return gunzip_bounded(data, path, redo, limit)
    return data


def gunzip_bounded(data: bytes, source: str | Path, redo: str,
                   limit: int | None = None) -> bytes:
    """Inflate every gzip member of ``data`` within the size and ratio bounds."""
    limit = max_input_bytes() if limit is None else limit
    try:
        _probe(data, source)
        fast = _one_member(data, limit)
        if fast is not None:
            return fast
        return _members(data, source, redo, limit)
    except zlib.error as exc:
        raise InputError(f"{source}: gzip data is truncated or corrupt ({exc}); {redo}") from None
    except MemoryError:
        raise _too_large(source, "the inflated data does not fit in memory") from None


def _probe(data: bytes, source: str | Path) -> None:
    """Refuse a stream whose first :data:`PROBE_BYTES` inflate more than :data:`MAX_RATIO`x."""
    head = data[:PROBE_BYTES]
    cap = PROBE_BYTES * MAX_RATIO
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = len(inflater.decompress(head, cap + 1))
    except zlib.error:
        return  # damage: the real read below says so, with the file's own error
    if out > cap:
        raise InputError(
            f"{source}: gzip data inflates more than {MAX_RATIO} times ({len(head):,} bytes "
            f"give over {cap:,}): a decompression bomb, not a trace or run file (those inflate "
            "3-20 times); pass the real file"
        )


def _one_member(data: bytes, limit: int) -> bytes | None:
    """The usual file (one member whose trailer states its size): inflated into one buffer
    of that size (peak memory: the output once; a bounded decompressobj joins blocks, twice
    the output: 201 vs 116 MiB for a 1,000,000-launch run file); None for anything else.

    zlib stops silently after the first member, so the result is kept only when the file's
    last 8 bytes (CRC and size of the last member) describe it: with several members they
    describe another one. (A file of one member repeated is the one such file read as one
    copy.) The trailer sizes the buffer only after the probe has passed and within the limit.
    """
    announced = int.from_bytes(data[-4:], "little") if len(data) >= 18 else 0
    if not announced or announced > limit or announced > MAX_RATIO * len(data) + (64 << 20):
        return None
    out = zlib.decompress(data, wbits=31, bufsize=announced)
    if len(out) == announced and zlib.crc32(out) == int.from_bytes(data[-8:-4], "little"):
        return out
    return None


def _members(data: bytes, source: str | Path, redo: str, limit: int) -> bytes:
    """Every member, in order, bounded by ``limit``; trailing bytes that are not zero padding
    are refused (never dropped)."""
    parts: list[bytes] = []
    total = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        out = inflater.decompress(rest, limit - total + 1)
        total += len(out)
        if total > limit:
            raise _too_large(source, "the gzip data inflates to more than that")
        if not inflater.eof:
            raise InputError(f"{source}: gzip data is truncated or corrupt (it ends before "
                             f"its end marker, after {total:,} bytes); {redo}")
        parts.append(out)
        rest = inflater.unused_data
        if rest and rest[:2] != GZIP_MAGIC:
            if not rest.strip(b"\0"):
                break  # zero padding (tape, some copiers): not data
            raise InputError(f"{source}: {len(rest):,} bytes after the end of the gzip data "
                             f"are not gzip; {redo}")
    return parts[0] if len(parts) == 1 else b"".join(parts)


__all__ = ["DEFAULT_MAX_INPUT_BYTES", "MAX_INPUT_ENV", "MAX_INPUT_OPTION", "MAX_RATIO",
           "RAISE_LIMIT", "gunzip_bounded", "max_input_bytes", "read_input_bytes",
           "set_max_input_gib"]
