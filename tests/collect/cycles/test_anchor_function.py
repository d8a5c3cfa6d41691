"""``AnchorFunction`` in-process: outermost calls only, decorators unwrapped, exceptions.

Runs the watching this Python has: ``sys.monitoring`` on 3.12+ (the GPU machine), the
attribute wrapper on 3.11 (this container); the end-to-end path is in test_found_cycles.py.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

import pytest

from perfdiff.collect.cycles.anchor_function import AnchorFunction, CycleFunctionError, parse_spec


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def begin_cycle(self, label: str, warmup: bool) -> None:
        self.events.append(("begin", label))

    def end_cycle(self, *, completed: bool = True) -> None:
        self.events.append(("end", completed))


def _decorated(func: Any) -> Any:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


def make_module() -> types.ModuleType:
    module = types.ModuleType("anchor_test_module")

    class Engine:
        @_decorated
        def step(self, depth: int = 0) -> int:
            return self.step(depth + 1) if depth < 3 else depth

        @_decorated
        def other(self) -> int:  # shares the decorator's wrapper code with step
            return 0

        @staticmethod
        def static(x: int) -> int:
            return x

    def fail() -> None:
        raise ValueError("boom")

    module.Engine = Engine  # type: ignore[attr-defined]
    module.fail = fail  # type: ignore[attr-defined]
    return module


def watch(spec: str, module: types.ModuleType) -> tuple[AnchorFunction, Recorder]:
    recorder = Recorder()
    anchor = AnchorFunction(recorder, spec)
    anchor.attach(module)
    return anchor, recorder


def test_recursive_calls_open_one_cycle_and_other_functions_none() -> None:
    module = make_module()
    anchor, recorder = watch("anchor_test_module:Engine.step", module)
    try:
        engine = module.Engine()
        for _ in range(3):
            engine.step()
            engine.other()
    finally:
        anchor.uninstall()
    label = "function anchor_test_module:Engine.step"
    assert recorder.events == [("begin", label), ("end", True)] * 3
    assert anchor.calls == 3 and anchor.depth == 0


def test_a_call_that_raises_is_cut_short_and_the_next_is_outermost() -> None:
    module = make_module()
    anchor, recorder = watch("anchor_test_module:fail", module)
    try:
        for _ in range(2):
            with pytest.raises(ValueError):
                module.fail()
    finally:
        anchor.uninstall()
    assert recorder.events == [("begin", "function anchor_test_module:fail"), ("end", False)] * 2
    assert anchor.depth == 0


def test_static_method() -> None:
    module = make_module()
    anchor, recorder = watch("anchor_test_module:Engine.static", module)
    try:
        assert module.Engine.static(4) == 4
    finally:
        anchor.uninstall()
    assert [e for e, _ in recorder.events] == ["begin", "end"]


def test_a_retired_anchor_opens_and_ends_no_cycle_though_its_wrapper_stays() -> None:
    """found_function.py moves up from a function that was not the program's loop: on 3.11
    the wrapper stays on the class, so it must do nothing once retired (3.12: no events)."""
    module = make_module()
    anchor, recorder = watch("anchor_test_module:Engine.step", module)
    engine = module.Engine()
    engine.step()
    anchor.retire()
    engine.step()
    assert recorder.events == [("begin", "function anchor_test_module:Engine.step"),
                               ("end", True)]
    assert anchor.retired and anchor.depth == 0


def test_unresolvable_names_are_problems_not_errors() -> None:
    module = make_module()
    anchor, _ = watch("anchor_test_module:Engine.nope", module)
    assert anchor.problem == "anchor_test_module has no Engine.nope"
    anchor, _ = watch("anchor_test_module:Engine", module)
    assert anchor.problem is not None and "not a Python function" in anchor.problem


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring is Python 3.12+")
def test_taken_tool_ids_fall_back_to_the_wrapper() -> None:
    mon: Any = getattr(sys, "monitoring")  # noqa: B009
    free = [t for t in (3, 4) if mon.get_tool(t) is None]
    for tool in free:
        mon.use_tool_id(tool, "someone else")
    try:
        module = make_module()
        _anchor, recorder = watch("anchor_test_module:Engine.step", module)
        module.Engine().step()
        assert [e for e, _ in recorder.events] == ["begin", "end"]
    finally:
        for tool in free:
            mon.free_tool_id(tool)


@pytest.mark.parametrize("spec", ["nocolon", "a:", ":b", "a:b c", "a-b:c", "a:b..c"])
def test_spec_must_be_module_colon_qualname(spec: str) -> None:
    with pytest.raises(CycleFunctionError, match="MODULE:QUALNAME"):
        parse_spec(spec)
    assert parse_spec(" pkg.mod:Class.method ") == ("pkg.mod", "Class.method")
