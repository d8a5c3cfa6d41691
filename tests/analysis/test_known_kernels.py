"""Known kernels whose names say nothing (perfdiff/analysis/known_kernels.py)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from perfdiff.analysis.families import classify
from perfdiff.analysis.family_rules import FAMILY_RULES, OTHER
from perfdiff.analysis.known_kernels import KNOWN_KERNELS

TABLE = Path(__file__).parents[2] / "fixtures" / "kernel-names" / "kernel-names.tsv.gz"
# owner/name@<40 hex>:path:first-last
CITATION = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}:[\w./-]+:\d+-\d+")


def _recorded_names() -> set[str]:
    with gzip.open(TABLE, "rt") as fh:
        fh.readline()
        return {line.rstrip("\n").split("\t")[6] for line in fh}


@pytest.mark.parametrize("known", KNOWN_KERNELS, ids=lambda k: k.name)
def test_every_row_was_recorded_cites_its_body_and_says_why(known: object) -> None:
    from perfdiff.analysis.known_kernels import KnownKernel

    assert isinstance(known, KnownKernel)
    assert known.name in _recorded_names(), "a row needs a real recording of the name"
    assert CITATION.match(known.source), known.source
    assert known.family in {family for family, _ in FAMILY_RULES}
    assert known.family != OTHER and known.suite and len(known.why) > 40


def test_names_are_unique_and_the_rules_alone_would_say_other() -> None:
    """A row the name rules already label is not needed: the table is for names that say
    nothing."""
    from perfdiff.analysis.families import _FAMILIES, _first

    names = [k.name for k in KNOWN_KERNELS]
    assert len(names) == len(set(names))
    assert all(_first(_FAMILIES, n) == "" for n in names)


def test_rodinia_gaussian_is_an_lu_factorisation() -> None:
    assert classify("Fan1(float *, float *, int, int)").family == "solver"
    got = classify("Fan2(float *, float *, float *, int, int, int)")
    assert (got.family, got.precision, got.engine) == ("solver", "fp32", "")


@pytest.mark.parametrize("name", [
    "Fan1",  # another spelling (OpenCL's kernel name, no signature): not the row's name
    "Fan1(double *, double *, int, int)",  # someone else's kernel of that name
    "fan2(float *, float *, float *, int, int, int)",
])
def test_only_the_exact_name_matches(name: str) -> None:
    assert classify(name).family == OTHER
