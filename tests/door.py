"""Tests' shortcuts through the door: read paths as the CLI does (``readers.dispatch``), then
hand them to analysis (which opens no files)."""

from __future__ import annotations

from pathlib import Path

from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.analysis.sides import Side, side_of
from perfdiff.cli.compare_run import compare_paths
from perfdiff.readers.dispatch import ReadOptions, open_input


def load_side(path: str | Path, *, cycle_range: str | None = None) -> Side:
    """One input read by the door, as analysis sees it."""
    return side_of(open_input(path, ReadOptions(cycle_range=cycle_range)))


def compare_inputs(normal: str | Path, abnormal: str | Path,
                   options: CompareOptions | None = None,
                   labels: tuple[str, str] = ("normal", "abnormal"), *,
                   cycle_range: str | None = None) -> Comparison:
    """``perfdiff compare``'s comparison of two paths."""
    return compare_paths(normal, abnormal, options, labels, cycle_range=cycle_range)[0]
