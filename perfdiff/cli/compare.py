"""``perfdiff compare NORMAL ABNORMAL``: the typer command (options, help, usage errors).

Thin on purpose: the options become a :class:`CompareArgs` and :func:`run_compare` does the
work (load both sides, compare, render, write, the ``--fail-on-regression`` exit code). The
console script runs plain command lines through the same ``run_compare`` without typer
(``compare_run.py`` says why); this command is the door for everything else.

Its options are not written out here: they are built from the one table
``compare_run.COMPARE_OPTIONS`` (names, types, bounds, help), which the fast parser and the
console script read too, so that the three can never disagree (issue 24: they were declared
three times).
"""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import typer

from perfdiff.cli.compare_run import (
    COMPARE_OPTIONS,
    DEFAULT_FIGURES,
    CompareArgs,
    Grouping,
    OptionSpec,
    ReportFormat,
    figure_links,
    figures_folder,
    run_compare,
)
from perfdiff.cli.options import (
    alpha_option,
    fail_on_regression_option,
    output_option,
)

# The analysis (pandas, scipy) and the renderers are imported by run_compare: every perfdiff
# command, --help included, imports every command module to register it, and those imports
# cost about a second.

_TYPES: dict[str, Any] = {"flag": bool, "int": int, "float": float, "str": str, "path": Path,
                          "format": ReportFormat, "grouping": Grouping}
_SHARED = {"output": output_option, "alpha": alpha_option,
           "fail_on_regression": fail_on_regression_option}
_DEFAULTS = {f.name: f.default for f in fields(CompareArgs)}


def _option(spec: OptionSpec) -> Any:
    """The typer option of one table row (a shared one from cli/options.py, whose help is
    completed by the row's text)."""
    if spec.shared:
        return _SHARED[spec.shared](spec.help)
    return typer.Option(*spec.names, min=spec.low, max=spec.high, metavar=spec.metavar,
                        help=spec.help)


def _parameters() -> list[inspect.Parameter]:
    inputs = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=typer.Context),
        inspect.Parameter("normal", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[
            Path, typer.Argument(
                readable=False,  # perfdiff.inputs says why in one line (exit 3), not click (2)
                help="Baseline: a run file (.json/.json.gz), a torch.profiler trace (or a "
                "folder of per-rank traces) or a LatencyPrism '*_perf_data' folder.")]),
        inspect.Parameter("abnormal", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=Annotated[Path, typer.Argument(
                              readable=False,
                              help="The run to explain, same kinds of input as NORMAL.")]),
    ]
    options = []
    for spec in COMPARE_OPTIONS:
        default = _DEFAULTS[spec.field]
        kind = _TYPES[spec.kind] if default is not None else _TYPES[spec.kind] | None
        options.append(inspect.Parameter(spec.field, inspect.Parameter.KEYWORD_ONLY,
                                         default=default,
                                         annotation=Annotated[kind, _option(spec)]))
    return inputs + options


def compare(ctx: typer.Context, normal: Path, abnormal: Path, **options: Any) -> None:
    """Compare two runs: which functions made ABNORMAL slower than NORMAL, and why."""
    code = run_compare(CompareArgs(normal=normal, abnormal=abnormal, **options), ctx.obj)
    if code:
        raise typer.Exit(code)


_PARAMETERS = _parameters()
compare.__signature__ = inspect.Signature(_PARAMETERS)  # type: ignore[attr-defined]
compare.__annotations__ = {p.name: p.annotation for p in _PARAMETERS}


__all__ = ["DEFAULT_FIGURES", "ReportFormat", "compare", "figure_links", "figures_folder"]
