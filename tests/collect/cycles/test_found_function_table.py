"""The found function's parts without a collector: the dispatch-wrapper table against the real
names (trimmed copies of torch's files under fixtures/dispatch-wrappers/, this interpreter's
``contextlib``), and :class:`StackWindow` on real stacks sampled from a real thread."""

from __future__ import annotations

import ast
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import CodeType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.collect.cycles.found_function import (
    DISPATCH_WRAPPERS,
    MIN_CALLS,
    MIN_SHARE,
    Found,
    StackWindow,
    is_wrapper,
    main_stack,
)

COPIES = Path(__file__).resolve().parents[3] / "fixtures" / "dispatch-wrappers"


def _copy_of(suffix: str) -> Path | None:
    path = COPIES / (suffix + ".txt")
    return path if path.is_file() else None


def _codes(code: CodeType) -> list[CodeType]:
    """``code`` and every code object nested in it (methods, closures)."""
    out = [code]
    for const in code.co_consts:
        if isinstance(const, CodeType):
            out.extend(_codes(const))
    return out


@pytest.mark.parametrize("wrapper", DISPATCH_WRAPPERS, ids=lambda w: f"{w.path_suffix}:{w.name}")
def test_each_wrapper_is_a_real_function_of_its_real_file(wrapper: object) -> None:
    """Each entry names a function defined in the file its suffix names: torch's from the
    trimmed copies (compiled under the installed path they would have), the stdlib's from
    this interpreter; and exactly those code objects are wrappers."""
    suffix, name = wrapper.path_suffix, wrapper.name  # type: ignore[attr-defined]
    copy = _copy_of(suffix)
    if copy is not None:
        source = copy.read_text()
        filename = f"/usr/lib/python3/site-packages/{suffix}"
    else:
        assert suffix == "contextlib.py", f"no copy of {suffix} under {COPIES}"
        filename = str(contextlib.__file__)
        source = Path(filename).read_text()
    defined = {node.name for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.FunctionDef)}
    assert name in defined
    named = [c for c in _codes(compile(source, filename, "exec")) if c.co_name == name]
    assert named and all(is_wrapper(c) for c in named)


def test_contextdecorator_inner_of_this_interpreter_is_skipped() -> None:
    @contextlib.contextmanager
    def quiet():  # type: ignore[no-untyped-def]
        yield

    @quiet()
    def user_step() -> None:
        pass

    assert is_wrapper(user_step.__wrapped__.__code__) is False  # type: ignore[attr-defined]
    assert is_wrapper(user_step.__code__)  # ContextDecorator's ``inner``


def test_a_models_own_forward_is_not_a_wrapper() -> None:
    source = "class GPT2LMHeadModel:\n    def forward(self, x):\n        return x\n"
    code = compile(source, "/site-packages/transformers/models/gpt2/modeling_gpt2.py", "exec")
    assert not any(is_wrapper(c) for c in _codes(code))
    # the same name in another file is not torch's
    other = compile("def _call_impl():\n    pass\n", "/work/my_module.py", "exec")
    assert not any(is_wrapper(c) for c in _codes(other))


# ------------------------------------------------------------------ StackWindow on real stacks


def _sample_thread(target: object, samples: int, interval_s: float) -> StackWindow:
    """Run ``target`` in a thread and sample that thread's stack into one window."""
    window = StackWindow()
    started = threading.Event()
    thread = threading.Thread(target=lambda: (started.set(), target()))  # type: ignore[operator]
    thread.start()
    started.wait()
    while len(window) < samples and thread.is_alive():
        stack = main_stack(thread.ident or 0)
        if stack:
            window.add(stack)
        time.sleep(interval_s)
    thread.join()
    window.release()
    return window


def step(i: int) -> None:
    time.sleep(0.004)


def script_loop() -> None:
    for i in range(150):
        step(i)


def test_a_loop_of_calls_finds_the_called_function() -> None:
    found = _sample_thread(script_loop, 60, 0.003).result()
    assert isinstance(found, Found), found
    assert found.code is step.__code__
    assert found.spec == f"{__name__}:step"
    assert found.calls >= MIN_CALLS and found.share > 0.8


def busy_alone() -> None:
    end = time.monotonic() + 0.4
    while time.monotonic() < end:
        time.sleep(0.002)


def test_a_loop_with_no_call_finds_nothing() -> None:
    why = _sample_thread(busy_alone, 60, 0.003).result()
    assert isinstance(why, str) and "busy_alone" in why, why


def once() -> None:
    time.sleep(0.3)


def test_a_single_long_call_is_not_a_repeating_one() -> None:
    def program() -> None:
        once()

    why = _sample_thread(program, 40, 0.003).result()
    assert isinstance(why, str), why


# ------------------------------------------------------------------ StackWindow, property


class _Frame:
    """A stand-in frame: what StackWindow reads (``f_code``, ``f_globals``), compared by
    identity like a real one."""

    def __init__(self, code: CodeType) -> None:
        self.f_code = code
        self.f_globals = {"__name__": "prog"}


def _function(name: str) -> CodeType:
    return compile(f"def {name}():\n    pass\n", "/work/prog.py", "exec").co_consts[0]


CHILD_CODES = [_function(n) for n in ("step", "log", "load")]
ROOT = _Frame(_function("main"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, 0, 1, 2]), st.integers(1, 6)),
                min_size=1, max_size=40))
def test_window_counts_calls_and_share_as_laid_out(runs: list[tuple[int | None, int]]) -> None:
    """A window made of runs of samples, each run one call of a child function (a new frame
    object) or the loop frame alone: the result is, of the children called MIN_CALLS times
    or more, the most frequent one's code with one call per run of it, or a reason when none
    is in MIN_SHARE of the samples."""
    window = StackWindow()
    for child, length in runs:
        stack = (ROOT,) if child is None else (ROOT, _Frame(CHILD_CODES[child]))
        for _ in range(length):
            window.add(stack)  # type: ignore[arg-type]
    window.release()
    total = sum(length for _, length in runs)
    inside = {c: sum(n for k, n in runs if k == c) for c in range(3)}
    calls = {c: sum(1 for k, _ in runs if k == c) for c in range(3)}
    outcome = window.result()
    if total < MIN_CALLS or not any(inside.values()):
        assert isinstance(outcome, str)
        return
    repeating = [c for c in range(3) if calls[c] >= MIN_CALLS and inside[c]]
    best = max((inside[c] for c in repeating), default=0)
    if isinstance(outcome, Found):
        chosen = CHILD_CODES.index(outcome.code)
        assert chosen in repeating and inside[chosen] == best
        assert outcome.calls == calls[chosen]
        assert outcome.share == round(best / total, 3) and best / total >= MIN_SHARE
        assert outcome.spec == f"prog:{CHILD_CODES[chosen].co_name}"
    else:
        assert best / total < MIN_SHARE, outcome  # includes: no repeating call at all


def numbers() -> Iterator[int]:
    for i in range(200):
        time.sleep(0.003)
        yield i


def consume() -> None:
    for _ in numbers():
        pass


def test_a_generator_resumed_again_and_again_is_not_a_repeating_call() -> None:
    """Each item of a generator puts its frame back on the stack, which looks like a call
    of it each time; watching it would cut nothing like an iteration."""
    why = _sample_thread(consume, 60, 0.003).result()
    assert isinstance(why, str), why
