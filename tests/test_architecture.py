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
import re
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


def _cli_import_graph() -> dict[str, set[str]]:
    """perfdiff/cli's modules (by file stem) and the cli modules each imports, at any depth
    of its source: an import inside a function closes a circle as surely as one at the top,
    it only closes it later."""
    prefix = "perfdiff.cli."
    graph: dict[str, set[str]] = {}
    for path, module, name in _imports("cli"):
        targets = graph.setdefault(path.stem, set())
        if module == "perfdiff.cli" and name:
            targets.add(name)  # from perfdiff.cli import commands
        elif module.startswith(prefix):
            targets.add(module.removeprefix(prefix).split(".")[0])
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules of each circle of ``graph`` (its strongly connected parts of more than one
    module, or of a module importing itself), by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                part.append(member)
                if member == node:
                    break
            if len(part) > 1 or node in graph.get(node, ()):
                circles.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_circles_are_found() -> None:
    """The check below can fail: the shape of perfdiff/cli before the commands stopped
    importing the app (app -> commands -> compare -> app) is a circle."""
    old = {"app": {"commands", "guard"}, "commands": {"compare", "merge"},
           "compare": {"app", "compare_run"}, "merge": {"app"}, "compare_run": set()}
    assert _circles(old) == [["app", "commands", "compare", "merge"]]
    assert _circles({"a": {"a"}}) == [["a"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_inside_the_cli() -> None:
    """Imports inside perfdiff/cli point one way: the app imports the command modules and
    registers their functions; a command module never imports the app (STYLE.md, "Imports
    point one way")."""
    graph = _cli_import_graph()
    assert {"app", "entry", "compare", "collect"} <= graph.keys()  # the walk saw the package
    assert "compare_run" in graph["entry"]  # and its imports
    assert _circles(graph) == []


def test_nothing_in_the_package_is_for_benchmarks_or_tests_only() -> None:
    assert not (PACKAGE / "analysis" / "validate").exists()
    markers = (PACKAGE / "markers.py").read_text(encoding="utf-8")
    assert "Timer" not in markers and "set_call_timer" not in markers
    bad = [f"{p.relative_to(PACKAGE)}: {m}" for p, m, _ in _imports(".")
           if m.split(".")[0] in ("bench", "tests")]
    assert not bad, bad


ENVIRONMENT_PAGE = ROOT / "docs" / "reference" / "environment.md"
_ENV_READS = frozenset({"get", "setdefault", "pop", "getenv"})


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def _environment_names(tree: ast.AST) -> set[str]:
    """The environment variables a module names: every ``PERFDIFF_*`` string (read directly or
    through a constant), every string read with ``os.environ.get/[]/setdefault/pop`` or
    ``os.getenv``, and every ``*_ENV = "NAME"`` constant."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and re.fullmatch(r"PERFDIFF_[A-Z0-9_]+", node.value):
            names.add(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _ENV_READS and node.args \
                and (_is_environ(node.func.value) or node.func.attr == "getenv") \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            names.add(node.slice.value)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str) and any(
                    isinstance(t, ast.Name) and t.id.endswith("_ENV") for t in node.targets):
            names.add(node.value.value)
    return names


def _documented_environment() -> set[str]:
    """The variables in the first column of environment.md's tables."""
    text = ENVIRONMENT_PAGE.read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", text, flags=re.MULTILINE))


def test_environment_reads_are_found() -> None:
    """The check below can fail: each way of naming a variable is seen."""
    source = ("import os\nA_ENV = 'ONE'\nos.environ.get('TWO')\nos.getenv('THREE')\n"
              "os.environ['FOUR'] = '1'\nos.environ.setdefault('FIVE', '1')\n"
              "name = 'PERFDIFF_SIX'\nprint('PERFDIFF_ in a sentence')\n")
    assert _environment_names(ast.parse(source)) == {"ONE", "TWO", "THREE", "FOUR", "FIVE",
                                                      "PERFDIFF_SIX"}


def test_every_environment_variable_is_documented() -> None:
    """No hidden switch: every variable perfdiff/ reads is on docs/reference/environment.md
    (what it does, its default), and every variable there is still read (STYLE.md: nothing in
    perfdiff/ is a switch read from the environment for benchmarks or tests)."""
    read: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _environment_names(ast.parse(path.read_text(encoding="utf-8"))):
            read.setdefault(name, str(path.relative_to(ROOT)))
    documented = _documented_environment()
    assert {"PERFDIFF_DEBUG", "PERFDIFF_MAX_INPUT_GIB", "DASK_SCHEDULER_ADDRESS"} <= read.keys()
    hidden = {name: path for name, path in read.items() if name not in documented}
    assert not hidden, f"read but not on {ENVIRONMENT_PAGE.name}: {hidden}"
    sources = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    stale = sorted(n for n in documented if f'"{n}"' not in sources and f"'{n}'" not in sources)
    assert not stale, f"on {ENVIRONMENT_PAGE.name} but read nowhere: {stale}"


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


# what tells or reads a kind of input: named only by the door (readers/dispatch.py) and the
# readers that define them
KIND_DECIDERS = frozenset({
    "input_kind", "is_sharded_run", "is_torch_profiler_input", "is_nsys_input",
    "is_latencyprism_input", "is_latencyprism_folder", "read_torch_profiler", "read_nsys",
    "read_latencyprism", "latencyprism_folder", "load_sharded_run", "join_shards",
    "read_manifest", "read_run_file", "load_run_file"})
# the exceptions, each for a reason: a Dask task gets a folder name only and re-reads the
# manifest in its own process (engine/tasks.py); the recorder joins the shards it wrote itself
# (collect/); the schema package defines the run-file and shard readers
KIND_DECIDER_EXCEPTIONS = {("engine", "read_manifest"), ("collect", "load_run_file")}


def _outside_the_door(path: Path, name: str) -> bool:
    rel = path.relative_to(PACKAGE)
    if rel.parts[0] in ("readers", "schema"):  # the door, the readers, their definitions
        return False
    return (rel.parts[0], name) not in KIND_DECIDER_EXCEPTIONS


def test_one_place_maps_a_path_to_a_kind() -> None:
    """Commands, the engine and analysis read inputs through readers.dispatch (open_input,
    load_input, import_inputs); only the door names a detector or a format's reader."""
    bad = [f"{p.relative_to(PACKAGE)}: {m}.{n}" for p, m, n in _imports(".")
           if n in KIND_DECIDERS and _outside_the_door(p, n)]
    assert not bad, bad


def _calls(folder: str, name: str) -> Iterator[tuple[Path, int]]:
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == name:
                    yield path, node.lineno


def test_an_input_path_is_checked_in_one_place() -> None:
    """require_input (exists, readable) is called by the door, by the console script (which
    hands what it checked to the door: perfdiff.inputs.CheckedInputs) and by load_run_file for
    callers outside the commands; never by a command itself. tests/readers/test_dispatch.py
    counts the checks per command."""
    allowed = {"readers/dispatch.py", "cli/entry.py", "schema/io.py"}
    bad = [f"{p.relative_to(PACKAGE)}:{line}" for p, line in _calls(".", "require_input")
           if str(p.relative_to(PACKAGE)) not in allowed]
    assert not bad, bad


def test_modules_talk_through_public_names() -> None:
    """No module imports another's underscore name (the torch.profiler reader's modules once
    shared about 35 of them): what crosses a module is public and documented."""
    bad = [f"{p.relative_to(PACKAGE)}: {m}.{n}" for p, m, n in _imports(".")
           if m.startswith("perfdiff") and n.startswith("_") and not n.startswith("__")]
    assert not bad, bad


def test_compare_options_are_declared_in_one_table() -> None:
    """compare's options live in compare_run.COMPARE_OPTIONS: the fast parser, the console
    script's option sets and the typer command (built from it) all read that table."""
    from perfdiff.cli.compare_run import COMPARE_OPTIONS, OPTIONS
    from perfdiff.cli.entry import FLAG_OPTIONS, VALUE_OPTIONS

    names = {name for spec in COMPARE_OPTIONS for name in spec.names}
    assert VALUE_OPTIONS["compare"] | FLAG_OPTIONS["compare"] == names == set(OPTIONS)
    command = (PACKAGE / "cli" / "compare.py").read_text(encoding="utf-8")
    entry = (PACKAGE / "cli" / "entry.py").read_text(encoding="utf-8")
    for spec in COMPARE_OPTIONS:
        for name in spec.names:
            assert f'"{name}"' not in command, f"cli/compare.py declares {name} again"
            assert f'"{name}"' not in entry.split('"kernels"')[0], f"entry.py lists {name}"


def _calls_and_fields(path: Path) -> tuple[set[str], set[str]]:
    """(names called, names of annotated class attributes) in one module."""
    called: set[str] = set()
    declared: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        elif isinstance(node, ast.ClassDef):
            declared |= {item.target.id for item in node.body
                         if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
    return called, declared


def test_collect_has_one_recorder_core_and_one_run_file_builder() -> None:
    """Issue 28 item 5: built-in workloads and user programs each assembled their run file
    and declared their sampler settings, and the copies drifted. In collect/ a run file is
    built by the builder (a recording) or by merge (joining run files), nowhere else; a
    sampler setting is declared once, in settings.py; the samplers are opened in one module."""
    builders, declares, openers = set(), set(), set()
    for path in sorted((PACKAGE / "collect").rglob("*.py")):
        called, declared = _calls_and_fields(path)
        name = str(path.relative_to(PACKAGE / "collect"))
        if "RunFile" in called:
            builders.add(name)
        if declared & {"sample_interval_ns", "nvml_interval_ms", "pm_sampling", "trace_memory",
                        "untraced_every"}:
            declares.add(name)
        if called & {"PmSampler", "NvmlDefaultSampler"}:
            openers.add(name)
    assert builders == {"run_file_builder.py", "merge.py"}
    assert declares == {"settings.py"}
    assert openers == {"sampler_life.py"}


def test_no_folder_of_tests_is_named_like_a_module_perfdiff_imports() -> None:
    """pytest puts each folder of test files without ``__init__.py`` on ``sys.path``; a folder
    of tests named ``cupti`` (``tests/collect/cupti``, mirroring ``perfdiff/collect/cupti``)
    then answered ``importlib.util.find_spec("cupti")`` on a machine without cupti-python, so
    ``perfdiff collect`` went past its "cupti-python is not installed" check in the tests that
    ran after it (CI, 2026-11-28). Test folders mirroring such a room carry ``_tests``."""
    root = Path(__file__).resolve().parents[1]
    imported: set[str] = set()
    for path in (root / "perfdiff").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    imported.discard("perfdiff")
    folders = {p.name for p in (root / "tests").rglob("*") if p.is_dir()}
    assert not folders & imported, sorted(folders & imported)
