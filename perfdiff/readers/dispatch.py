"""The door: what is this path? Decided once, here, for every command that reads an input.

Why one table: ``compare``, ``kernels``, ``merge``, ``bench`` and ``import`` accept any input
kind wherever they accept a run file; the kind is told from the content (never the name) by
the first detector of :data:`INPUT_KINDS` that says yes, and that kind's reader returns a
checked :class:`LoadedInput`. A new format (an Nsight Systems export, ...) joins by one entry:
a detector that reads at most a file's head, and a reader that returns a ``LoadedInput``.
The path is checked (exists, readable) once, before any detector runs; options that choose
cycles (``--cycle-range``, ``--steps``) are applied here, once, for every kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfdiff.errors import InputError
from perfdiff.inputs import require_input
from perfdiff.readers.latencyprism import (
    PERF_FILE,
    is_latencyprism_input,
    latencyprism_folder,
    read_latencyprism,
)
from perfdiff.readers.nsys import is_nsys_input, read_nsys
from perfdiff.readers.steps import StepRange, select_steps
from perfdiff.readers.torch_profiler import is_torch_profiler_input, read_torch_profiler
from perfdiff.schema.io import load_run_file
from perfdiff.schema.loaded import IMPORTED_KIND, LATENCYPRISM_KIND, RUN_FILE_KIND, LoadedInput
from perfdiff.schema.model import RunFile
from perfdiff.schema.shards import is_sharded_run, load_sharded_run


@dataclass(frozen=True)
class ReadOptions:
    """How an input's cycles are chosen: ``cycle_range`` (a regular expression over range
    names, traces only) cuts them, ``steps`` keeps a slice of them (every kind)."""

    cycle_range: str | None = None
    steps: StepRange | None = None
    # link each kernel of a trace to its launching op and module (--by op|module): a third of
    # a trace's reading time, so only when asked (readers/torch_profiler/ops.py)
    ops: bool = False


@dataclass(frozen=True)
class InputKind:
    """One kind of input: its name (in messages), how it is recognised, how it is read, and
    whether it has cycles of its own to cut (``--cycle-range``)."""

    name: str
    detect: Callable[[Path], bool]
    read: Callable[[Path, ReadOptions], LoadedInput]
    cuts_cycles: bool = False


def _read_trace(path: Path, options: ReadOptions) -> LoadedInput:
    run_file = read_torch_profiler([path], cycle_range=options.cycle_range, ops=options.ops)
    return LoadedInput(str(path), IMPORTED_KIND, run_file=run_file)


def _read_nsys(path: Path, options: ReadOptions) -> LoadedInput:
    run_file = read_nsys(path, cycle_range=options.cycle_range)
    return LoadedInput(str(path), IMPORTED_KIND, run_file=run_file)


def _read_latencyprism(path: Path, options: ReadOptions) -> LoadedInput:
    folder = latencyprism_folder(path)
    return LoadedInput(str(folder), LATENCYPRISM_KIND, cycle_rows=read_latencyprism(folder),
                       workload=folder.parent.name)


def _read_run_file(path: Path, options: ReadOptions) -> LoadedInput:
    return LoadedInput(str(path), RUN_FILE_KIND, run_file=load_run_file(path))


def _read_sharded(path: Path, options: ReadOptions) -> LoadedInput:
    # joined whole, for the commands that need every launch at once; compare and ranks map a
    # sharded run rank by rank instead (perfdiff.engine)
    return LoadedInput(str(path), RUN_FILE_KIND, run_file=load_sharded_run(path))


def _is_file(path: Path) -> bool:
    return path.is_file()


# first match wins: the run file is the fallback for any other file (its reader says, in one
# line, why a file that is none of these cannot be read)
INPUT_KINDS: tuple[InputKind, ...] = (
    InputKind("sharded run", is_sharded_run, _read_sharded),
    InputKind("torch.profiler trace", is_torch_profiler_input, _read_trace, cuts_cycles=True),
    InputKind("Nsight Systems export", is_nsys_input, _read_nsys, cuts_cycles=True),
    InputKind("LatencyPrism folder", is_latencyprism_input, _read_latencyprism),
    InputKind("run file", _is_file, _read_run_file),
)


def input_kind(path: Path) -> InputKind:
    """The kind of an existing, readable path (InputError for a folder of nothing known)."""
    for kind in INPUT_KINDS:
        if kind.detect(path):
            return kind
    raise InputError(f"{path}: is a folder without {PERF_FILE} or torch.profiler traces; pass "
                     "a run file (.json/.json.gz), a trace, a folder of per-rank traces or a "
                     "LatencyPrism '*_perf_data' folder")


def open_input(path: str | Path, options: ReadOptions | None = None) -> LoadedInput:
    """Check ``path``, tell its kind, read it, and keep the chosen cycles."""
    options = options or ReadOptions()
    p = require_input(path, folder_ok=True)
    kind = input_kind(p)
    if options.cycle_range is not None and not kind.cuts_cycles:
        cutting = " and ".join(k.name + "s" for k in INPUT_KINDS if k.cuts_cycles)
        raise InputError(f"{p}: --cycle-range applies to {cutting} only; a "
                         f"{kind.name} already has its cycles (--steps A:B chooses among them)")
    loaded = kind.read(p, options)
    return loaded if options.steps is None else select_steps(loaded, options.steps)


def load_input(path: str | Path, *, cycle_range: str | None = None,
               steps: StepRange | None = None, ops: bool = False) -> RunFile:
    """A run file, from any input that has one (a LatencyPrism folder has per-cycle shares
    only: refused in one line)."""
    loaded = open_input(path, ReadOptions(cycle_range=cycle_range, steps=steps, ops=ops))
    if loaded.run_file is None:
        raise InputError(f"{loaded.source}: a LatencyPrism folder holds per-cycle shares, not "
                         "kernels; only 'perfdiff compare' reads it, pass a run file or trace")
    return loaded.run_file


__all__ = ["INPUT_KINDS", "InputKind", "ReadOptions", "input_kind", "load_input",
           "open_input"]
