"""A program that marks no cycles and steps nothing gets its outermost repeating Python call
found while it runs (found_function.py), cut like ``--cycle-function``'s and left untraced in
part, through the real ``perfdiff collect -- CMD`` path with the fake CUPTI backend.

The programs import a stand-in ``torch`` package (written into the test's folder) whose files
sit where torch's dispatch wrappers do (``torch/nn/modules/module.py``: ``_wrapped_call_impl``
and ``_call_impl``; ``torch/utils/_contextlib.py``: ``decorate_context``), so that the
wrapper table is matched as in a real program; nothing in perfdiff knows the stand-in. Each
kernel is named after the iteration that launched it (``i7_k``), so "untraced cycles hold no
kernel" and "one iteration per cycle" are checked launch by launch. The learning window takes
one to two seconds of the program's run: the programs run about three seconds.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.self_overhead import self_overhead_notes
from perfdiff.schema.model import RunFile
from tests.support.stand_in_programs import TORCH_STEPS, collect_program

PERFDIFF = [sys.executable, "-c", "from perfdiff.cli.app import main; main()"]

STAND_IN = {
    "torch/__init__.py": ("from torch import cuda, nn, optim, profiler, utils\n"
                          "from torch.utils._contextlib import no_grad\n"),
    "torch/cuda.py": "def is_initialized():\n    return False\n",
    "torch/nn/__init__.py": "from torch.nn.modules.module import Module\n",
    "torch/nn/modules/__init__.py": "",
    "torch/nn/modules/module.py": textwrap.dedent("""
        class Module:
            def _wrapped_call_impl(self, *args, **kwargs):
                return self._call_impl(*args, **kwargs)

            def _call_impl(self, *args, **kwargs):
                return self.forward(*args, **kwargs)

            __call__ = _wrapped_call_impl
    """),
    "torch/utils/__init__.py": "from torch.utils import _contextlib\n",
    "torch/utils/_contextlib.py": textwrap.dedent("""
        import functools

        def no_grad():
            def decorator(func):
                @functools.wraps(func)
                def decorate_context(*args, **kwargs):
                    return func(*args, **kwargs)
                return decorate_context
            return decorator
    """),
    **{name: text for name, text in TORCH_STEPS.items()
       if name.startswith(("torch/optim", "torch/profiler"))},
}
HEADER = """\
import time
import torch
from tests.support.fake_cupti import launch
"""


# A generate loop: the first call of ``{first}`` tokens, then calls 1 .. later-1 of 3 tokens;
# kernels named after the token (``kernel="t"``) or the call (``kernel="i"``).
GENERATOR = """
class LMHead(torch.nn.Module):
    def forward(self, i, t):
        launch(f"i{{{kernel}}}_gemm", 0.02)  # one iteration: a token or a call
        time.sleep(0.008)
        return t

class Generator:
    def __init__(self):
        self.model = LMHead()

    @torch.no_grad()
    def generate(self, i, tokens):
        for t in range(tokens):
            self.model(i, t)
            time.sleep(0.001)      # the loop's own work between steps

launch("weights", 0.1)
g = Generator()
g.generate(0, {first})
for i in range(1, {later}):
    g.generate(i, 3)
