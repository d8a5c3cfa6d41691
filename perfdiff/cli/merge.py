"""``perfdiff merge -o all.json.gz A.json B.json ...``: join run files into one.

Why a command: shards of a multi-GPU job recorded separately (one ``perfdiff collect`` per
rank, or per host), or repeated recordings of one workload, become one file whose runs are
replicates and whose devices are named by rank (``perfdiff.collect.merge`` says how).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

_InputsArg = typer.Argument(readable=False,
                             help="Run files to merge (.json or .json.gz) or torch.profiler "
                             "traces, in order.")
_OutputOpt = typer.Option("--output", "-o", readable=False, help="Merged run file to write.")
_ForceOpt = typer.Option(help="Merge even what is not one experiment: the same file twice, "
                         "different workloads, parameters, GPU models or drivers.")


_ShardsOpt = typer.Option("--shards", help="Write OUTPUT as a sharded run: a folder with "
                          "one Parquet shard per process (rank), read rank by rank by compare "
                          "and ranks (needs perfdiff[dask]).")


def merge(
    ctx: typer.Context,
    inputs: Annotated[list[Path], _InputsArg],
    *,
    output: Annotated[Path, _OutputOpt],
    force: Annotated[bool, _ForceOpt] = False,
    shards: Annotated[bool, _ShardsOpt] = False,
) -> None:
    """Merge run files (ranks of one job, or repeated runs) into one run file."""
    from perfdiff.collect.merge import merge_run_files
    from perfdiff.collect.merge_checks import check_distinct_inputs
    from perfdiff.readers.dispatch import load_input
    from perfdiff.schema.io import save_run_file

    files = [load_input(p, checked=ctx.obj) for p in inputs]  # the door: each checked once
    if not force:
        check_distinct_inputs(inputs)
    merged = merge_run_files(files, [str(p) for p in inputs], force=force)
    if shards:
        from perfdiff.schema.shards import write_shards

        path = write_shards(merged, output, inputs=tuple(inputs))
    else:
        path = save_run_file(merged, output, inputs=inputs)
    ranks = sorted({r.rank for r in merged.runs if r.rank is not None})
    devices = sorted({int(d) for r in merged.runs for d in set(r.kernels.device.tolist())})
    state = "" if merged.status.state == "complete" else f" [INCOMPLETE: {merged.status.reason}]"
    typer.echo(
        f"perfdiff: wrote {path} - {len({r.index for r in merged.runs})} run(s), "
        f"{len(merged.runs)} process(es), ranks {ranks or 'none'}, devices "
        f"{', '.join(f'GPU {d}' for d in devices) or 'none'}{state}"
    )
