"""The console script: a missing or unreadable input is reported before anything heavy loads,
and a plain ``compare`` line runs without typer (``perfdiff.cli.compare_run`` says why).

Why a door before the app: importing typer (which imports pydantic here) and registering the
commands costs 0.15-0.3 s, and ``compare`` used to need 1.7 s to say that a file did not exist.
For the commands that read files, the inputs are found in the command line with the options
table below (a test checks it against the real commands) and checked with
:func:`perfdiff.inputs.require_input` (standard library only); any doubt (an option not in the
table, ``--help``) skips the check and the app parses as usual, so the door can only say
earlier what the command itself would say. The paths checked here are handed to the command
(:class:`perfdiff.inputs.CheckedInputs`), whose door does not check them again.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

from perfdiff.cli.bare_options import expand_bare_options
from perfdiff.cli.compare_run import OPTIONS as COMPARE_OPTIONS
from perfdiff.cli.input_limit import take_input_limit
from perfdiff.cli.option_limits import check_numeric_options
from perfdiff.errors import PerfdiffError, exit_code_for
from perfdiff.inputs import CheckedInputs, require_input

if TYPE_CHECKING:
    from perfdiff.cli.compare_run import CompareArgs

# options that take a value, per command that reads input files (the rest are flags);
# compare's come from its one table (cli/compare_run.py OPTIONS)
VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "compare": frozenset(n for n, spec in COMPARE_OPTIONS.items() if spec.kind != "flag"),
    "kernels": frozenset({"--by", "--cycle", "--format", "--names", "--output", "--run",
                          "--steps", "--top", "-o"}),
    "bench": frozenset({"--alpha", "--baseline", "--fail-on-regression", "--format",
                        "--measure", "--min-delta-us", "--noise-floor-pct", "--output",
                        "--spread-factor", "--target", "-o"}),
    "merge": frozenset({"--output", "-o"}),
    "import": frozenset({"--cycle-range", "--output", "--steps", "-o"}),
    "ranks": frozenset({"--alpha", "--cycle-range", "--format", "--gpu-cv-pct", "--output",
                        "--scheduler", "--steps", "--threshold", "--top", "-o"}),
}
FLAG_OPTIONS: dict[str, frozenset[str]] = {
    "compare": frozenset(n for n, spec in COMPARE_OPTIONS.items() if spec.kind == "flag"),
    "kernels": frozenset({"--all", "--include-warmup", "--markdown", "--plain"}),
    "bench": frozenset({"--force", "--plain"}),
    "merge": frozenset({"--force", "--no-force", "--shards"}),
    "import": frozenset({"--allow-missing-ranks", "--shards"}),
    "ranks": frozenset(),
}
# LatencyPrism '*_perf_data' folders (compare) and folders of per-rank torch.profiler traces
FOLDERS_OK = frozenset({"compare", "kernels", "merge", "import", "ranks"})


def input_arguments(argv: list[str]) -> list[str] | None:
    """The positional arguments (input paths) of ``argv``, or None when unsure.

    ``argv`` is read as the app reads it, bare options (``--plots`` with no DIR) expanded
    first: otherwise ``--plots -o r.md`` would take ``-o`` as the folder and the report's
    path ``r.md`` as an input that does not exist.
    """
    argv = expand_bare_options(argv)
    if not argv or argv[0] not in VALUE_OPTIONS:
        return None
    command, rest = argv[0], argv[1:]
    values, flags = VALUE_OPTIONS[command], FLAG_OPTIONS[command]
    inputs: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            inputs += rest[i + 1:]
            break
        if arg.startswith("-") and arg != "-":
            name = arg.split("=", 1)[0]
            if name in flags:
                i += 1
            elif name in values:
                i += 1 if "=" in arg else 2
            else:
                return None  # --help, a typo, a new option: let the app say it
            continue
        inputs.append(arg)
        i += 1
    return inputs


def main() -> None:
    """Check the inputs, then run a plain ``compare`` line without typer
    (``perfdiff.cli.compare_run``), anything else through the app (``perfdiff.cli.app.main``)."""
    try:
        argv = take_input_limit(sys.argv[1:])  # the app takes it out of sys.argv again
        inputs = input_arguments(argv)
        check_numeric_options(argv)
        for path in inputs or ():
            require_input(path, folder_ok=argv[0] in FOLDERS_OK)
    except PerfdiffError as exc:
        print(f"perfdiff: error: {exc}", file=sys.stderr)
        sys.exit(exit_code_for(exc))
    # the door (readers.dispatch) takes these as checked: each input is checked once
    checked = CheckedInputs.of(inputs or ())
    if inputs is not None and argv[0] == "compare":
        from perfdiff.cli.compare_run import parse_compare_args

        args = parse_compare_args(expand_bare_options(argv)[1:])
        if args is not None:
            _compare_process(args, checked)
    from perfdiff.cli.app import main as app_main

    app_main(checked)


def _compare_process(args: CompareArgs, checked: CheckedInputs) -> NoReturn:
    """A plain ``compare`` line as one short process, tuned for that (bench/README.md)."""
    import contextlib
    import gc
    import os

    from perfdiff.cli.compare_run import run_compare
    from perfdiff.cli.guard import run_guarded

    # compare makes no BLAS call, yet OpenBLAS (numpy's and scipy's, each) starts a thread
    # per core at import that spins for work: 0.3 s of CPU on the other cores per compare,
    # 0.02-0.04 s of wall time on a busy 2-core machine. Set before numpy is imported; a
    # user's setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The cyclic collector would walk ~10^6 objects (pandas, scipy, the reader's rows) about
    # 300 times for garbage that is not there: 0.06-0.1 s of a 1 s compare (peak memory +1 MiB
    # without it). Off here only: run_compare in a longer-lived process keeps it.
    gc.disable()
    try:
        run_guarded(lambda: run_compare(args, checked))
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
        # The report is written and closed (write_atomic) or printed; what is left is the
        # interpreter's teardown of pandas, scipy and numpy (~10^6 objects, a last full
        # collection): 0.06-0.1 s of a 1 s compare for nothing. Flush and leave.
        for stream in (sys.stdout, sys.stderr):
            # a reader that went away (| head): as run_guarded, nothing more to say
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


__all__ = ["input_arguments", "main"]