"""


def collect(folder: Path, body: str, *options: str, out_name: str = "run.json.gz") -> RunFile:
    return collect_program(folder, HEADER + textwrap.dedent(body), *options, files=STAND_IN,
                           out_name=out_name)


def iterations(rf: RunFile, prefix: str = "i") -> dict[int, set[int]]:
    """cycle -> the iterations whose kernels it holds (kernels named ``{prefix}N_...``)."""
    run = rf.runs[0]
    out: dict[int, set[int]] = {}
    for name_id, cycle in zip(run.kernels.name_id, run.kernels.cycle, strict=True):
        head = rf.strings[int(name_id)].mangled.split("_")[0]
        if head.startswith(prefix) and head[len(prefix):].isdigit() and cycle >= 0:
            out.setdefault(int(cycle), set()).add(int(head[len(prefix):]))
    return out


def assert_found(rf: RunFile, spec: str) -> None:
    """Cut at ``spec`` while the program ran, with untraced cycles that hold no kernel, one
    iteration per traced cycle, the warning that names the function, and the cost line."""
    params = rf.workload.params
    assert params["cycles_from"] == f"function {spec} (found by sampling the Python stack)"
    assert params["found_function"] == spec
    run = rf.runs[0]
    assert set(run.cycles.label) == {f"function {spec}"}  # as --cycle-function's
    assert run.cycles.traced is not None
    untraced = set(np.flatnonzero(run.cycles.traced == 0).tolist())
    held = iterations(rf)
    assert untraced and not untraced & set(held), (untraced, held)
    assert all(len(v) == 1 for v in held.values()), held
    order = [next(iter(held[c])) for c in sorted(held)]
    assert order == sorted(set(order))
    assert len(held) + len(untraced) == run.cycles.index.size
    (warning,) = [w for w in rf.collection.warnings if w.startswith("cycles: each call of")]
    assert f"pin it with --cycle-function {spec}" in warning
    notes = self_overhead_notes(rf, "run.json.gz")
    assert any("perfdiff's tracing overhead on this run" in n for n in notes), notes


def test_script_loop_is_cut_at_each_call_of_its_step(tmp_path: Path) -> None:
    rf = collect(tmp_path, """
    def step(i):
        launch(f"i{i}_k", 0.05)
        time.sleep(0.01)
    launch("setup", 0.1)               # the first GPU use: learning starts here
    for i in range(300):
        step(i)
    """, "--untraced-every", "4")
    assert_found(rf, "__main__:step")
    # cut from the end of the first learning window (1-2 s in) to the end
    assert 20 <= rf.runs[0].cycles.index.size < 300


def test_generate_loop_is_cut_at_the_models_forward_not_module_call(tmp_path: Path) -> None:
    """One long ``generate`` (decorated like torch.no_grad) calling ``self.model(...)``
    through nn.Module's dispatch: the repeating call is the model's own ``forward``. It
    stays there when that call returns at the program's end: nothing around it repeats."""
    rf = collect(tmp_path, GENERATOR.format(kernel="t", first=350, later=1),
                 "--untraced-every", "4")
    assert_found(rf, "__main__:LMHead.forward")


def test_nested_loops_are_cut_at_the_outermost_repeating_call(tmp_path: Path) -> None:
    rf = collect(tmp_path, """
    def layer(e, j):
        launch(f"i{e}_layer{j}", 0.01)
        time.sleep(0.002)

    def epoch(e):
        for j in range(4):
            layer(e, j)
    launch("setup", 0.1)
    for e in range(300):
        epoch(e)
    """, "--untraced-every", "4")
    assert_found(rf, "__main__:epoch")


def test_optimizer_steps_that_come_later_win(tmp_path: Path) -> None:
    """An inference warm-up long enough for the function to be found, then training: the
    optimizer's cycles are the run's, and tracing came back on for them."""
    rf = collect(tmp_path, """
    def infer(i):
        launch(f"p{i}_k", 0.02)
        time.sleep(0.008)
    launch("setup", 0.1)
    for i in range(300):               # longer than a learning window (2 s at most)
        infer(i)
    opt = torch.optim.Optimizer()
    for i in range(20):
        opt.step()                      # cycle i starts here
        launch(f"i{i}_k", 0.05)
        time.sleep(0.002)
    """, "--untraced-every", "8")
    params = rf.workload.params
    assert params["cycles_from"].startswith("optimizer step")
    assert "found_function" not in params
    run = rf.runs[0]
    assert run.cycles.traced is not None
    untraced = np.flatnonzero(run.cycles.traced == 0).tolist()
    assert untraced == [8, 9, 16, 17]  # measured #7, #8, #15, #16 after the two warm-ups
    # the function was found and left some inference calls untraced before the first step
    names = [rf.strings[int(i)].mangled for i in run.kernels.name_id]
    assert 150 < sum(n.startswith("p") for n in names) < 300
    held = iterations(rf)
    assert set(held) == set(range(19)) - set(untraced)  # the 20th step's cycle never ends
    assert all(held[c] == {c} for c in held)


def test_no_repeating_call_keeps_the_detected_period_and_says_traced_time(
        tmp_path: Path) -> None:
    """Everything happens in the script's own loop (no Python call takes the iteration's
    time): no function is found, the detected period cuts the cycles after the run, and
    the report says cycle time is traced time. Every kernel is in the run file."""
    rf = collect(tmp_path, """
    launch("setup", 0.1)
    for i in range(500):
        launch("ln", 0.01); launch("gemm", 0.02); launch("act", 0.01)
        time.sleep(0.004)
    """)
    params = rf.workload.params
    assert params["cycles_from"].startswith("detected period")
    (warning,) = [w for w in rf.collection.warnings if "detected period" in w]
    assert "no repeating Python call found while it ran" in warning
    assert rf.runs[0].kernels.name_id.size == 1 + 3 * 500
    notes = self_overhead_notes(rf, "run.json.gz")
    assert any("cycle time is traced time" in n for n in notes), notes


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is Python 3.12+")
def test_a_function_called_through_an_alias_is_watched_on_its_code(tmp_path: Path) -> None:
    """3.12+: the found code object itself is watched (sys.monitoring), so a loop that calls
    the function through a name bound before it was found (which the 3.11 attribute wrapper
    never sees) is cut too."""
    rf = collect(tmp_path, """
    def step(i):
        launch(f"i{i}_k", 0.05)
        time.sleep(0.01)
    run = step
    launch("setup", 0.1)
    for i in range(300):
        run(i)
    """, "--untraced-every", "4")
    assert_found(rf, "__main__:step")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the attribute wrapper is Python 3.11's")
