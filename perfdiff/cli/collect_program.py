"""The user-program half of ``perfdiff collect``: ``perfdiff collect -o run.json -- CMD ...``.

Why separate from ``cli/collect.py``: that command records built-in workloads in this process;
this one runs someone else's program in child processes (``perfdiff.collect.user_program``)
and must hand back *its* exit code. The program's stdout/stderr pass through untouched, so
perfdiff's own lines go to stderr.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import typer

from perfdiff.collect.inject.config import CUPTI_BACKEND
from perfdiff.collect.settings import DEFAULT_COST_TARGET, DEFAULT_UNTRACED_EVERY
from perfdiff.collect.workloads.base import WorkloadParamError
from perfdiff.errors import CollectorUnavailableError
from perfdiff.schema.model import RunFile

# The children's trace backend (MODULE:FUNCTION, see inject/config.py): CUPTI's. Read at each
# call, so that CPU tests replace it (tests/support/fake_cupti.py) without a user-visible switch.
TRACE_BACKEND = CUPTI_BACKEND


def collect_program(
    command: Sequence[str],
    *,
    output: Path,
    runs: int,
    cycle_range: str | None,
    cycle_ms: float | None,
    warmup: int,
    cycle_function: str | None = None,
    metrics: tuple[str, ...],
    sample_interval_ns: int | None,
    pm_sampling: bool,
    nvml: bool,
    nvml_interval_ms: float,
    trace_memory: bool,
    contend: float = 0.0,
    contend_device: int = 0,
    untraced_every: int | None = DEFAULT_UNTRACED_EVERY,
    cost_target: float = DEFAULT_COST_TARGET,
    shards: bool = False,
    detach_untraced: bool = False,
) -> None:
    """Run and record CMD; exit with its exit code (0 when every run succeeded).

    ``contend`` > 0 keeps GPU ``contend_device`` busy with a competing process for the whole
    collection (every run): an abnormal condition made without touching card settings.
    """
    from perfdiff.cli.saving import save_recording
    from perfdiff.collect.contend import Contender
    from perfdiff.collect.inject.config import InjectConfig
    from perfdiff.collect.user_program import run_program

    if cycle_ms is not None and cycle_ms <= 0:
        raise WorkloadParamError(f"--cycle-ms must be positive, got {cycle_ms}")
    from perfdiff.output import refuse_inputs

    # the program and the files it is given are inputs: -o train.py would replace the script
    # after the whole recording; refused before it starts
    refuse_inputs(output, [arg for arg in command if os.path.isfile(arg)])
    given = [name for name, value in (("--cycle-range", cycle_range), ("--cycle-ms", cycle_ms),
                                      ("--cycle-function", cycle_function)) if value]
    if len(given) > 1:
        raise WorkloadParamError(f"give one way to cut cycles, not {' and '.join(given)}")
    if cycle_function:
        from perfdiff.collect.cycles.anchor_function import parse_spec

        try:
            parse_spec(cycle_function)
        except ValueError as exc:
            raise WorkloadParamError(str(exc)) from None
    backend = TRACE_BACKEND
    config = InjectConfig(
        shard_dir="", cycle_range=cycle_range or None, cycle_ms=cycle_ms,
        cycle_function=cycle_function or None, warmup=warmup,
        metrics=metrics, pm_sampling=pm_sampling,
        nvml=nvml, nvml_interval_ms=nvml_interval_ms, trace_memory=trace_memory, backend=backend,
        untraced_every=untraced_every, cost_target=cost_target, detach_untraced=detach_untraced,
        # None: the program launcher's own default (settings.DEFAULT_PROGRAM_SAMPLE_INTERVAL_NS)
        sample_interval_ns=(InjectConfig.sample_interval_ns if sample_interval_ns is None
                            else sample_interval_ns),
    )
    if backend == CUPTI_BACKEND and importlib.util.find_spec("cupti") is None:
        raise CollectorUnavailableError(
            "cannot collect: cupti-python is not installed; install it with: "
            "pip install 'perfdiff[collect]' (cupti-python>=13.4)"
        )
    if not 0.0 <= contend <= 1.0:
        raise WorkloadParamError(f"--contend must be between 0 and 1, got {contend}")
    with Contender(contend, contend_device):
        outcome = run_program(command, config, runs,
                              echo=lambda text: typer.echo(text, err=True))
    run_file = _with_provenance(outcome.run_file)
    path, unsaved = save_recording(run_file, output, shards=shards)
    if unsaved is not None:
        typer.echo(f"perfdiff: error: {unsaved}", err=True)
    for warning in run_file.collection.warnings:
        typer.echo(f"perfdiff: warning: {warning}", err=True)
    typer.echo(program_summary(run_file, path), err=True)
    if outcome.exit_code != 0:
        typer.echo(
            f"perfdiff: the program exited with code {outcome.exit_code}; run file written to "
            f"{path} (marked incomplete)", err=True,
        )
        raise typer.Exit(outcome.exit_code)
    if unsaved is not None:
        raise typer.Exit(unsaved.exit_code)


def _with_provenance(run_file: RunFile) -> RunFile:
    """The perfdiff command line that recorded the file, beside the program's own argv."""
    argv = "perfdiff " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    params = {**run_file.workload.params, "collect_command": argv}
    return dataclasses.replace(
        run_file, workload=dataclasses.replace(run_file.workload, params=params)
    )


def program_summary(run_file: RunFile, path: Path) -> str:
    """One line: runs, ranks, cycles, kernels, and the state."""
    runs = run_file.runs
    ranks = sorted({r.rank for r in runs if r.rank is not None})
    measured = sum(int((~r.cycles.warmup).sum()) for r in runs)
    # untraced cycles are flagged warm-up in the file (no kernel statistic sees them) but
    # are the program's timed cycles: counted apart, not as warm-up
    untraced = sum(int((r.cycles.traced == 0).sum()) for r in runs if r.cycles.traced is not None)
    warm = sum(int(r.cycles.warmup.sum()) for r in runs) - untraced
    untraced_text = f" traced + {untraced} untraced" if untraced else ""
    kernels = sum(int(r.kernels.name_id.size) for r in runs)
    n_runs = len({r.index for r in runs})
    rank_text = f" x {len(ranks)} ranks" if ranks else ""
    state = ""
    if run_file.status.state != "complete":
        state = f" [INCOMPLETE: {run_file.status.reason}]"
    return (
        f"perfdiff: wrote {path} - {n_runs} run(s){rank_text}, {measured} cycles"
        f"{untraced_text} (+{warm} warm-up), {kernels} kernels, {len(run_file.strings)} "
        f"distinct{state}"
    )


__all__ = ["TRACE_BACKEND", "collect_program", "program_summary"]
