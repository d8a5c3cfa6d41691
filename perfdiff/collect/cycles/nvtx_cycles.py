"""Cycle boundaries from NVTX ranges (``--cycle-range NAME``), captured in-process.

Why in-process wrappers rather than CUPTI's NVTX records: CUPTI sees NVTX only when libnvtx
loads it as its *injection library*, which happens once, at the process's first NVTX call, and
only if ``NVTX_INJECTION64_PATH`` was set at that moment; then CUPTI reports ranges as MARKER
activity records, whose host timestamps still have to be matched to launches. Capturing the
calls where the program makes them is simpler and exact: the cycle starts and ends at the
very instant the program pushes and pops its range, on the trace clock, in the thread that
made the call, whether or not any NVTX library or injection is present. (What was measured on
the GPU about CUPTI's own NVTX records is in docs/howto/user-programs.md.)

Wrapped, once the module is imported (by the program, at any time): ``nvtx.push_range`` /
``pop_range``, ``nvtx.start_range`` / ``end_range``, ``nvtx.annotate`` (context manager and
decorator), and ``torch.cuda.nvtx.range_push`` / ``range_pop`` / ``range_start`` /
``range_end`` (``torch.cuda.nvtx.range`` calls push/pop through the module, so it is covered).
Only ranges whose message equals NAME open and close cycles; others nest freely inside.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Protocol

from perfdiff.collect.cycles.import_hooks import when_imported


class StampedRecorder(Protocol):
    """A :class:`perfdiff.markers.CycleRecorder` that may take the start stamp from its
    caller: ``at``, read the moment the range was pushed, which it uses only where it has no
    work of its own to do before its stamp (``CycleLog``'s express lane)."""

    def begin_cycle(self, label: str, warmup: bool, at: int | None = None) -> None: ...

    def end_cycle(self, *, completed: bool = True) -> None: ...


class _Ranges(threading.local):
    """Each thread's open ranges (True: a cycle's), an attribute read away: a method call that
    looked the stack up cost two calls a boundary, in the program's step."""

    def __init__(self) -> None:
        self.stack: list[bool] = []


class NvtxCycles:
    """Turns pushes and pops of the range named ``name`` into cycle boundaries."""

    def __init__(self, recorder: StampedRecorder, name: str,
                 clock_ns: Callable[[], int] | None = None) -> None:
        self.recorder = recorder
        self.name = name
        # the recorder's own clock, read as soon as a push is known to open a cycle: in an
        # untraced cycle of the express lane, the stack, the recorder's lock and the log's
        # call then lie inside the cycle, not in the program's step before it (bench/README,
        # "NVTX boundary": ~4 of a 0.24 ms CUDA-graph step's ~6 us outside its cycle)
        self.clock_ns = clock_ns
        self.label = f"NVTX range {name}"  # the cycles' label: how the report names them
        self._local = _Ranges()
        self.ranges_seen = 0

    def push(self, message: object) -> None:
        # a str compared directly: this runs before the cycle's start is stamped, inside the
        # program's step (bench/nvtx_boundary)
        is_cycle = (message == self.name if type(message) is str
                    else _message_text(message) == self.name)
        if is_cycle:
            self.push_cycle(self.clock_ns() if self.clock_ns is not None else None)
        else:
            self._local.stack.append(False)

    def push_cycle(self, at: int | None) -> None:
        """A push of the cycle's range, its start read at ``at`` on the recorder's clock
        (None: the recorder stamps it)."""
        self._local.stack.append(True)
        self.ranges_seen += 1
        try:
            self.recorder.begin_cycle(self.label, False, at)
        except Exception as exc:
            self._warn(exc)

    def pop(self) -> None:
        stack = self._local.stack
        if stack and stack.pop():
            try:
                self.recorder.end_cycle()
            except Exception as exc:
                self._warn(exc)

    def _guarded(self, action: Callable[..., None], *args: Any) -> None:
        """Record a boundary; a failure here is reported once, never raised into the program."""
        try:
            action(*args)
        except Exception as exc:
            self._warn(exc)

    def _warn(self, exc: Exception) -> None:
        if not getattr(self, "_warned", False):
            self._warned = True
            print(f"perfdiff: warning: cycle boundary not recorded ({exc})", file=sys.stderr)

    def start(self, message: object) -> bool:
        """A non-nested range started; returns whether it opened a cycle."""
        is_cycle = _message_text(message) == self.name
        if is_cycle:
            at = self.clock_ns() if self.clock_ns is not None else None
            self.ranges_seen += 1
            self._guarded(self.recorder.begin_cycle, self.label, False, at)
        return is_cycle

    def end(self, is_cycle: bool) -> None:
        if is_cycle:
            self._guarded(self.recorder.end_cycle)

    # ------------------------------------------------------------------ wrapping modules

    def patch_nvtx(self, module: ModuleType) -> None:
        """Wrap the ``nvtx`` package's range functions and ``annotate``."""
        cycles = self
        _wrap_push(module, "push_range", self, "message")
        _wrap_pop(module, "pop_range", self)
        _wrap_start_end(module, "start_range", "end_range", self)
        original = getattr(module, "annotate", None)
        if isinstance(original, type) and not getattr(original, "_perfdiff_wrapped", False):

            class annotate(original):  # type: ignore[misc, valid-type]
                _perfdiff_wrapped = True

                def __init__(self, *args: Any, **kwargs: Any) -> None:
                    super().__init__(*args, **kwargs)
                    self._perfdiff_message = _arg(args, kwargs, "message")

                def __enter__(self) -> Any:
                    result = super().__enter__()
                    cycles.push(self._perfdiff_message)
                    return result

                def __exit__(self, *exc: object) -> Any:
                    cycles.pop()
                    return super().__exit__(*exc)

                def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
                    # The decorator form pushes through the C library, not __enter__.
                    inner = super().__call__(func)
                    message = self._perfdiff_message or getattr(func, "__name__", None)

                    @functools.wraps(func)
                    def ranged(*args: Any, **kwargs: Any) -> Any:
                        cycles.push(message)
                        try:
                            return inner(*args, **kwargs)
                        finally:
                            cycles.pop()

                    return ranged

            annotate.__name__ = annotate.__qualname__ = original.__name__
            module.annotate = annotate  # type: ignore[attr-defined]

    def patch_torch_nvtx(self, module: ModuleType) -> None:
        """Wrap ``torch.cuda.nvtx``'s push/pop and start/end."""
        _wrap_push(module, "range_push", self, "msg")
        _wrap_pop(module, "range_pop", self)
        _wrap_start_end(module, "range_start", "range_end", self)

    def install(self) -> None:
        """Patch the modules now if imported, else as soon as the program imports them."""
        when_imported({"nvtx": self.patch_nvtx, "torch.cuda.nvtx": self.patch_torch_nvtx})


def _message_text(message: object) -> str | None:
    if message is None:
        return None
    return str(getattr(message, "message", message))


def _arg(args: Sequence[Any], kwargs: dict[str, Any], name: str) -> Any:
    if args:
        return args[0]
    return kwargs.get(name)


def _replace(module: ModuleType, attr: str,
             make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """``module.attr`` replaced by ``make(original)``, once: a function wrapped already (the
    module imported again, or patched by another log) is left as it is."""
    original = getattr(module, attr, None)
    if original is None or getattr(original, "_perfdiff_wrapped", False):
        return
    wrapper = functools.wraps(original)(make(original))
    wrapper._perfdiff_wrapped = True  # type: ignore[attr-defined]
    setattr(module, attr, wrapper)


def _wrap_push(module: ModuleType, attr: str, cycles: NvtxCycles, keyword: str) -> None:
    """Wrap a push: the cycle's boundary first, then the library's own push.

    Why one flat function per wrapper, the message read inline: it runs in the program's step
    before the cycle's start is stamped, so every call in it is time the program's own timer
    holds and no cycle does (a 0.24 ms CUDA-graph step read 3-6 % short of its timer, H100,
    2026-12-07; bench/nvtx_boundary)."""
    push, push_cycle, name, clock = cycles.push, cycles.push_cycle, cycles.name, cycles.clock_ns

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            message = args[0] if args else kwargs.get(keyword)
            if clock is not None and type(message) is str and message == name:
                push_cycle(clock())  # the start read first, the rest inside the cycle
            else:
                push(message)
            return original(*args, **kwargs)

        return wrapper

    _replace(module, attr, make)


def _wrap_pop(module: ModuleType, attr: str, cycles: NvtxCycles) -> None:
    """Wrap a pop: the library's own pop, then the cycle's boundary (``_wrap_push``: why
    flat)."""
    pop = cycles.pop

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            pop()
            return result

        return wrapper

    _replace(module, attr, make)


class _RangeToken:
    """What a wrapped ``start_range`` returns: the library's own id (which may be None when
    NVTX is disabled) and whether the range opened a cycle; ``end_range`` unwraps it."""

    __slots__ = ("inner", "is_cycle")

    def __init__(self, inner: Any, is_cycle: bool) -> None:
        self.inner = inner
        self.is_cycle = is_cycle


def _wrap_start_end(module: ModuleType, start: str, end: str, cycles: NvtxCycles) -> None:
    original_start = getattr(module, start, None)
    original_end = getattr(module, end, None)
    if original_start is None or original_end is None:
        return
    if getattr(original_start, "_perfdiff_wrapped", False):
        return

    @functools.wraps(original_start)
    def start_wrapper(*args: Any, **kwargs: Any) -> Any:
        is_cycle = cycles.start(_arg(args, kwargs, "msg" if "msg" in kwargs else "message"))
        return _RangeToken(original_start(*args, **kwargs), is_cycle)

    @functools.wraps(original_end)
    def end_wrapper(range_id: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(range_id, _RangeToken):
            cycles.end(range_id.is_cycle)
            range_id = range_id.inner
        return original_end(range_id, *args, **kwargs)

    for wrapper in (start_wrapper, end_wrapper):
        wrapper._perfdiff_wrapped = True  # type: ignore[attr-defined]
    setattr(module, start, start_wrapper)
    setattr(module, end, end_wrapper)


__all__ = ["NvtxCycles", "when_imported"]
