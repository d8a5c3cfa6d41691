"""``--cycle-function MODULE:QUALNAME``: each outermost call of one function is one cycle.

Why an anchor function: programs nobody edited (HF ``Trainer``, ``model.generate`` loops,
serving engines) still call one function per iteration (``GenerationMixin.generate``,
``EngineCore.step``). LatencyPrism cuts its cycles the same way. Nested and recursive calls
(a ``generate`` that calls ``generate`` of a draft model, a recursive step) do not open new
cycles: only the call that raises the depth from 0 to 1 does, and the return that brings it
back to 0 ends it. The depth is one counter for the process (cycles cannot overlap), so a
call made in another thread while one is open is nested in it.

How the function is watched, so that every other function pays nothing:

- Python 3.12+: ``sys.monitoring`` events PY_START / PY_RETURN enabled *locally*, on that one
  code object (after unwrapping decorators: ``torch.no_grad()`` wraps ``generate`` in a
  wrapper whose code object every decorated function shares, so watching the wrapper would
  count every no-grad call). It sees every call however the caller got hold of the function
  (a bound method taken before perfdiff resolved it, ``super().generate``). An exception that
  leaves the function is seen through the PY_UNWIND event, which ``sys.monitoring`` allows
  only globally: its callback runs when any frame unwinds (exceptions only, rare in a loop)
  and returns at once for other code objects. Tool ids 3 and 4 only (the others are named
  for debuggers, coverage, profilers and optimizers); with both taken, the 3.11 way is used.
- Python 3.11: the attribute is replaced by a wrapper (one extra Python call per call of that
  function only). Callers that took a reference before the module finished importing keep
  the original; the warning at the end says when no call was seen.

The module is resolved when it is imported (now, or later through the post-import hook that
the NVTX wrappers use): sitecustomize runs before the program has imported anything.
A name that cannot be resolved, or a function never called, is a warning naming it; the
run then has no cycles from it, and every kernel is still in the run file (cycle -1).
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any

from perfdiff.collect.cycles.import_hooks import when_imported
from perfdiff.markers import CycleRecorder

_TOOL_NAME = "perfdiff-cycle-function"
_FREE_TOOL_IDS = (4, 3)  # sys.monitoring ids with no assigned role


class CycleFunctionError(ValueError):
    """The ``--cycle-function`` text is not ``MODULE:QUALNAME``."""


def parse_spec(spec: str) -> tuple[str, str]:
    """``"pkg.mod:Class.method"`` -> ``("pkg.mod", "Class.method")``; ValueError otherwise."""
    module, sep, qualname = spec.strip().partition(":")
    parts = qualname.split(".")
    if not sep or not module or not qualname or not all(p.isidentifier() for p in parts) or \
            not all(p.isidentifier() for p in module.split(".")):
        raise CycleFunctionError(
            f"--cycle-function expects MODULE:QUALNAME (e.g. "
            f"transformers.generation.utils:GenerationMixin.generate), got {spec!r}")
    return module, qualname


def cycle_label(spec: str) -> str:
    """The cycles' label (and how the report names them): ``function MODULE:QUALNAME``."""
    return f"function {spec.strip()}"


