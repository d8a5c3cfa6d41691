"""Is this input there and readable? Answered before anything heavy is imported.

Why a module of its own (standard library only): a missing or unreadable file must be reported
in a blink (< 0.3 s), not after pandas and scipy have been imported (1.7 s); and every way a
path can fail (missing, a symlink loop, a folder that cannot be entered, a file that cannot be
read) must be told apart, in one line that says what to do, not reported as "no such file" or
as a bug.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from perfdiff.errors import InputError

RUN_FILE_HINT = "run files end in .json or .json.gz"


def _stat_problem(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop; point it at a real file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ("cannot be reached (permission denied on a folder above it); check the "
                "folders' permissions or copy the file somewhere readable")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        if path.is_symlink():
            return f"is a broken symlink (to {os.readlink(path)}); point it at a real file"
        return f"no such file; check the path ({RUN_FILE_HINT})"
    if exc.errno == errno.ENAMETOOLONG:
        return "the path is too long; check it"
    return f"cannot be read ({exc.strerror or type(exc).__name__}); check the path"


def require_input(path: str | os.PathLike[str], *, folder_ok: bool = False) -> Path:
    """Raise :class:`InputError` (one line) unless ``path`` is a readable file (or, with
    ``folder_ok``, a folder that can be listed); return it as a :class:`Path`."""
    p = Path(path)
    try:
        info = os.stat(p)
    except OSError as exc:
        raise InputError(f"{p}: {_stat_problem(p, exc)}") from None
    except ValueError:  # an embedded NUL byte
        raise InputError(f"{p}: not a valid path") from None
    if stat.S_ISDIR(info.st_mode):
        if not folder_ok:
            raise InputError(f"{p}: is a folder, not a run file; pass the file itself")
        if not os.access(p, os.R_OK | os.X_OK):
            raise InputError(f"{p}: folder cannot be read (permission denied); check its "
                             "permissions")
        return p
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{p}: not a regular file (a device, pipe or socket); pass a run file")
    try:
        with open(p, "rb"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputError(f"{p}: cannot be read ({reason}); check its permissions") from None
    return p


@dataclass(frozen=True)
class CheckedInputs:
    """The input paths (as typed) that the console script checked before the heavy imports
    (``perfdiff.cli.entry``). The command hands them to the door (``readers.dispatch``), which
    then does not check them again: every input is checked once per command."""

    paths: frozenset[str] = frozenset()

    @classmethod
    def of(cls, paths: Iterable[str | os.PathLike[str]]) -> CheckedInputs:
        """The paths, spelled as :class:`Path` spells them (the commands get ``Path``s:
        ``./a.json`` arrives as ``a.json``)."""
        return cls(frozenset(os.fspath(Path(p)) for p in paths))

    def holds(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` was checked already."""
        return os.fspath(Path(path)) in self.paths


__all__ = ["CheckedInputs", "require_input"]
