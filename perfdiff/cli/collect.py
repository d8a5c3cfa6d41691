"""``perfdiff collect WORKLOAD -o run.json.gz``: record a built-in workload on the GPU.

Why thin: parsing options, showing progress and writing the file are all this command does;
what to record and how lives in ``perfdiff.collect``. The run file is written atomically
even when the workload raises or the user presses Ctrl-C (then marked incomplete), and the
exit code says which happened (docs/reference/exit-codes.md).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from perfdiff.collect.settings import (
    DEFAULT_COST_TARGET,
    DEFAULT_CYCLES,
    DEFAULT_NVML_INTERVAL_MS,
    DEFAULT_PROGRAM_SAMPLE_INTERVAL_NS,
    DEFAULT_SAMPLE_INTERVAL_NS,
    DEFAULT_UNTRACED_EVERY,
    DEFAULT_WARMUP,
)
from perfdiff.errors import ExitCode, InputError, UsageError, WorkloadError

if TYPE_CHECKING:  # numpy behind it: imported by the collect code when it runs, not at start-up
    from perfdiff.collect.contend import ContendMode
    from perfdiff.schema.model import RunFile


def _contend_mode(text: str) -> ContendMode:
    """``--contend-mode`` checked (a usage error, not a traceback, for a typo)."""
    from perfdiff.collect.contend import CONTEND_MODES
    from perfdiff.collect.workloads.base import WorkloadParamError

    for mode in CONTEND_MODES:
        if text == mode:
            return mode
    raise WorkloadParamError(
        f"--contend-mode must be one of {', '.join(CONTEND_MODES)}, got {text!r}"
    )


def _parse_params(items: list[str]) -> dict[str, str]:
    from perfdiff.collect.workloads.base import WorkloadParamError

    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise WorkloadParamError(f"-p expects KEY=VALUE, got {item!r} (e.g. -p batch=8)")
        params[key.strip()] = value.strip()
    return params


def _require_parquet() -> None:
    """``--shards`` writes Parquet only after the program ran: without pyarrow that write would
    fail with the whole recording in hand, so refuse before anything starts."""
    from perfdiff.schema.shards import parquet_modules

    try:
        parquet_modules()
    except InputError as exc:
        raise UsageError(f"--shards: {exc}, or leave out --shards to write one run file") \
            from None


def _list_workloads() -> str:
    from perfdiff.collect.workloads import get_workload_class, workload_names

    lines = []
    for name in workload_names():
        cls = get_workload_class(name)
        lines.append(f"{name}: {cls.summary}")
        for pname, ptype, default in cls.params_class.describe():
            lines.append(f"    -p {pname}=<{ptype}>  (default {default})")
    return "\n".join(lines)


def _is_program(first: str, rest: list[str]) -> bool:
    """``-- CMD ARGS...``: anything with arguments, anything after ``--``, a path
    (``./train.sh``), a .py script, or a command on PATH.

    Why ``--`` and paths count: ``collect -o r.json.gz -- ./train.sh`` (a one-word program) was
    taken for a built-in workload and refused as "unknown workload './train.sh'".
    """
    import os
    import shutil

    from perfdiff.collect.workloads import workload_names

    if not first or first in workload_names():
        return bool(rest)
    after_dashes = "--" in sys.argv and sys.argv.index("--") + 1 < len(sys.argv) and \
        sys.argv[sys.argv.index("--") + 1] == first
    return (bool(rest) or after_dashes or first.endswith(".py") or os.sep in first
            or os.path.exists(first) or shutil.which(first) is not None)


def summary_line(run_file: RunFile, path: Path) -> str:
    """One line: where, how many cycles/kernels/samples, dropped records, warnings."""
    run = run_file.runs[0]
    measured = int((~run.cycles.warmup).sum())
    warm = int(run.cycles.warmup.sum())
    pm = [m for m in run.metrics if m.source == "pm_sampling"]
    nvml = [m for m in run.metrics if m.source == "nvml"]
    samples = pm[0].values.size if pm else 0
    state = ""
    if run_file.status.state != "complete":
        state = f" [INCOMPLETE: {run_file.status.reason}]"
    return (
        f"perfdiff: wrote {path} - {measured} cycles (+{warm} warm-up), "
        f"{run.kernels.name_id.size} kernels, {len(run_file.strings)} distinct, "
        f"{len(pm)} PM metrics x {samples} samples, {len(nvml)} NVML series, "
        f"{run.dropped_records} dropped, {len(run_file.collection.warnings)} warnings{state}"
    )


class _Progress:
    """Progress on stderr: cycles done of planned (and trace records decoded so far, where
    any are)."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total = total
        self.quiet = quiet or not sys.stderr.isatty()
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if not self.quiet:
            from rich.progress import BarColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn("collecting"), BarColumn(), TextColumn("{task.fields[text]}"),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("c", total=self.total, text="")
        return self

    def __call__(self, done: int, records: int) -> None:
        if self._progress is not None:
            # CUPTI's buffers are spooled and decoded at stop: no count to show until then,
            # unless the spool could not be made and they are decoded as they come
            counted = f" | trace records {records:,} (delivered at flush)" if records else ""
            text = f"cycles {done}/{self.total}{counted}"
            self._progress.update(self._task, completed=done, text=text)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


