"""The one way perfdiff writes a file: reports, tables, run files.

Why one helper: every command used to write its outputs its own way, and between them a report
could replace an input (``compare A B -o A``), a full disk could leave a truncated report where
the old one had been, and an unwritable ``-o`` was reported as a bug. Here, for every command:

- the target is refused when it is one of the command's inputs (same resolved path, or the
  same file through another name);
- the bytes go to a temp file in the target's folder, are fsync'd, and replace the target by
  one rename, so a reader sees the old file or the new one, never half of one;
- the new file gets the normal mode of a new file (0666 less the umask), not the temp file's
  0600;
- any failure is an :class:`perfdiff.errors.OutputError` (exit 3, one line: what, where, what
  to do), and the previous file is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from perfdiff.errors import OutputError


def _umask() -> int:
    """The process umask (reading it means setting it; put it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _same_file(target: Path, source: Path) -> bool:
    try:
        if target.resolve() == source.resolve():
            return True
        return target.exists() and source.exists() and os.path.samefile(target, source)
    except (OSError, RuntimeError):  # a symlink loop or an unreadable folder: not the same
        return False


def refuse_inputs(target: str | os.PathLike[str],
                  inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Raise :class:`OutputError` when ``target`` is one of ``inputs`` (by any name)."""
    path = Path(target)
    for source in inputs:
        if _same_file(path, Path(source)):
            raise OutputError(
                f"{path}: is one of the inputs; writing there would destroy it; "
                "pass another path to -o"
            )


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte to ``fd`` (a seam for tests that fake a full disk)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_atomic(target: str | os.PathLike[str], data: bytes | str, *,
                 inputs: Iterable[str | os.PathLike[str]] = (),
                 what: str = "the output") -> Path:
    """Write ``data`` to ``target`` atomically (see the module docstring); return the path.

    ``what`` names the thing in the error line (``"the report"``, ``"the run file"``).
    """
    path = Path(target)
    refuse_inputs(path, inputs)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; pass a file path to -o")
    if path.exists() and not path.is_file():  # /dev/stdout, /dev/null, a pipe: a stream
        return _write_stream(path, payload, what)
    if path.is_symlink():  # write where the link points; the link stays a link
        path = Path(os.path.realpath(path))
    folder = path.parent
    tmp_name = ""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp_name, path)
    except OSError as exc:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        reason = exc.strerror or type(exc).__name__
        kept = " (the previous file is unchanged)" if path.is_file() else ""
        raise OutputError(
            f"{path}: cannot write {what} ({reason}){kept}; check the folder exists and is "
            "writable and the disk has space, or pass another path to -o"
        ) from exc
    except BaseException:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        raise
    return path


def _write_stream(path: Path, payload: bytes, what: str) -> Path:
    """A device or pipe cannot be replaced by a rename (and must not be: as root that would
    put a regular file where /dev/stdout was): write into it."""
    try:
        with open(path, "wb") as stream:
            stream.write(payload)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write {what} ({exc.strerror or type(exc).__name__})"
                          "; pass another path to -o") from exc
    return path


__all__ = ["refuse_inputs", "write_atomic"]
