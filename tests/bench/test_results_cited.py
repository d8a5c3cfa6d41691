"""Every measured result the docs cite exists, under its study's home ``bench/<study>/``.

Why: results were scattered over one folder of ``scripts/gpu`` with a third cited nowhere and
citations that outlived their files. A citation is a path ``bench/<study>/results/...`` (or a
study's own result file, ``bench/<study>/results-*``) in docs/, bench/, fixtures/README.md or
README.md; shell-style braces and ``*`` are expanded, and each pattern must match a file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CITED = re.compile(r"bench/[A-Za-z0-9_\-]+/results[A-Za-z0-9_*{},.\-/]*")


def _documents() -> list[Path]:
    docs = [*(REPO / "docs").rglob("*.md"), *(REPO / "bench").rglob("*.md"),
            *(REPO / "bench").rglob("*.py"), *(REPO / "bench").rglob("*.sh"),
            REPO / "fixtures" / "README.md", REPO / "README.md"]
    return [p for p in docs if p.is_file()]


def _expand_braces(pattern: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    head, tail = pattern[:match.start()], pattern[match.end():]
    return [out for choice in match.group(1).split(",")
            for out in _expand_braces(head + choice + tail)]


def _citations() -> list[tuple[str, str]]:
    found = []
    for doc in _documents():
        for match in CITED.finditer(doc.read_text(encoding="utf-8")):
            found.append((str(doc.relative_to(REPO)), match.group(0).rstrip(".,")))
    return found


def test_the_docs_cite_results_under_bench() -> None:
    assert len(_citations()) >= 20  # the pattern still finds the citations


@pytest.mark.parametrize(("doc", "cited"), _citations())
def test_every_cited_result_exists(doc: str, cited: str) -> None:
    for pattern in _expand_braces(cited):
        matches = list(REPO.glob(pattern.rstrip("/")))
        assert matches, f"{doc} cites {pattern}, which matches no file"


def test_no_document_cites_the_old_results_folder() -> None:
    old = [str(d.relative_to(REPO)) for d in [*_documents(), *(REPO / "tests").rglob("*.py")]
           if "scripts/gpu/" + "results" in d.read_text(encoding="utf-8")]
    assert not old, f"cite the old results folder of scripts/gpu (now bench/*/results): {old}"


def test_every_result_file_is_cited() -> None:
    """A result nobody cites is a result nobody can find: each file under
    bench/*/results/ is named, or matched by a cited pattern or folder."""
    text = "\n".join(d.read_text(encoding="utf-8") for d in _documents())
    patterns = [p.rstrip("/") for _, c in _citations() for p in _expand_braces(c)]
    cited: set[Path] = set()
    for pattern in patterns:
        for match in REPO.glob(pattern):
            cited |= {match} | set(match.rglob("*")) if match.is_dir() else {match}
    orphans = [str(f.relative_to(REPO)) for f in sorted(REPO.glob("bench/*/results/**/*"))
               if f.is_file() and f not in cited and f.name not in text]
    assert not orphans, f"result files cited nowhere: {orphans}"
