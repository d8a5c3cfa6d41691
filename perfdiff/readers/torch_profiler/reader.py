"""The public entry: trace files or folders -> a validated RunFile.

Why its own module: it is the only place that walks the steps in order (find files, read
bytes, decode, metadata, convert, assemble, the run-file rules once) and adds the file name
to an internal error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from perfdiff.errors import InputError
from perfdiff.readers.cycle_range import CycleRange
from perfdiff.readers.torch_profiler.assemble import assemble_run_file, run_order
from perfdiff.readers.torch_profiler.convert import RankData, convert_trace
from perfdiff.readers.torch_profiler.events import REEXPORT, BadTrace
from perfdiff.readers.torch_profiler.files import decode_trace, file_bytes, rank_files_in
from perfdiff.readers.torch_profiler.metadata import trace_metadata
from perfdiff.schema.model import RunFile
from perfdiff.schema.sense import check_run_file


def read_torch_profiler(paths: Sequence[str | Path], *, cycle_range: str | None = None,
                        allow_missing_ranks: bool = False, ops: bool = False) -> RunFile:
    """Read one or more traces (files or folders of per-rank files) into one run file.

    Several files are ranks of one job (or repeated runs): each becomes a run; when they carry
    ranks, devices are named by rank (GPU r for rank r), as ``perfdiff merge`` names shards.
    A file of a folder that may be a rank but cannot be read stops the reading, unless
    ``allow_missing_ranks``: then it is left out and the run file says so (a counted note).
    ``ops``: keep each kernel's launching op and module (``ops.py``; costs a third of the
    reading time, so only ``--by op|module`` and ``perfdiff import`` ask).
    """
    if cycle_range is not None:
        CycleRange.parse(cycle_range)  # a bad pattern is a usage error before any reading
    files: list[Path] = []
    left_out: list[tuple[Path, str]] = []
    for raw_path in paths:
        p = Path(raw_path)
        if p.is_dir():
            found, unreadable = rank_files_in(p)
            if unreadable and not allow_missing_ranks:
                first, why = unreadable[0]
                raise InputError(
                    f"{p}: {len(unreadable)} of {len(found) + len(unreadable)} rank files "
                    f"cannot be read ({first.name}: {why}); fix or remove "
                    f"{'it' if len(unreadable) == 1 else 'them'}, or pass "
                    "--allow-missing-ranks to go on without")
            left_out += unreadable
            if not found:
                raise InputError(f"{p}: folder holds no torch.profiler trace (.json/.json.gz "
                                 "with 'traceEvents')")
            files.extend(found)
        else:
            files.append(p)
    if not files:
        raise InputError("no torch.profiler trace given")
    parts = [_read_one(p, cycle_range, ops) for p in files]
    run_file = assemble_run_file(parts, [str(p) for p in files])
    events = {(position, table): rows for position, part in enumerate(run_order(parts))
              for table, rows in part.events.items()}
    check_run_file(run_file, ", ".join(str(p) for p in files), events=events,
                   fix=REEXPORT)  # the run-file rules, once, naming the trace's events
    if left_out:
        note = (f"{len(left_out)} rank file(s) left out (--allow-missing-ranks): "
                + "; ".join(f"{path.name}: {why}" for path, why in left_out[:5]))
        collection = replace(run_file.collection,
                             warnings=(*run_file.collection.warnings, note))
        run_file = replace(run_file, collection=collection)
    return run_file


def _read_one(path: Path, cycle_range: str | None, ops: bool) -> RankData:
    trace = decode_trace(path, file_bytes(path))
    try:
        meta = trace_metadata(trace)
        events = trace.traceEvents
        # every raw slice (events and metadata) holds the whole decompressed file (35 MB for
        # 100k events): no slice but the events' may outlive this line, so that the file's
        # bytes are freed as soon as convert_trace has gone through them
        del trace
        return convert_trace(meta, events, cycle_range, ops=ops)
    except BadTrace as exc:
        raise InputError(f"{path}: {exc}") from None
    except OverflowError:  # an id or time past 64 bits (device 2**70): the data, not a bug
        raise InputError(f"{path}: a number in a GPU event (device, stream, correlation id or "
                         "time) is beyond 64 bits, which no profiler writes; the trace is "
                         "damaged: re-export it") from None