def test_a_function_called_through_an_alias_falls_back_and_says_why(tmp_path: Path) -> None:
    """3.11: the wrapper replaces the module's attribute, which a name bound earlier never
    sees: the function is found but its calls are not, so the run keeps the detected period
    and its warning says so, with how to pin the cycles instead."""
    rf = collect(tmp_path, """
    def step(i):
        launch("ln", 0.01); launch("gemm", 0.02)
        time.sleep(0.01)
    run = step
    launch("setup", 0.1)
    for i in range(300):
        run(i)
    """)
    assert rf.workload.params["cycles_from"].startswith("detected period")
    (warning,) = [w for w in rf.collection.warnings if "detected period" in w]
    assert "__main__:step was found but called 0 time(s) after that" in warning
    assert "a reference taken earlier is not watched on Python 3.11" in warning
    assert rf.runs[0].kernels.name_id.size == 1 + 2 * 300


STEP_MODULE = """
import time
from tests.support.fake_cupti import launch

def step(i):
    launch(f"i{i}_gemm", 0.05)
    time.sleep(0.01)

def block(i):
    for j in range(3):
        step(i)
"""


def test_a_found_function_compares_with_the_same_function_pinned_not_another(
        tmp_path: Path) -> None:
    """The label is the function's (as --cycle-function's): a run that found stepmod:step and
    one pinned to it hold the same cycles and are compared; a run that found another function
    (each call of ``block`` is three steps) is "cut differently", never compared as alike."""
    (tmp_path / "stepmod.py").write_text(STEP_MODULE)
    loop = "import stepmod\nlaunch('setup', 0.1)\nfor i in range({n}):\n    stepmod.{f}(i)\n"
    found = collect(tmp_path, loop.format(n=300, f="step"), out_name="found.json.gz")
    assert found.workload.params["found_function"] == "stepmod:step"
    pinned = collect(tmp_path, loop.format(n=300, f="step"), "--cycle-function", "stepmod:step",
                     out_name="pinned.json.gz")
    assert set(pinned.runs[0].cycles.label) == set(found.runs[0].cycles.label)
    other = collect(tmp_path, loop.format(n=100, f="block"), out_name="other.json.gz")
    assert other.workload.params["found_function"] == "stepmod:block"

    def compare(a: str, b: str) -> str:
        proc = subprocess.run([*PERFDIFF, "compare", a, b], cwd=tmp_path, capture_output=True,
                              text=True, timeout=180, check=False)
        assert proc.returncode in (0, 1), proc.stderr
        return proc.stdout

    assert "cut differently" not in compare("found.json.gz", "pinned.json.gz")
    assert "Cycles were cut differently" in compare("found.json.gz", "other.json.gz")


def test_a_long_first_call_moves_up_to_the_call_around_it(tmp_path: Path) -> None:
    """GPT-2 ``generate`` sdpa on the H200: the first ``generate`` call (5.4 s) held the
    first learning window, so ``forward`` was found under it, where a run whose first call
    was short found ``generate``. Once that first call returns, the call around the found one
    repeats: cycles move up to it (those cut at ``forward`` are left out), the run says so,
    and it compares with the run that found ``generate`` at once."""
    moved = collect(tmp_path, GENERATOR.format(kernel="i", first=300, later=130),
                    "--untraced-every", "4", out_name="moved.json.gz")
    spec = "__main__:Generator.generate"
    assert_found(moved, spec)
    (warning,) = [w for w in moved.collection.warnings if w.startswith("cycles: each call of")]
    assert "__main__:LMHead.forward was found first, inside the first call of" in warning
    held = iterations(moved)
    assert 0 not in set().union(*held.values())  # the first call's forward cycles: left out
    assert moved.runs[0].cycles.index.size >= 10
    direct = collect(tmp_path, GENERATOR.format(kernel="i", first=3, later=130),
                     "--untraced-every", "4", out_name="direct.json.gz")
    assert_found(direct, spec)
    assert "was found first" not in " ".join(direct.collection.warnings)
    proc = subprocess.run([*PERFDIFF, "compare", "moved.json.gz", "direct.json.gz"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          check=False)
    assert proc.returncode in (0, 1), proc.stderr
    assert "cut differently" not in proc.stdout
