"""``python -m bench.validate``: run the harness, print the markdown tables.

Why a module entry and not a ``perfdiff`` command: this is a developer's measurement of the
statistics, not a user workflow; it needs no CLI framework and runs where compare runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

from bench.validate.harness import (
    DESIGNS,
    FIVE_RUNS,
    LAG1S,
    OFFSETS_PCT,
    ONE_RUN,
    grid,
    run_grid,
)
from bench.validate.markdown import aa_table, criteria_table, injection_table, score
from bench.validate.realaa import (
    compare_splits,
    cycle_spread,
    halves,
    load_aa_tables,
    pairs,
    run_spread,
    spread_table,
    summarise,
    summary_table,
)
from perfdiff.analysis.model import CompareOptions


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.validate",
        description="Measure perfdiff's statistics on simulations (and real A/A runs).",
    )
    parser.add_argument("--trials", type=int, default=200, help="draws per grid cell")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--quick", action="store_true", help="lag-1 0 and 0.9, offset 0 and 2 %%")
    parser.add_argument("--lag1s", type=float, nargs="+", default=None, help="lag-1 levels")
    parser.add_argument("--offsets", type=float, nargs="+", default=None, help="run offsets, %%")
    parser.add_argument("--real-aa", type=Path, default=None, help="folder of A/A run files")
    parser.add_argument("--no-sim", action="store_true", help="skip the simulations")
    parser.add_argument(
        "--run-cv-pct",
        type=float,
        default=None,
        help="CompareOptions.run_cv_pct to measure (default: the statistics' own default)",
    )
    parser.add_argument(
        "--assume",
        choices=("matched", "fixed"),
        default="matched",
        help="one-run cells: assume each cell's true run offset (matched), or the options' "
        "run_cv_pct whatever the truth (fixed; implied by --run-cv-pct)",
    )
    parser.add_argument(
        "--design", choices=("both", "one-run", "five-runs"), default="both", help="which designs"
    )
    parser.add_argument("-o", "--output", type=Path, default=None, help="write markdown here")
    return parser


def _progress(done: int, total: int) -> None:
    if done == total or done % max(1, total // 20) == 0:
        print(f"  {done}/{total} trials", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    options = CompareOptions()
    if args.run_cv_pct is not None:
        options = dataclasses.replace(options, run_cv_pct=args.run_cv_pct)
    matched = args.assume == "matched" and args.run_cv_pct is None
    started = time.perf_counter()
    parts = [
        "# perfdiff statistics validation",
        "",
        f"Command: `python -m bench.validate {' '.join(argv or sys.argv[1:])}`; "
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{args.workers} workers; alpha = {options.alpha}, practical threshold "
        f"{options.practical_threshold_pct} % of cycle time, "
        + (
            "one-run cells assume their true run offset (run_cv_pct = offset, "
            "idle_run_cv_pct = 0: the simulator's truth)"
            if matched
            else f"run_cv_pct {options.run_cv_pct} % in every cell"
        )
        + f", seed {args.seed}.",
    ]
    if not args.no_sim:
        lag1s = args.lag1s or ((0.0, 0.9) if args.quick else LAG1S)
        offsets = args.offsets or ((0.0, 2.0) if args.quick else OFFSETS_PCT)
        designs = {"both": DESIGNS, "one-run": (ONE_RUN,), "five-runs": (FIVE_RUNS,)}[args.design]
        cells = grid(designs, lag1s, offsets)
        results = run_grid(
            cells,
            args.trials,
            options,
            base_seed=args.seed,
            workers=args.workers,
            progress=_progress,
            matched=matched,
        )
        scores = [score(result, options.alpha) for result in results]
        parts += [
            "",
            "## Acceptance criteria",
            "",
            criteria_table(scores, options.alpha, options.alpha),
            "",
            "## A/A comparisons",
            "",
            aa_table(scores, options.alpha),
            "",
            "## Injected slowdowns and cost shifts",
            "",
            injection_table(scores),
        ]
    if args.real_aa is not None:
        tables = [table for _, table in load_aa_tables(args.real_aa)]
        if len(tables) >= 2:
            summaries = [
                summarise(
                    "1 vs 1", compare_splits(tables, pairs(len(tables)), options), options.alpha
                )
            ]
            if len(tables) >= 4:
                summaries.append(
                    summarise(
                        f"{len(tables) // 2} vs {len(tables) // 2}",
                        compare_splits(tables, halves(len(tables)), options),
                        options.alpha,
                    )
                )
            between, within = cycle_spread(tables)
            parts += [
                "",
                f"## Real A/A: {len(tables)} recordings in {args.real_aa}",
                "",
                summary_table(summaries),
                "",
                f"Cycle time: run-to-run CV of the mean {between:.2f} %, cycle-to-cycle CV "
                f"within a recording {within:.2f} %. Functions with >= 1 % of the cycle:",
                "",
                spread_table(run_spread(tables)),
            ]
        else:
            parts += ["", f"## Real A/A: fewer than 2 recordings in {args.real_aa}"]
    parts += ["", f"Wall time: {time.perf_counter() - started:.0f} s."]
    text = "\n".join(parts) + "\n"
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