class AnchorFunction:
    """Opens a cycle at each outermost call of one function and ends it at its return."""

    def __init__(self, recorder: CycleRecorder, spec: str) -> None:
        self.recorder = recorder
        self.spec = spec.strip()
        self.module_name, self.qualname = parse_spec(spec)
        self.label = cycle_label(spec)
        self.depth = 0
        self.calls = 0  # outermost calls seen
        self.resolved: str | None = None  # "file:line" of the watched code, once resolved
        self.problem: str | None = None  # why it could not be resolved or watched
        self.code: CodeType | None = None
        self._tool: int | None = None
        self._lock = threading.Lock()
        self._warned = False
        # no more cycles from this anchor: a found function that was not the program's loop
        # (found_function.py moves up to the call around it); on 3.11 its wrapper stays put
        self.retired = False

    # ------------------------------------------------------------------ events

    def enter(self) -> None:
        with self._lock:
            if self.retired:
                return
            self.depth += 1
            outermost = self.depth == 1
        if outermost:
            self.calls += 1
            self._guarded(self.recorder.begin_cycle, self.label, False)

    def leave(self, *, completed: bool = True) -> None:
        with self._lock:
            if self.depth == 0 or self.retired:
                return
            self.depth -= 1
            outermost = self.depth == 0
        if outermost:
            self._guarded(lambda: self.recorder.end_cycle(completed=completed))

    def _guarded(self, action: Callable[..., None], *args: Any) -> None:
        """A boundary that fails is reported once, never raised into the program."""
        try:
            action(*args)
        except Exception as exc:
            if not self._warned:
                self._warned = True
                print(f"perfdiff: warning: cycle boundary not recorded ({exc})",
                      file=sys.stderr)

    # ------------------------------------------------------------------ install

    def install(self) -> None:
        """Watch the function now if its module is imported, else right after its import."""
        when_imported({self.module_name: self.attach})

    def attach(self, module: ModuleType) -> None:
        """Resolve QUALNAME in ``module`` and start watching it (errors become ``problem``)."""
        if self.code is not None or self._tool is not None:
            return
        try:
            owner, attr, raw = _resolve(module, self.qualname)
        except AttributeError as exc:
            self.problem = f"{self.module_name} has no {exc.args[0] if exc.args else '?'}"
            return
        func = _function_of(raw)
        if func is None:
            self.problem = (f"{self.spec} is a {type(raw).__name__}, not a Python function "
                            "(a C function or a class cannot be watched; name a method)")
            return
        code = inspect.unwrap(func).__code__
        self.code = code
        self.resolved = f"{code.co_filename}:{code.co_firstlineno}"
        if not (hasattr(sys, "monitoring") and self._monitor(code)):
            setattr(owner, attr, _wrapped(raw, self))

    def attach_code(self, code: CodeType) -> bool:
        """Watch ``code``, found while the program runs (found_function.py) rather than named:
        on 3.12+ through ``sys.monitoring`` on that very code object; else the attribute
        wrapper at MODULE:QUALNAME, which must resolve to a function whose code (decorators
        unwrapped) is ``code``, or callers would keep calling an unwatched one. False, with
        ``problem`` saying why, when it cannot be watched."""
        if self.code is not None or self._tool is not None:
            return True
        self.resolved = f"{code.co_filename}:{code.co_firstlineno}"
        self.code = code  # before the events are on: the unwind callback compares it
        if hasattr(sys, "monitoring") and self._monitor(code):
            return True
        self.code = None
        module = sys.modules.get(self.module_name)
        try:
            if module is None:
                raise AttributeError(self.module_name)
            owner, attr, raw = _resolve(module, self.qualname)
        except AttributeError:
            self.problem = f"{self.spec} does not name it in its module"
            return False
        func = _function_of(raw)
        if func is None or inspect.unwrap(func).__code__ is not code:
            self.problem = f"{self.spec} names another object than the function called"
            return False
        self.code = code
        setattr(owner, attr, _wrapped(raw, self))
        return True

    def _monitor(self, code: CodeType) -> bool:
        """Watch ``code`` through ``sys.monitoring``; False when no tool id is free.

        Only ids 3 and 4 are tried: 0, 1, 2 and 5 are named for debuggers, coverage,
        profilers and optimizers, and a tool that later asks for its own id must get it.
        """
        mon: Any = getattr(sys, "monitoring")  # noqa: B009 (3.12+; mypy checks for 3.11)
        tool = next((t for t in _FREE_TOOL_IDS if mon.get_tool(t) is None), None)
        if tool is None:
            return False
        mon.use_tool_id(tool, _TOOL_NAME)
        self._tool = tool
        events = mon.events
        mon.register_callback(tool, events.PY_START, self._on_start)
        mon.register_callback(tool, events.PY_RETURN, self._on_return)
        mon.register_callback(tool, events.PY_UNWIND, self._on_unwind)
        mon.set_local_events(tool, code, events.PY_START | events.PY_RETURN)
        mon.set_events(tool, events.PY_UNWIND)
        return True

    def _on_start(self, code: CodeType, offset: int) -> None:
        self.enter()

    def _on_return(self, code: CodeType, offset: int, retval: object) -> None:
        self.leave()

    def _on_unwind(self, code: CodeType, offset: int, exc: BaseException) -> None:
        if code is self.code:
            self.leave(completed=False)

    def retire(self) -> None:
        """No cycle from this anchor again, from now on (another thread may call it): its
        events stop on 3.12, and on 3.11 its wrapper, which stays in place, does nothing."""
        with self._lock:
            self.retired = True
            self.depth = 0
        self.uninstall()

    def uninstall(self) -> None:
        """Stop watching (at exit, before the run file is built)."""
        tool, self._tool = self._tool, None
        if tool is None:
            return
        mon: Any = getattr(sys, "monitoring")  # noqa: B009 (3.12+; mypy checks for 3.11)
        mon.set_events(tool, 0)
        if self.code is not None:
            mon.set_local_events(tool, self.code, 0)
        for event in (mon.events.PY_START, mon.events.PY_RETURN, mon.events.PY_UNWIND):
            mon.register_callback(tool, event, None)
        mon.free_tool_id(tool)

    def warning(self, pid: int) -> str | None:
        """What to tell the user when this produced no cycle (None when it did)."""
        if self.calls:
            return None
        if self.problem is not None:
            why = self.problem
        elif self.resolved is None:
            why = f"module {self.module_name} was never imported"
        else:
            why = f"it was never called (watched {self.resolved})"
        if self.module_name == "__main__":
            why += (" (a function of the script itself is defined after perfdiff looks for "
                    "it: name a module the script imports, or run it as python -c 'import "
                    "script; script.main()' and name script:FUNCTION)")
        return (f"--cycle-function {self.spec} marked no cycles in pid {pid}: {why}; check "
                "the name (MODULE:QUALNAME of the function called once per iteration), or "
                "use --cycle-range or --cycle-ms; every kernel is kept, outside any cycle")


