"""``perfdiff collect -o run.json -- CMD ARGS...``: record the user's own Python program.

How: CMD runs as a child process, without a shell, with its output passed straight through.
Its environment puts perfdiff's ``inject/boot`` folder first on ``PYTHONPATH``, so Python
runs that folder's ``sitecustomize.py`` before the program's first line; it starts the
collector in the program's own process (``inject/child.py``), which writes one *shard* (a
run file of one run) at exit. Under torchrun every worker writes its own shard (one per rank).
This side waits, gathers the shards, merges them (devices named by rank, see ``merge.py``),
records the exit code, and with ``--runs N`` does all of that N times, in N fresh processes,
so the file holds N runs: real replicates for the run-level statistics.

Failure is recorded, not hidden: a non-zero exit or a crash marks the run file incomplete
with the reason and exit code; a process killed outright leaves an empty run with its exit
code and a warning. The caller (the CLI) returns the program's exit code.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from perfdiff.collect.cupti.spool import SPOOL_SUFFIX, SpoolError, spool_summary
from perfdiff.collect.inject.child import program_name, program_params
from perfdiff.collect.inject.config import SHARD_GLOB, InjectConfig, child_environment
from perfdiff.collect.merge import merge_run_files
from perfdiff.collect.run_file_builder import RunIdentity, build_run_file, empty_recording
from perfdiff.errors import InputError, UsageError
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import Environment, RunFile, Status, Workload


class ProgramNotFoundError(UsageError):
    """CMD names no program that can be started (a command-line mistake)."""


@dataclass(frozen=True)
class ProgramOutcome:
    """The merged run file and the exit code to return (the first failing run's, else 0)."""

    run_file: RunFile
    exit_code: int
    exit_codes: tuple[int, ...]


Echo = Callable[[str], None]


def resolve_command(command: Sequence[str]) -> list[str]:
    """CMD as argv: a ``.py`` script runs under this Python; else CMD[0] must be on PATH."""
    if not command:
        raise ProgramNotFoundError("no program given after '--' (e.g. -- python train.py)")
    argv = list(command)
    if argv[0].endswith(".py") and Path(argv[0]).is_file():
        return [sys.executable, *argv]
    if shutil.which(argv[0]) is None:
        raise ProgramNotFoundError(
            f"cannot run '{argv[0]}': not found on PATH; give the full path or a .py script"
        )
    return argv


def exit_status(returncode: int) -> int:
    """Popen's return code as a shell reports it: killed by signal N -> 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def run_program(
    command: Sequence[str], base: InjectConfig, runs: int = 1, *, echo: Echo | None = None
) -> ProgramOutcome:
    """Run ``command`` ``runs`` times under the collector; merge every shard into one file."""
    if runs < 1:
        raise InputError(f"--runs must be at least 1, got {runs}")
    argv = resolve_command(command)
    say = echo or (lambda _text: None)
    shard_root = Path(tempfile.mkdtemp(prefix="perfdiff-shards-"))
    files: list[RunFile] = []
    sources: list[str] = []
    codes: list[int] = []
    kept: list[Path] = []  # unreadable shards: never deleted with the temporary folder
    try:
        for index in range(runs):
            shard_dir = shard_root / f"run{index}"
            shard_dir.mkdir()
            config = dataclasses.replace(base, shard_dir=str(shard_dir), run_index=index,
                                         command=tuple(command))
            if runs > 1:
                say(f"perfdiff: run {index + 1}/{runs}: {' '.join(command)}")
            pid, code = _run_once(argv, child_environment(dict(os.environ), config))
            codes.append(code)
            shards = _read_shards(shard_dir, index, pid, code, config, kept)
            files.extend(shards)
            sources.extend(_shard_label(index, shard) for shard in shards)
            if code != 0:
                if index + 1 < runs:
                    say(f"perfdiff: run {index + 1} exited with {code}; not starting the rest")
                break
    finally:
        if not kept:
            shutil.rmtree(shard_root, ignore_errors=True)
    merged = merge_run_files(files, sources, force=True)
    first_failure = next((c for c in codes if c != 0), 0)
    merged = _with_outcome(merged, codes, runs)
    return ProgramOutcome(run_file=merged, exit_code=first_failure, exit_codes=tuple(codes))


def _run_once(argv: list[str], env: dict[str, str]) -> tuple[int, int]:
    """Start, forward SIGTERM, wait through Ctrl-C (the child gets it too); (pid, status)."""
    try:
        proc = subprocess.Popen(argv, env=env)
    except OSError as exc:
        raise ProgramNotFoundError(f"cannot start '{argv[0]}' ({exc.strerror})") from None

    def forward(signum: int, frame: FrameType | None) -> None:
        proc.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        while True:
            try:
                return proc.pid, exit_status(proc.wait())
            except KeyboardInterrupt:
                continue  # the terminal sent SIGINT to the child as well; let it finish
    finally:
        signal.signal(signal.SIGTERM, previous)


def _read_shards(
    shard_dir: Path, index: int, pid: int, code: int, config: InjectConfig, kept: list[Path]
) -> list[RunFile]:
    """The shards one run left; an unreadable one is kept on disk (added to ``kept``) and named,
    because it is the only copy of what that process recorded: deleting it with the temporary
    folder would lose the recording for good."""
    shards = []
    spools = _left_spools(shard_dir, kept)
    for path in sorted(shard_dir.glob(SHARD_GLOB)):
        try:
            shards.append(load_run_file(path))
        except InputError as exc:
            kept.append(path)
            why = f"unreadable shard, kept at {path} for a bug report: {exc}"
            shards.append(_empty_run_file(index, pid, code, config, why))
    if shards:
        out = [_with_exit_code(s, pid, code) for s in shards]
        if spools:  # another process of this run (a rank) died before writing its shard
            why = "a process of this run was killed before it wrote its shard; " + spools
            out.append(_empty_run_file(index, pid, code, config, why))
        return out
    why = (
        "no trace: the program wrote no shard (the collector did not start in it, or it was "
        "killed before exit); is perfdiff installed in the Python that runs it?"
    )
    if spools:
        why = ("no trace: the program was killed before it wrote its shard; " + spools)
    return [_empty_run_file(index, pid, code, config, why)]


def _left_spools(shard_dir: Path, kept: list[Path]) -> str:
    """Spool files a process left (it died before decoding them at exit: spool.py), kept on
    disk (added to ``kept``) and described in one line; "" when none. Why kept: they are all
    that process's kernels that CUPTI had handed over, and only that process could name them
    (its kernel names are addresses in its memory), so they are evidence, not a recording."""
    said = []
    for path in sorted(shard_dir.glob(f"*{SPOOL_SUFFIX}")):
        kept.append(path)
        try:
            frames, size = spool_summary(path)
            what = f"{frames} activity buffer(s), {size / 1e6:.1f} MB"
        except SpoolError as exc:
            what = f"an unreadable spool ({exc})"
        said.append(f"{what} handed over by CUPTI before it died, kept undecoded at {path}")
    return "; ".join(said)


def _shard_label(index: int, shard: RunFile) -> str:
    ranks = sorted({r.rank for r in shard.runs if r.rank is not None})
    return f"run {index}" + (f" rank {ranks[0]}" if ranks else "")


def _with_exit_code(shard: RunFile, pid: int, code: int) -> RunFile:
    """The direct child's exit code goes on its run; a failing launcher marks every rank."""
    runs = []
    for run in shard.runs:
        if run.pid == pid or (run.exit_code is None and code != 0):
            run = dataclasses.replace(run, exit_code=code)
        elif run.exit_code is None:
            run = dataclasses.replace(run, exit_code=0)
        runs.append(run)
    return dataclasses.replace(shard, runs=tuple(runs))


def _empty_run_file(index: int, pid: int, code: int, config: InjectConfig, why: str) -> RunFile:
    """A valid run with no records: what is known when a process left no shard."""
    return build_run_file(
        empty_recording(),
        environment=Environment(host=socket.gethostname(), driver_version=None,
                                cuda_version=None, cupti_version=None, torch_version=None,
                                python_version=platform.python_version(), devices=()),
        workload=Workload(name=program_name(config.command), params=program_params(config),
                          command=config.command),
        status=Status("incomplete", why), warnings=[f"run {index}: {why}"],
        sample_interval_ns=config.sample_interval_ns,
        identity=RunIdentity(index=index, exit_code=code, pid=pid))


def _with_outcome(merged: RunFile, codes: list[int], runs: int) -> RunFile:
    """Mark the file incomplete when a run failed or fewer runs than asked were made."""
    reasons = [merged.status.reason] if merged.status.state != "complete" and \
        merged.status.reason else []
    for index, code in enumerate(codes):
        if code != 0:
            reasons.append(f"run {index} exited with code {code}")
    if len(codes) < runs:
        reasons.append(f"{len(codes)} of {runs} runs made")
    params = {**merged.workload.params, "runs": runs, "exit_codes": list(codes)}
    workload = dataclasses.replace(merged.workload, params=params)
    if not reasons:
        return dataclasses.replace(merged, workload=workload)
    status = Status("incomplete", "; ".join(dict.fromkeys(reasons)))
    return dataclasses.replace(merged, workload=workload, status=status)


__all__ = ["ProgramNotFoundError", "ProgramOutcome", "exit_status", "resolve_command",
           "run_program"]
