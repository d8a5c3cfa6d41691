"""Open any input a command takes: a perfdiff run file, a torch.profiler trace (or folder), or
an Nsight Systems export (``.sqlite``) or report (``.nsys-rep``).

Why one function: ``kernels``, ``merge``, ``bench``, ``import`` and ``compare`` accept a trace
wherever they accept a run file; the kind is told from the content, never from the name.
"""

from __future__ import annotations

from pathlib import Path

from perfdiff.errors import InputError
from perfdiff.readers.nsys import is_nsys_input, read_nsys
from perfdiff.readers.torch_profiler import is_torch_profiler_input, read_torch_profiler
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile


def load_trace(path: str | Path, *, cycle_range: str | None = None) -> RunFile | None:
    """The run file of a torch.profiler trace (file or folder of ranks) or of an nsys export,
    or None if ``path`` is neither; ``cycle_range`` given for anything else is refused in one
    line."""
    p = Path(path)
    if is_torch_profiler_input(p):
        return read_torch_profiler([p], cycle_range=cycle_range)
    if is_nsys_input(p):
        return read_nsys(p, cycle_range=cycle_range)
    if cycle_range is not None:
        raise InputError(f"{p}: --cycle-range applies to torch.profiler traces and nsys "
                         "exports only; a run file already has its cycles")
    return None


def load_input(path: str | Path, *, cycle_range: str | None = None) -> RunFile:
    """A run file, from a perfdiff run file, a torch.profiler trace or an nsys export."""
    converted = load_trace(path, cycle_range=cycle_range)
    return converted if converted is not None else load_run_file(path)


__all__ = ["load_input", "load_trace"]