def _resolve(module: ModuleType, qualname: str) -> tuple[Any, str, Any]:
    """(owner, attribute name, raw attribute): a class attribute as stored in ``__dict__``.

    AttributeError carries the part of QUALNAME that was not found (``Engine.nope``).
    """
    owner: Any = module
    parts = qualname.split(".")
    raw: Any = module
    for depth, part in enumerate(parts):
        owner = raw
        raw = _lookup(owner, part)
        if raw is _MISSING:
            raise AttributeError(".".join(parts[:depth + 1]))
    return owner, parts[-1], raw


_MISSING = object()


def _lookup(owner: Any, name: str) -> Any:
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
    return getattr(owner, name, _MISSING)


def _function_of(raw: Any) -> Any:
    """The Python function behind a function, method, staticmethod or classmethod."""
    inner = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    inner = getattr(inner, "__func__", inner)  # a bound method (module-level alias)
    if inspect.isfunction(inner) and hasattr(inspect.unwrap(inner), "__code__"):
        return inner
    return None


def _wrapped(raw: Any, anchor: AnchorFunction) -> Any:
    """The 3.11 fallback: ``raw`` wrapped so that each call enters and leaves the anchor."""
    func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw

    @functools.wraps(func)
    def anchored(*args: Any, **kwargs: Any) -> Any:
        anchor.enter()
        try:
            result = func(*args, **kwargs)
        except BaseException:
            anchor.leave(completed=False)
            raise
        anchor.leave()
        return result

    if isinstance(raw, staticmethod):
        return staticmethod(anchored)
    if isinstance(raw, classmethod):
        return classmethod(anchored)
    return anchored


__all__ = ["AnchorFunction", "CycleFunctionError", "cycle_label", "parse_spec"]