_INTERVAL_HELP = (f"PM sampling interval (ns of GPU time); default "
                  f"{DEFAULT_PROGRAM_SAMPLE_INTERVAL_NS} for your program, "
                  f"{DEFAULT_SAMPLE_INTERVAL_NS} for a built-in workload.")
_WORKLOAD_HELP = "Built-in workload: gpt-infer, train-step, ... (--list shows all)."
_OutputOpt = typer.Option("--output", "-o", readable=False,
                          help="Run file to write (.json or .json.gz).")
_ParamOpt = typer.Option("--param", "-p", help="Workload parameter KEY=VALUE (repeatable).")
_MetricOpt = typer.Option("--metric", help="PM-sampling metric to add (repeatable).")
_OnlyOpt = typer.Option("--only-metrics", help="--metric replaces the defaults, not adds.")
_ContendOpt = typer.Option(
    help="Noisy neighbour on the same GPU (see --contend-mode): the share (0-1) of time it "
    "runs matrix products (process, stream), or of the SMs it holds (partition)."
)
_ApiRecordsOpt = typer.Option(
    "--api-records", help="Assign kernels to cycles from CUPTI's launch API records instead of "
    "cycle boundary marks (more overhead; for checking the marks)."
)
_ContendModeOpt = typer.Option(
    help="process: a second process, time-sliced with ours; stream: a thread of this process "
    "on its own CUDA stream, running concurrently with the workload's kernels; partition: a "
    "thread holding FRACTION of the SMs all the time (an MPS co-tenant with an SM limit)."
)
_ContendPeriodOpt = typer.Option(help="Duty-cycle period of the --contend neighbour (ms).")
_ListOpt = typer.Option("--list", help="List built-in workloads and their parameters.")
# User programs (perfdiff collect [options] -- CMD ARGS...; see cli/collect_program.py)
_RangeOpt = typer.Option(help="User program: NVTX range name that marks one cycle.")
_CycleMsOpt = typer.Option(help="User program: cut cycles as fixed windows of this many ms.")
_RunsOpt = typer.Option(help="User program: run it N times (N fresh processes, N runs).")
_FunctionOpt = typer.Option(
    help="User program: MODULE:QUALNAME of a function called once per iteration; each "
    "outermost call is one cycle (e.g. transformers.generation.utils:GenerationMixin.generate)."
)


_ShardsOpt = typer.Option(
    "--shards", help="Write OUTPUT as a sharded run: a new folder with one Parquet shard per "
    "run (per rank of a torchrun job) that compare, ranks and merge read shard by shard.")
_UntracedOpt = typer.Option(
    help="Leave the last two of every N measured cycles untraced (activity off), whatever "
    "tracing costs; 0: trace every cycle. Default: as many untraced cycles as keep the whole "
    "run within --cost-target x the program's time untraced.", show_default=False)
