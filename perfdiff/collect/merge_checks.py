"""Is this one experiment? What ``perfdiff merge`` refuses unless ``--force``.

Why: merge checked only the workload name, so the same file given twice (its runs counted as
two replicates), a contended run with an uncontended one (the merged file kept the first file's
``contend 0.0``), or an H100 recording with an H200 one (the H200 disappeared from the
environment, so a later compare was not refused) were all merged silently. Merged runs are
replicates of one experiment; anything that makes them not so is refused in one line naming
the two inputs, and ``--force`` goes ahead (the merged file then says what differed).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from perfdiff.errors import IncomparableRunsError
from perfdiff.schema.model import RunFile

# Parameters that describe how a recording was made, not what was measured: they may differ
# between replicates of one experiment (an RNG seed included: replicates with their own seeds
# are how independent runs are made; a torch.profiler trace's file and rank differ between the
# ranks of one job; an nsys export's process ids differ between runs of one program).
PROVENANCE_PARAMS = frozenset({"collect_command", "cycles", "warmup", "runs", "exit_codes",
                               "seed", "source_files", "ranks", "processes"})
# What the collector measured of itself in each run (its share of traced cycles and their cost,
# what its untraced cycles paused, its decoding time): numbers of that run, not parameters of
# the experiment, so replicates differ in them; the merged file keeps every run's
# (``merge.merged_params``).
MEASURED_PARAMS = frozenset({"untraced_schedule", "untraced_pause", "intake_between_cycles_ms",
                             "intake_after_run_ms", "intake_spool_write_ms"})
FORCE = "merge only recordings of one experiment, or pass --force"


def _digest(path: Path) -> str:
    """The content's digest; a folder (per-rank traces, a sharded run): its files' names and
    contents, in name order (opening the folder itself raised IsADirectoryError: exit 70)."""
    sha = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            sha.update(file.relative_to(path).as_posix().encode("utf-8") + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
    return sha.hexdigest()


def check_distinct_inputs(paths: Sequence[Path]) -> None:
    """Refuse the same file twice: by name, through a link, or as a byte-identical copy."""
    seen: dict[str, Path] = {}
    for path in paths:
        for earlier in seen.values():
            if os.path.samefile(earlier, path):
                raise IncomparableRunsError(f"{path}: is the same file as {earlier}; its runs "
                                            f"would count twice; {FORCE}")
        digest = _digest(path)
        if digest in seen:
            raise IncomparableRunsError(f"{path}: has the same content as {seen[digest]} (a "
                                        f"copy); its runs would count twice; {FORCE}")
        seen[digest] = path


def _gpus(run_file: RunFile) -> tuple[str, ...]:
    return tuple(sorted({d.name for d in run_file.environment.devices}))


def _params(run_file: RunFile) -> dict[str, object]:
    return {k: v for k, v in run_file.workload.params.items()
            if k not in PROVENANCE_PARAMS and k not in MEASURED_PARAMS}


def check_one_experiment(files: Sequence[RunFile], names: Sequence[str]) -> None:
    """Refuse inputs of different workloads, parameters, GPU models or drivers (one line)."""
    first, first_name = files[0], names[0]
    for run_file, name in zip(files[1:], names[1:], strict=True):
        where = f"{name} and {first_name}"
        if run_file.workload.name != first.workload.name:
            raise IncomparableRunsError(
                f"{where} are different workloads ('{run_file.workload.name}' vs "
                f"'{first.workload.name}'); {FORCE}")
        theirs, ours = _params(run_file), _params(first)
        differing = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
        if differing:
            key = differing[0]
            raise IncomparableRunsError(
                f"{where} differ in workload parameter '{key}' ({theirs.get(key)!r} vs "
                f"{ours.get(key)!r}); {FORCE}")
        if _gpus(run_file) and _gpus(first) and _gpus(run_file) != _gpus(first):
            raise IncomparableRunsError(
                f"{where} were recorded on different GPU models ({', '.join(_gpus(run_file))} "
                f"vs {', '.join(_gpus(first))}); {FORCE}")
        drivers = (run_file.environment.driver_version, first.environment.driver_version)
        if None not in drivers and drivers[0] != drivers[1]:
            raise IncomparableRunsError(
                f"{where} were recorded with different GPU drivers ({drivers[0]} vs "
                f"{drivers[1]}); {FORCE}")


def forced_differences(files: Sequence[RunFile], names: Sequence[str]) -> list[str]:
    """With ``--force``: one warning per input that is not the same experiment as the first,
    kept in the merged file so that the difference is not lost."""
    out = []
    for run_file, name in zip(files[1:], names[1:], strict=True):
        try:
            check_one_experiment([files[0], run_file], [names[0], name])
        except IncomparableRunsError as exc:
            out.append(f"merged with --force although {str(exc).split('; ' + FORCE)[0]}")
    return out


__all__ = ["MEASURED_PARAMS", "check_distinct_inputs", "check_one_experiment", "forced_differences"]
