"""The one way perfdiff writes a file: reports, tables, run files.

Why one helper: every command used to write its outputs its own way, and between them a report
could replace an input (``compare A B -o A``), a full disk could leave a truncated report where
the old one had been, and an unwritable ``-o`` was reported as a bug. Here, for every command:

- the target is refused when it is one of the command's inputs (same resolved path, or the
  same file through another name), lies inside an input folder (a LatencyPrism folder, a
  folder of rank traces: ``compare lp/ lp2/ -o lp/result_perf_data.csv`` replaced an input
  CSV), or is a file that a link inside an input folder resolves to;
- the outputs of one command (a report and its ``--plots`` figures) land together or not at
  all (:func:`write_together`): every file is staged first, and only when all are staged
  are they renamed into place, so a failure leaves the previous report and figures as they
  were;
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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


# How many entries of an input folder are looked at for links to the target: input folders
# hold a few CSVs or a few hundred rank traces; a bound keeps a huge folder from stalling.
FOLDER_SCAN_LIMIT = 100_000


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _inside(target: Path, folder: Path) -> bool:
    """Is ``target`` (resolved) the folder or anything below it (resolved)?"""
    resolved_target, resolved_folder = _resolved(target), _resolved(folder)
    return resolved_target == resolved_folder or resolved_folder in resolved_target.parents


def _folder_files(folder: Path) -> Iterable[Path]:
    """The entries below ``folder`` (at most :data:`FOLDER_SCAN_LIMIT`), unreadable ones
    skipped: a link inside may point at a file outside the folder."""
    seen = 0
    for root, dirs, files in os.walk(folder, onerror=None):
        for name in (*files, *dirs):
            seen += 1
            if seen > FOLDER_SCAN_LIMIT:
                return
            yield Path(root) / name


def refuse_inputs(target: str | os.PathLike[str],
                  inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Raise :class:`OutputError` when ``target`` is one of ``inputs`` (by any name), lies
    inside an input folder, or is a file an entry of an input folder resolves to."""
    path = Path(target)
    for source in inputs:
        source_path = Path(source)
        if _same_file(path, source_path):
            raise OutputError(
                f"{_shown(path)}: is one of the inputs; writing there would destroy it; "
                "pass another path to -o"
            )
        if not source_path.is_dir():
            continue
        if _inside(path, source_path):
            raise OutputError(
                f"{_shown(path)}: is inside the input folder {_shown(source_path)}; writing "
                "there could replace or add to an input; pass a path outside it to -o"
            )
        for entry in _folder_files(source_path):
            if entry.is_symlink() and _same_file(path, entry):
                raise OutputError(
                    f"{_shown(path)}: is the file that {_shown(entry)} (in the input folder) "
                    "points to; writing there would destroy an input; pass another path to -o"
                )


def _shown(path: Path) -> str:
    """``path`` as one line of text: a newline or other control character in a name would
    split the error line; they are shown escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "replace").decode("ascii")
                   for c in str(path))


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte to ``fd`` (a seam for tests that fake a full disk)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@dataclass(frozen=True)
class OutputFile:
    """One file of a command's output: where, what bytes, and what it is (for the error)."""

    target: Path
    data: bytes
    what: str


def output_file(target: str | os.PathLike[str], data: bytes | str,
                what: str = "the output") -> OutputFile:
    """An :class:`OutputFile` (text is written as UTF-8)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    return OutputFile(Path(target), payload, what)


def write_atomic(target: str | os.PathLike[str], data: bytes | str, *,
                 inputs: Iterable[str | os.PathLike[str]] = (),
                 what: str = "the output") -> Path:
    """Write ``data`` to ``target`` atomically (see the module docstring); return the path.

    ``what`` names the thing in the error line (``"the report"``, ``"the run file"``).
    """
    return write_together([output_file(target, data, what)], inputs=inputs)[0]


def write_together(files: Sequence[OutputFile], *,
                   inputs: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """Write every file of ``files`` or none (see the module docstring); return the paths.

    Every target is checked against ``inputs`` first, then every file is staged beside its
    target; only when all are staged are they renamed into place. Streams (/dev/stdout) are
    written last, after the files have landed.
    """
    sources = list(inputs)
    for item in files:
        refuse_inputs(item.target, sources)
    staged: list[tuple[str, Path, OutputFile]] = []
    streams: list[OutputFile] = []
    try:
        for item in files:
            path = _regular_target(item)
            if path is None:
                streams.append(item)
                continue
            staged.append((_stage(path, item), path, item))
        for tmp_name, path, item in staged:
            try:
                os.replace(tmp_name, path)
            except OSError as exc:
                raise _cannot_write(path, item.what, exc) from exc
    finally:
        for tmp_name, _, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)  # gone after a rename; a stray temp file otherwise
    for item in streams:
        _write_stream(item.target, item.data, item.what)
    return [_regular_target(item) or item.target for item in files]


def _regular_target(item: OutputFile) -> Path | None:
    """Where ``item`` lands (through a link), or None for a stream (a device, a pipe)."""
    path = item.target
    if path.is_dir():
        raise OutputError(f"{_shown(path)}: is a folder; pass a file path to -o")
    if path.exists() and not path.is_file():  # /dev/stdout, /dev/null, a pipe: a stream
        return None
    if path.is_symlink():  # write where the link points; the link stays a link
        return Path(os.path.realpath(path))
    return path


def _stage(path: Path, item: OutputFile) -> str:
    """Write ``item`` to a temp file beside ``path`` (fsync'd, normal mode); its name."""
    tmp_name = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            _write_all(fd, item.data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        raise _cannot_write(path, item.what, exc) from exc
    except BaseException:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        raise
    return tmp_name


def _cannot_write(path: Path, what: str, exc: OSError) -> OutputError:
    reason = exc.strerror or type(exc).__name__
    kept = " (the previous file is unchanged)" if path.is_file() else ""
    return OutputError(
        f"{_shown(path)}: cannot write {what} ({reason}){kept}; check the folder exists and is "
        "writable and the disk has space, or pass another path to -o"
    )


def _write_stream(path: Path, payload: bytes, what: str) -> Path:
    """A device or pipe cannot be replaced by a rename (and must not be: as root that would
    put a regular file where /dev/stdout was): write into it."""
    try:
        with open(path, "wb") as stream:
            stream.write(payload)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OutputError(f"{_shown(path)}: cannot write {what} ({reason}); pass another "
                          "path to -o") from exc
    return path


__all__ = ["OutputFile", "output_file", "refuse_inputs", "write_atomic", "write_together"]
