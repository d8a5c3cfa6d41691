"""CUPTI's completed activity buffers written to a spool file as they come; decoded after the run.

Why: decoding a completed buffer where CUPTI hands it over (its own thread, holding the
interpreter) or at the next hand-over put perfdiff's work inside the program's cycles: timm
ViT-S bf16 traced cycles held the interpreter 10-44 ms, 17 of 60 cycles above 1 ms (H100,
2026-11-28). Writing the raw bytes is one ``os.writev`` of a memoryview (no copy in Python,
the interpreter lock released during the system call; ~0.1 ms for 256 KiB), and the buffer
goes back to the pool at once. The decode (``decode.py``) runs when the collection stops,
after the program's last cycle, in the same process, where the kernel names (addresses of
CUPTI's strings) can still be read.

Why a file and not memory: a process killed outright (SIGKILL, a segfault) leaves the file,
so what CUPTI had handed over is still on disk beside the shard the process never wrote, and
the parent says so (``user_program.py``); memory holds nothing between buffers.

Format: frames back to back, each ``MAGIC`` (4 bytes), the valid byte count (uint32, little
endian), then that many bytes of CUPTI's buffer. A frame cut off at the end (the process died
while writing it) is not read; a frame with another magic means the file is not a spool, and
reading stops there with an error line.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"PDB1"
_HEADER = struct.Struct("<4sI")
SPOOL_SUFFIX = ".cupti-spool"


class SpoolError(OSError):
    """The spool file could not be written or read; one line (the caller decides)."""


class SpoolWriter:
    """Appends completed CUPTI buffers to one file; safe from several threads at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        self._fd: int | None = os.open(path, flags, 0o600)
        self._lock = threading.Lock()
        self.frames = 0
        self.good_bytes = 0  # end of the last frame written whole

    def write(self, array: np.ndarray[Any, np.dtype[np.uint8]], valid: int) -> int:
        """Append ``array[:valid]`` as one frame; the CPU time (ns, this thread) spent in the
        system calls, during which the interpreter lock is released. SpoolError if it could
        not be written whole (the file then ends in a cut-off frame, which readers skip)."""
        header = _HEADER.pack(MAGIC, valid)
        body = memoryview(array)[:valid]  # type: ignore[arg-type]
        with self._lock:
            if self._fd is None:
                raise SpoolError(f"spool {self.path} is closed")
            parts: list[Any] = [header, body]
            left = len(header) + valid
            spent = 0
            try:
                while left:
                    before = time.thread_time_ns()
                    done = os.writev(self._fd, parts)
                    spent += time.thread_time_ns() - before
                    left -= done
                    parts = _rest(parts, done)
            except OSError as exc:
                raise SpoolError(f"cannot write the activity spool {self.path} "
                                 f"({exc.strerror or exc})") from None
            self.frames += 1
            self.good_bytes += len(header) + valid
            return spent

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _rest(parts: list[Any], done: int) -> list[Any]:
    """What is left of ``parts`` (bytes-likes) once ``done`` bytes were written."""
    out: list[Any] = []
    for part in parts:
        size = len(part)
        if done >= size:
            done -= size
            continue
        out.append(memoryview(part)[done:])
        done = 0
    return out


def read_frames(path: Path, limit: int | None = None
                ) -> Iterator[tuple[np.ndarray[Any, np.dtype[np.uint8]], int]]:
    """Each whole frame of the spool as ``(array, valid)``; ``array`` is reused between
    frames (decode it before asking for the next). ``limit``: read no further than this
    many bytes (the writer's ``good_bytes``). A cut-off last frame ends the walk quietly;
    a bad magic raises SpoolError."""
    buffer = np.empty(0, np.uint8)
    offset = 0
    try:
        f = open(path, "rb")  # noqa: SIM115 (a generator: closed in finally)
    except OSError as exc:
        raise SpoolError(f"cannot read the activity spool {path} ({exc.strerror})") from None
    try:
        while limit is None or offset + _HEADER.size <= limit:
            header = f.read(_HEADER.size)
            if len(header) < _HEADER.size:
                return
            magic, valid = _HEADER.unpack(header)
            if magic != MAGIC:
                raise SpoolError(f"{path} is not an activity spool (bad frame at byte "
                                 f"{offset})")
            if limit is not None and offset + _HEADER.size + valid > limit:
                return
            if buffer.size < valid:
                buffer = np.empty(valid, np.uint8)
            got = f.readinto(memoryview(buffer)[:valid])  # type: ignore[arg-type]
            if got is None or got < valid:
                return  # cut off: the process ended while writing it
            offset += _HEADER.size + valid
            yield buffer, valid
    finally:
        f.close()


def spool_summary(path: Path) -> tuple[int, int]:
    """(whole frames, their bytes) in a spool file; what a dead process handed over."""
    frames = size = 0
    for _array, valid in read_frames(path):
        frames += 1
        size += valid
    return frames, size


__all__ = ["MAGIC", "SPOOL_SUFFIX", "SpoolError", "SpoolWriter", "read_frames", "spool_summary"]