# hidden while experimental (perfdiff/collect/cupti/detached.py: what it gains and loses)
_DetachOpt = typer.Option(
    "--detach-untraced", hidden=True,
    help="Detach CUPTI (cuptiFinalize) for each untraced run, attach again after it. "
    "Experimental: being measured (bench/README.md, issue 28).")
_CostTargetOpt = typer.Option(
    help="Whole-run cost to stay within, recorded / untraced time: the share of traced "
    "cycles is chosen from what they cost this program (ignored with --untraced-every).")


def collect(
    ctx: typer.Context,
    workload: Annotated[str, typer.Argument(help=_WORKLOAD_HELP)] = "",
    *,
    output: Annotated[Path, _OutputOpt] = Path("run.json.gz"),
    cycles: Annotated[int, typer.Option(help="Measured cycles (per case).")] = DEFAULT_CYCLES,
    warmup: Annotated[int, typer.Option(help="Warm-up cycles first (flagged, not analysed).")]
    = DEFAULT_WARMUP,
    param: Annotated[list[str] | None, _ParamOpt] = None,
    metric: Annotated[list[str] | None, _MetricOpt] = None,
    only_metrics: Annotated[bool, _OnlyOpt] = False,
    sample_interval_ns: Annotated[int | None, typer.Option(help=_INTERVAL_HELP)] = None,
    nvml_interval_ms: Annotated[float, typer.Option(help="NVML polling interval in ms.")]
    = DEFAULT_NVML_INTERVAL_MS,
    no_pm: Annotated[bool, typer.Option("--no-pm", help="Do not PM-sample.")] = False,
    no_nvml: Annotated[bool, typer.Option("--no-nvml", help="Do not poll NVML.")] = False,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="Do not trace memcpy/memset.")]
    = False,
    api_records: Annotated[bool, _ApiRecordsOpt] = False,
    contend: Annotated[float, _ContendOpt] = 0.0,
    contend_mode: Annotated[str, _ContendModeOpt] = "process",
    contend_period_ms: Annotated[float, _ContendPeriodOpt] = 50.0,
    device: Annotated[int, typer.Option(help="CUDA device index.")] = 0,
    list_workloads: Annotated[bool, _ListOpt] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
    cycle_range: Annotated[str | None, _RangeOpt] = None,
    cycle_ms: Annotated[float | None, _CycleMsOpt] = None,
    runs: Annotated[int, _RunsOpt] = 1,
    cycle_function: Annotated[str | None, _FunctionOpt] = None,
    untraced_every: Annotated[int | None, _UntracedOpt] = DEFAULT_UNTRACED_EVERY,
    cost_target: Annotated[float, _CostTargetOpt] = DEFAULT_COST_TARGET,
    shards: Annotated[bool, _ShardsOpt] = False,
    detach_untraced: Annotated[bool, _DetachOpt] = False,
) -> None:
    """Record a workload's kernels, PM-sampled utilisation and NVML readings into a run file."""
    from perfdiff.cli.saving import save_recording
    from perfdiff.collect.contend import Contender
    from perfdiff.collect.cupti.pm_sampling import DEFAULT_METRICS
    from perfdiff.collect.session import CollectSettings, run_collection
    from perfdiff.collect.sources import open_sources, remove_spool_dir
    from perfdiff.collect.workloads import get_workload_class
    from perfdiff.collect.workloads.base import CyclePlan, WorkloadParamError

    if list_workloads:
        typer.echo(_list_workloads())
        return
    if shards:
        _require_parquet()
    if _is_program(workload, ctx.args):
        from perfdiff.cli.collect_program import collect_program

        if contend_mode != "process":
            raise WorkloadParamError(f"--contend-mode {contend_mode} needs a built-in workload "
                                     "(the neighbour is a thread of perfdiff's own process)")
        extra = list(metric or [])
        collect_program(
            [workload, *ctx.args], output=output, runs=runs, cycle_range=cycle_range,
            cycle_ms=cycle_ms, cycle_function=cycle_function, warmup=warmup,
            sample_interval_ns=sample_interval_ns,
            metrics=tuple(extra) if only_metrics else tuple(dict.fromkeys((*DEFAULT_METRICS,
                                                                           *extra))),
            pm_sampling=not no_pm, nvml=not no_nvml, nvml_interval_ms=nvml_interval_ms,
            trace_memory=not no_memory, contend=contend, contend_device=device,
            untraced_every=untraced_every, cost_target=cost_target, shards=shards,
            detach_untraced=detach_untraced,
        )
        return
    if runs != 1 or cycle_range or cycle_ms is not None or cycle_function:
        raise WorkloadParamError(
            "--runs, --cycle-range, --cycle-ms and --cycle-function apply to your own program "
            "(perfdiff collect [options] -- CMD ARGS...); for a built-in workload run "
            "collect N times and join the files with perfdiff merge"
        )
    if not workload:
        raise WorkloadParamError("name a workload (perfdiff collect --list shows them)")
    cls = get_workload_class(workload)
    params = cls.params_class.from_strings(_parse_params(param or []))
    plan = CyclePlan(measured=cycles, warmup=warmup)
    if not 0.0 <= contend <= 1.0:
        raise WorkloadParamError(f"--contend must be between 0 and 1, got {contend}")
    mode = _contend_mode(contend_mode)
    if not contend_period_ms > 0:
        raise WorkloadParamError(f"--contend-period-ms must be positive, got {contend_period_ms}")
    extra = list(metric or [])
    metrics = tuple(extra) if only_metrics else tuple(dict.fromkeys((*DEFAULT_METRICS, *extra)))
    settings = CollectSettings(
        metrics=metrics, pm_sampling=not no_pm,
        nvml=not no_nvml, nvml_interval_ms=nvml_interval_ms, trace_memory=not no_memory,
        device_index=device, trace_api=api_records, untraced_every=untraced_every,
        cost_target=cost_target, detach_untraced=detach_untraced,
        # None: the built-in launcher's own default (settings.DEFAULT_SAMPLE_INTERVAL_NS)
        sample_interval_ns=(CollectSettings.sample_interval_ns if sample_interval_ns is None
                            else sample_interval_ns),
    )
    opened = open_sources(settings)
    try:
        for warning in opened.sources.warnings:
            typer.echo(f"perfdiff: warning: {warning}", err=True)
        argv = "perfdiff collect " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        extra_params: dict[str, object] = {"contend": contend, "collect_command": argv}
        if contend > 0:
            extra_params |= {"contend_mode": contend_mode, "contend_period_ms": contend_period_ms}
        with (Contender(contend, device, mode=mode,
                        period_ms=contend_period_ms) as neighbour,
              _Progress(plan.measured + plan.warmup, quiet) as progress):
            if neighbour.mode != "process" and contend > 0 and not neighbour.excluded_streams:
                text = ("the --contend neighbour's CUDA stream has no CUPTI id; its kernels stay "
                        "in the run file")
                opened.sources.warnings.append(text)  # recorded in the run file, not only printed
                typer.echo(f"perfdiff: warning: {text}", err=True)
            outcome = run_collection(
                cls(params), plan, opened.sources, opened.environment,
                replace(settings, exclude_streams=neighbour.excluded_streams),
                device=opened.device, extra_params=extra_params, progress=progress,
            )
    finally:
        remove_spool_dir(opened.sources.spool_dir)
    path, unsaved = save_recording(outcome.run_file, output, shards=shards)
    if unsaved is not None:
        typer.echo(f"perfdiff: error: {unsaved}", err=True)
    for warning in outcome.run_file.collection.warnings:
        if warning not in opened.sources.warnings:
            typer.echo(f"perfdiff: warning: {warning}", err=True)
    typer.echo(summary_line(outcome.run_file, path))
    if outcome.interrupted:
        typer.echo(f"perfdiff: interrupted; partial run file written to {path}", err=True)
        raise typer.Exit(ExitCode.INTERRUPTED)
    if outcome.error is not None:
        raise WorkloadError(
            f"workload '{workload}' failed: {outcome.run_file.status.reason}; "
            f"partial run file written to {path}"
        )
    if unsaved is not None:
        raise typer.Exit(unsaved.exit_code)
