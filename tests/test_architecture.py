"""The import rules of docs/explanation/architecture.md, checked on the source.

Why a test: the rules ("the CLI calls analysis through its public entry points; report/ only
formats what it is given; analysis never imports rich, typer, torch or cupti; nothing in
perfdiff/ exists only for benchmarks or tests") were broken once each without anyone noticing
(issue 16). Parsing the source (no imports of perfdiff's heavy modules) keeps this fast.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "perfdiff"


def _imports(folder: str) -> Iterator[tuple[Path, str, str]]:
    """(file, module imported from, name) for every ``from X import name`` under ``folder``,
    and (file, module, "") for every ``import X``."""
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    yield path, node.module, alias.name
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name, ""


def test_cli_imports_no_private_analysis_helpers() -> None:
    bad = [f"{p.name}: {m}.{n}" for p, m, n in _imports("cli")
           if m.startswith("perfdiff.analysis") and n.startswith("_")]
    assert not bad, bad


def test_report_calls_no_analysis_function() -> None:
    """report/ may name analysis's types (the rows and results it formats), never call its
    functions: every name it imports from perfdiff.analysis is a class or a constant."""
    bad = []
    for path, module, name in _imports("report"):
        if not module.startswith("perfdiff.analysis"):
            continue
        if not name:
            bad.append(f"{path.name}: import {module}")
            continue
        value = getattr(importlib.import_module(module), name)
        if callable(value) and not inspect.isclass(value):
            bad.append(f"{path.name}: {module}.{name}")
    assert not bad, bad


@pytest.mark.parametrize("folder", ["analysis", "schema", "readers"])
def test_no_ui_or_gpu_imports_below_the_cli(folder: str) -> None:
    banned = ("rich", "typer", "click", "torch", "cupti", "pynvml", "nvtx")
    bad = [f"{p.name}: {m}" for p, m, _ in _imports(folder) if m.split(".")[0] in banned]
    assert not bad, bad


def test_imports_point_one_way() -> None:
    """schema imports nothing of perfdiff above it; analysis and readers never import report,
    cli or collect; report never imports cli or collect."""
    rules = {"schema": ("perfdiff.analysis", "perfdiff.report", "perfdiff.cli",
                        "perfdiff.collect", "perfdiff.readers"),
             "analysis": ("perfdiff.report", "perfdiff.cli", "perfdiff.collect"),
             "readers": ("perfdiff.report", "perfdiff.cli", "perfdiff.collect"),
             "report": ("perfdiff.cli", "perfdiff.collect")}
    bad = [f"{folder}/{p.name}: {m}" for folder, banned in rules.items()
           for p, m, _ in _imports(folder) if m.startswith(banned)]
    assert not bad, bad


def test_nothing_in_the_package_is_for_benchmarks_or_tests_only() -> None:
    assert not (PACKAGE / "analysis" / "validate").exists()
    markers = (PACKAGE / "markers.py").read_text(encoding="utf-8")
    assert "Timer" not in markers and "set_call_timer" not in markers
    bad = [f"{p.relative_to(PACKAGE)}: {m}" for p, m, _ in _imports(".")
           if m.split(".")[0] in ("bench", "tests")]
    assert not bad, bad


def test_readers_and_analysis_do_not_import_each_other() -> None:
    """The door (readers/) and the statistics (analysis/) meet only in schema/'s types
    (``schema.loaded``); an import either way is a cycle waiting (issue 24)."""
    bad = [f"analysis/{p.name}: {m}" for p, m, _ in _imports("analysis")
           if m.startswith("perfdiff.readers")]
    bad += [f"readers/{p.relative_to(PACKAGE / 'readers')}: {m}" for p, m, _ in _imports("readers")
            if m.startswith("perfdiff.analysis")]
    assert not bad, bad


FILE_OPENERS = frozenset({"open", "read_csv", "read_json", "read_bytes", "read_text",
                          "load_run_file", "iterdir", "glob", "rglob", "is_file", "is_dir",
                          "exists", "stat"})


def test_analysis_opens_no_files() -> None:
    """What a path is and what it holds is decided in readers/ (the door); analysis gets
    what was read."""
    bad = []
    for path in sorted((PACKAGE / "analysis").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in FILE_OPENERS:
                    bad.append(f"{path.name}:{node.lineno}: {name}()")
    assert not bad, bad


def test_every_input_kind_goes_through_the_one_door() -> None:
    """Commands read inputs through readers.dispatch; only the door names a format's reader."""
    readers = ("read_torch_profiler", "read_latencyprism", "is_torch_profiler_input",
               "is_latencyprism_input", "is_latencyprism_folder", "read_nsys", "is_nsys_input")
    bad = [f"{p.relative_to(PACKAGE)}: {m}.{n}" for p, m, n in _imports(".")
           if n in readers and not p.is_relative_to(PACKAGE / "readers")
           and p.name != "import_trace.py"]
    assert not bad, bad


def test_compare_options_are_declared_in_one_table() -> None:
    """The console script's option sets for compare are the fast parser's table, which a test
    in tests/cli checks against the typer command."""
    from perfdiff.cli.compare_run import OPTIONS
    from perfdiff.cli.entry import FLAG_OPTIONS, VALUE_OPTIONS

    assert VALUE_OPTIONS["compare"] | FLAG_OPTIONS["compare"] == set(OPTIONS)
    source = (PACKAGE / "cli" / "entry.py").read_text(encoding="utf-8")
    assert '"--cycle-range"' not in source.split("VALUE_OPTIONS", 1)[1].split('"kernels"')[0]


def test_the_trace_readers_modules_talk_through_public_names() -> None:
    """Modules of one package import each other's public names only (STYLE.md): a private
    name is free to change inside its module."""
    bad = [f"{p.relative_to(PACKAGE)}: {m}.{n}" for p, m, n in _imports("readers")
           if m.startswith("perfdiff.readers.") and n.startswith("_")]
    assert not bad, bad
