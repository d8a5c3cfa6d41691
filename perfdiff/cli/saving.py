"""Saving a recording: ``perfdiff collect`` never loses one to an unwritable ``-o``.

Why a fallback only here: a report can be made again from its inputs, a recording cannot (the
program has run). When ``-o`` cannot be written, the run file goes to the temp folder under a
name that says where it came from, the user is told where, and the command still exits 3.

``shards``: the recording is written as a sharded run (``schema.shards``: a folder, one Parquet
shard per run, i.e. per rank of a torchrun job, each with the run metadata) that ``compare``,
``ranks`` and ``merge`` read shard by shard; the fallback is then a folder too.
"""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

from perfdiff.errors import OutputError
from perfdiff.schema.io import save_run_file
from perfdiff.schema.model import RunFile


def fallback_path(output: Path) -> Path:
    """Where a recording goes when ``output`` cannot be written."""
    return Path(tempfile.gettempdir()) / f"perfdiff-{os.getpid()}-{output.name or 'run.json.gz'}"


def save_recording(run_file: RunFile, output: Path, *,
                   shards: bool = False) -> tuple[Path, OutputError | None]:
    """Save to ``output``, else to :func:`fallback_path`; returns (path written, the error).

    A second Ctrl-C is ignored while saving, so it cannot leave half a file.
    """
    save = _save_shards if shards else save_run_file
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            return save(run_file, output), None
        except OutputError as exc:
            fallback = fallback_path(output)
            try:
                path = save(run_file, fallback)
            except OutputError:
                raise exc from None  # nowhere to write: the original line
            return path, OutputError(f"{exc}; the recording was saved to {path} instead")
    finally:
        signal.signal(signal.SIGINT, previous)


def _save_shards(run_file: RunFile, output: Path) -> Path:
    from perfdiff.schema.shards import write_shards

    return write_shards(run_file, output)


__all__ = ["fallback_path", "save_recording"]
