"""The door: what is this path? Decided once, here, for every command that reads an input.

Why one table: ``compare``, ``kernels``, ``merge``, ``bench`` and ``import`` accept any input
kind wherever they accept a run file; the kind is told from the content (never the name) by
the first detector of :data:`INPUT_KINDS` that says yes, and that kind's reader returns a
checked :class:`LoadedInput`. A new format (an Nsight Systems export, ...) joins by one entry:
a detector that reads at most a file's head, and a reader that returns a ``LoadedInput``.
The path is checked (exists, readable) once, before any detector runs (or once before the
heavy imports by the console script, which hands over :class:`CheckedInputs`); options that
choose cycles (``--cycle-range``, ``--steps``) are checked when :class:`ReadOptions` is made
and applied here, once, for every kind (or refused in one line where a kind cannot).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfdiff.errors import InputError
from perfdiff.inputs import CheckedInputs, require_input
from perfdiff.readers.cycle_range import CycleRange
from perfdiff.readers.latencyprism import (
    PERF_FILE,
    is_latencyprism_input,
    latencyprism_folder,
    read_latencyprism,
)
from perfdiff.readers.nsys.detect import is_nsys_input
from perfdiff.readers.steps import StepRange, select_steps
from perfdiff.readers.torch_profiler.files import is_torch_profiler_input
from perfdiff.schema.io import read_run_file
from perfdiff.schema.loaded import IMPORTED_KIND, LATENCYPRISM_KIND, RUN_FILE_KIND, LoadedInput
from perfdiff.schema.model import RunFile
from perfdiff.schema.numeric_json import load_float_parser
from perfdiff.schema.shards import is_sharded_run, join_shards, read_manifest


@dataclass(frozen=True)
class ReadOptions:
    """How an input's cycles are chosen: ``cycle_range`` (a regular expression over range
    names, traces only) cuts them, ``steps`` keeps a slice of them (every kind)."""

    cycle_range: str | None = None
    steps: StepRange | None = None
    # link each kernel of a trace to its launching op and module (--by op|module): a third of
    # a trace's reading time, so only when asked (readers/torch_profiler/ops.py)
    ops: bool = False
    # the command analyses what it reads with pandas (compare): pandas is then imported before
    # a run file is read, and parses its float columns ~4x faster than numpy
    # (schema/numeric_json.load_float_parser); never before a trace, whose reading peak it
    # would raise (issue 15)
    pandas_follows: bool = False

    def __post_init__(self) -> None:
        if self.cycle_range is not None:  # not an expression: a usage error, before reading
            CycleRange.parse(self.cycle_range)


@dataclass(frozen=True)
class InputKind:
    """One kind of input: its name (in messages), how it is recognised, how it is read, and
    whether it has cycles of its own to cut (``--cycle-range``)."""

    name: str
    detect: Callable[[Path], bool]
    read: Callable[[Path, ReadOptions], LoadedInput]
    cuts_cycles: bool = False


# A format's reader is imported when an input of that format is read: every input meets
# every detector, and a run file's compare need not import the trace and nsys readers.


def _read_trace(path: Path, options: ReadOptions) -> LoadedInput:
    from perfdiff.readers.torch_profiler.reader import read_torch_profiler

    run_file = read_torch_profiler([path], cycle_range=options.cycle_range, ops=options.ops)
    return LoadedInput(str(path), IMPORTED_KIND, run_file=run_file)


def _read_nsys(path: Path, options: ReadOptions) -> LoadedInput:
    from perfdiff.readers.nsys.reader import read_nsys

    run_file = read_nsys(path, cycle_range=options.cycle_range)
    return LoadedInput(str(path), IMPORTED_KIND, run_file=run_file)


def _read_latencyprism(path: Path, options: ReadOptions) -> LoadedInput:
    folder = latencyprism_folder(path)
    return LoadedInput(str(folder), LATENCYPRISM_KIND, cycle_rows=read_latencyprism(folder),
                       workload=folder.parent.name)


def _read_run_file(path: Path, options: ReadOptions) -> LoadedInput:
    if options.pandas_follows:
        load_float_parser()
    return LoadedInput(str(path), RUN_FILE_KIND, run_file=read_run_file(path))


def _read_sharded(path: Path, options: ReadOptions) -> LoadedInput:
    # the manifest only: compare and ranks map a sharded run shard by shard (perfdiff.engine),
    # load_input joins it whole for the commands that need every launch at once
    if options.steps is not None:
        raise InputError(f"{path}: --steps is not available for sharded runs yet; merge the "
                         "shards into one run file (perfdiff merge) to choose steps")
    return LoadedInput(str(path), RUN_FILE_KIND, sharded=read_manifest(path))


def _is_file(path: Path) -> bool:
    return path.is_file()


# first match wins: the run file is the fallback for any other file (its reader says, in one
# line, why a file that is none of these cannot be read)
TRACE_KIND = InputKind("torch.profiler trace", is_torch_profiler_input, _read_trace,
                       cuts_cycles=True)
NSYS_KIND = InputKind("Nsight Systems export", is_nsys_input, _read_nsys, cuts_cycles=True)
INPUT_KINDS: tuple[InputKind, ...] = (
    InputKind("sharded run", is_sharded_run, _read_sharded),
    TRACE_KIND,
    NSYS_KIND,
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


def checked_path(path: str | Path, checked: CheckedInputs | None = None) -> Path:
    """``path``, checked (exists, readable) unless the console script checked it already."""
    if checked is not None and checked.holds(path):
        return Path(path)
    return require_input(path, folder_ok=True)


def _kind_for(path: Path, options: ReadOptions) -> InputKind:
    kind = input_kind(path)
    if options.cycle_range is not None and not kind.cuts_cycles:
        cutting = " and ".join(k.name + "s" for k in INPUT_KINDS if k.cuts_cycles)
        raise InputError(f"{path}: --cycle-range applies to {cutting} only; a "
                         f"{kind.name} already has its cycles (--steps A:B chooses among them)")
    return kind


def _chosen(loaded: LoadedInput, options: ReadOptions) -> LoadedInput:
    return loaded if options.steps is None else select_steps(loaded, options.steps)


def open_input(path: str | Path, options: ReadOptions | None = None,
               checked: CheckedInputs | None = None) -> LoadedInput:
    """Check ``path`` (once), tell its kind, read it, and keep the chosen cycles."""
    options = options or ReadOptions()
    p = checked_path(path, checked)
    return _chosen(_kind_for(p, options).read(p, options), options)


def load_input(path: str | Path, options: ReadOptions | None = None,
               checked: CheckedInputs | None = None) -> RunFile:
    """A run file, from any input that has one (a sharded run joined whole; a LatencyPrism
    folder has per-cycle shares only: refused in one line)."""
    loaded = open_input(path, options, checked)
    if loaded.sharded is not None:
        return join_shards(loaded.sharded)
    if loaded.run_file is None:
        raise InputError(f"{loaded.source}: a LatencyPrism folder holds per-cycle shares, not "
                         "kernels; only 'perfdiff compare' reads it, pass a run file or trace")
    return loaded.run_file


def import_inputs(paths: list[Path], options: ReadOptions | None = None,
                  checked: CheckedInputs | None = None, *,
                  allow_missing_ranks: bool = False) -> RunFile:
    """What ``perfdiff import`` converts: one Nsight Systems export, or torch.profiler traces
    (files or folders) that are the ranks of one job, as one run file with the chosen cycles."""
    options = options or ReadOptions()
    found = [(p, _kind_for(p, options)) for p in (checked_path(q, checked) for q in paths)]
    names = {kind.name for _, kind in found}
    if names == {NSYS_KIND.name} and len(found) == 1:  # one export holds all its processes
        loaded = _read_nsys(found[0][0], options)
    elif NSYS_KIND.name in names:
        raise InputError(f"{len(paths)} inputs given with an Nsight Systems export among them; "
                         "import one export at a time (it holds all its processes), then "
                         "join exports with `perfdiff merge A.json.gz B.json.gz -o AB.json.gz`")
    else:
        for path, kind in found:
            if kind is not TRACE_KIND:
                raise InputError(f"{path}: not a torch.profiler trace (no 'traceEvents') nor "
                                 "an nsys export; give a file written by export_chrome_trace "
                                 "or tensorboard_trace_handler, or one `nsys export --type "
                                 "sqlite` file")
        from perfdiff.readers.torch_profiler.reader import read_torch_profiler

        run_file = read_torch_profiler([p for p, _ in found], cycle_range=options.cycle_range,
                                       allow_missing_ranks=allow_missing_ranks, ops=options.ops)
        loaded = LoadedInput(", ".join(map(str, paths)), IMPORTED_KIND, run_file=run_file)
    run = _chosen(loaded, options).run_file
    assert run is not None  # both readers return a run file
    return run


__all__ = ["INPUT_KINDS", "InputKind", "ReadOptions", "checked_path", "import_inputs",
           "input_kind", "load_input", "open_input"]
