"""Cycles of a program that marks none and steps nothing: its outermost repeating Python call,
found by sampling the main thread's stack while it runs.

Why: a program with no optimizer step and no ``prof.step()`` (an HF ``generate`` loop, an
inference server's loop) had its cycles cut only after the run, at the detected period of its
launch sequence. Such cycles cannot be left untraced while the program runs, so their time was
traced time (GPT-2 ``generate``: 1.3-1.6 x bare, issue 28). The program still calls one Python
function per iteration (``generate``, ``forward``, ``step``): found while it runs, its calls
can be cut like ``--cycle-function``'s (anchor_function.py), and the untraced schedule applies.

How, once the program has started using the GPU (its set-up is no loop) and while no optimizer
or profiler has stepped (those win, found_cycles.py): a short-lived daemon thread reads the
main thread's stack (``sys._current_frames``) every :data:`SAMPLE_INTERVAL_S`, for windows of
at most :data:`WINDOW_SAMPLES` samples or :data:`WINDOW_S` seconds, at most
:data:`MAX_WINDOWS` of them. In one window (:class:`StackWindow`):

- the **loop frame** is the deepest frame that is the same frame object in every sample (the
  script's ``<module>`` or ``main``, ``GenerationMixin._sample``);
- below it, dispatch wrappers shared by many functions (:data:`DISPATCH_WRAPPERS`, a data
  table: ``nn.Module.__call__``'s ``_wrapped_call_impl``/``_call_impl``, ``torch.no_grad()``'s
  ``decorate_context``) are skipped, so the candidate of a sample is the first frame of the
  program's own function (``GPT2LMHeadModel.forward``, not ``Module.__call__``);
- the function is, of the candidate codes called :data:`MIN_CALLS` times or more (different
  frames) in the window, the one found in most samples, if that is at least
  :data:`MIN_SHARE` of them.

The first window that finds one ends the learning; its code object is watched
(:meth:`AnchorFunction.attach_code`: ``sys.monitoring`` on that code on 3.12, the attribute
wrapper at ``MODULE:QUALNAME`` on 3.11, which must resolve to that very code). Each outermost
call is then one cycle of ``FoundCycles.function_log``, labelled as ``--cycle-function``'s
(``function MODULE:QUALNAME``: a cycle is the same call however the function was named, and
two runs that found different functions are not compared as if their cycles were alike; the
run file's ``cycles_from`` and warning say it was found). Where no
window finds one, or the code cannot be watched, the run keeps the detected period after the
run (the report then says that cycle time is traced time), with the reason in its warning.

Which level is found must not depend on where the first window lands. A window that falls
inside one long call that is not an iteration (GPT-2 ``generate`` sdpa, H200 2026-11-28: a
5.4 s first ``generate``, whose ``_sample`` frame was the window's loop frame) finds the call
under it (``forward``), where a window after it finds ``generate``. So, for
:data:`CONFIRM_S` after a function is found, the thread checks every
:data:`CONFIRM_INTERVAL_S` that the window's loop frame is still on the stack. If it returns,
:data:`RELEARN_WINDOWS` more windows look for a repeating call among the codes that were
around the found one; found, cycles move up to it (:meth:`FoundCycles.move_function`: those
cut so far are left out of the table, the untraced switch starts a fresh schedule, the warning
names both functions), at most :data:`MAX_MOVES` times. The loop frame of a program's own loop
returning at its end changes nothing (no call around it repeats).

Cost. Learning (at most ``MAX_WINDOWS * WINDOW_S`` seconds after the first GPU use, before
any cycle is cut): each sample holds the interpreter lock for ``sys._current_frames()``, the
walk of the main thread's stack and the window's bookkeeping, 20 / 31 / 74 us median on 20 /
100 / 300-frame stacks with the main thread parked, 45 / 81 / 138 us with it busy in Python
(lock hand-overs included; 2-core shared host, bench/found_function/results/sample_cost.txt),
every 5 ms at most. Between consecutive samples the previous sample's frames are held (so that
an equal frame is never a new one at a reused address): a call that returned in between keeps
its locals up to one interval longer. Confirming (:data:`CONFIRM_S`, inside measured cycles):
one walk of the stack every 50 ms, the loop frame held meanwhile (a frame that returns is let
go at the next check); only where that frame returns, up to :data:`RELEARN_WINDOWS` windows
of samples as above, inside cycles that are then left out if the level moves. Nothing runs
per call until the function is found; then one ``sys.monitoring`` event (3.12) or one wrapper
call (3.11) per call of that function only.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, FrameType

from perfdiff.collect.cycles.anchor_function import AnchorFunction, CycleFunctionError, parse_spec
from perfdiff.collect.cycles.found_cycles import MIN_FOUND_CYCLES, FoundCycles

# A sample every 5 ms: a generate step (~10-20 ms), a training step (~20 ms) or a script
# iteration is seen several times per call, at a cost of about 0.6-1.6 % of the main thread
# while sampling (31-81 us per sample on a 100-frame stack: module docstring).
SAMPLE_INTERVAL_S = 0.005
# A window ends after 200 samples or 2 s, whichever first: long enough to see MIN_CALLS
# calls of a 250 ms ``generate``, short enough that a window starting in the program's
# set-up (weights moved to the GPU, a tokenizer loaded) is followed by one inside its loop.
WINDOW_SAMPLES = 200
WINDOW_S = 2.0
MAX_WINDOWS = 8  # then give up: learning ends at most ~16 s after the first GPU use
MIN_CALLS = 3  # different calls of the function seen in one window: a repeating call
MIN_SHARE = 0.5  # of a window's samples inside the function: the iteration's main call
READY_POLL_S = 0.05  # how often the thread asks whether the program has used the GPU
# After a function is found: how long, and how often, the thread checks that the window's loop
# frame is still on the stack (one walk of the stack, 5-20 us, every 50 ms: 0.01-0.04 % of the
# program, inside measured cycles), and how many times it may move up to the call around it.
CONFIRM_S = 12.0
CONFIRM_INTERVAL_S = 0.05
RELEARN_WINDOWS = 2  # windows sampled after the loop frame returned, to find the call around
MAX_MOVES = 2
_SUSPENDABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_STOPPED = "stopped"  # a window cut short: the program ended, or an optimizer stepped


@dataclass(frozen=True)
class Wrapper:
    """A function whose frame stands between a caller and many different callees: skipped
    when choosing the function under the loop frame."""

    path_suffix: str  # the end of ``co_filename`` (``/`` separated)
    name: str  # ``co_name``
    why: str


DISPATCH_WRAPPERS: tuple[Wrapper, ...] = (
    Wrapper("torch/nn/modules/module.py", "_wrapped_call_impl",
            "nn.Module.__call__ (torch >= 2.1): every module call passes through it"),
    Wrapper("torch/nn/modules/module.py", "_call_impl",
            "nn.Module.__call__ before torch 2.1, and the hook-free path after"),
    Wrapper("torch/nn/modules/module.py", "inner",
            "_call_impl's closure that runs forward hooks when a module has any"),
    Wrapper("torch/utils/_contextlib.py", "decorate_context",
            "torch.no_grad() / inference_mode() / enable_grad() used as decorators "
            "(transformers' GenerationMixin.generate is decorated with no_grad)"),
    Wrapper("torch/utils/_contextlib.py", "generator_context",
            "the same decorators on a generator function"),
    Wrapper("contextlib.py", "inner", "contextlib.ContextDecorator used as a decorator"),
    Wrapper("transformers/utils/generic.py", "wrapper",
            "transformers' decorators on model forwards (@can_return_tuple on "
            "GPT2LMHeadModel.forward, @merge_with_config_defaults): every function of that "
            "file named wrapper calls the function it decorates"),
    Wrapper("accelerate/hooks.py", "new_forward",
            "accelerate's hook around the forward of every module of a model dispatched with "
            "device_map or offloading (transformers' from_pretrained(device_map=...))"),
)


def is_wrapper(code: CodeType) -> bool:
    """Whether ``code`` is one of :data:`DISPATCH_WRAPPERS`."""
    path = code.co_filename.replace("\\", "/")
    return any(code.co_name == w.name and (path == w.path_suffix or
                                           path.endswith("/" + w.path_suffix))
               for w in DISPATCH_WRAPPERS)


@dataclass(frozen=True)
class Found:
    """The outermost repeating call of one window: its code, the module it was defined in
    (``f_globals['__name__']``) and what was seen of it."""

    code: CodeType
    module: str
    calls: int  # different calls seen in the window
    share: float  # of the window's samples inside it
    # the codes from the outermost frame down to the window's loop frame (the calls a
    # function found inside one long call may move up to: FoundFunction._confirm)
    outer: tuple[CodeType, ...] = field(default=(), compare=False, repr=False)

    @property
    def spec(self) -> str:
        """``MODULE:QUALNAME``, as ``--cycle-function`` takes it."""
        return f"{self.module}:{self.code.co_qualname}"


class StackWindow:
    """One learning window: takes stacks (outermost frame first) one at a time and finds the
    outermost repeating call (module docstring). Holds only the last stack's frames."""

    def __init__(self) -> None:
        self.codes: list[tuple[CodeType, ...]] = []
        self.same: list[int] = []  # per sample: frames equal to the previous sample's, from the top
        self.module_of: dict[int, str] = {}  # id(code) -> the module it was defined in
        self._wrapper: dict[int, bool] = {}  # id(code) -> is_wrapper(code)
        self._previous: tuple[FrameType, ...] = ()

    def __len__(self) -> int:
        return len(self.codes)

    def add(self, stack: tuple[FrameType, ...]) -> None:
        """One sample. The previous sample's frames are alive until now, so an equal id at
        the same depth is the same frame object, never a new one at a reused address. Only
        the frames new since then are looked at twice (their module), to keep the interpreter
        lock short."""
        same = 0
        for mine, theirs in zip(stack, self._previous, strict=False):
            if mine is not theirs:
                break
            same += 1
        self.same.append(same)
        self.codes.append(tuple([f.f_code for f in stack]))
        module_of = self.module_of
        for frame in stack[same:]:
            key = id(frame.f_code)  # codes live as long as their functions: ids stay theirs
            if key not in module_of:
                module_of[key] = str(frame.f_globals.get("__name__", ""))
        self._previous = stack

    def release(self) -> None:
        """Drop the frames held (at the window's end)."""
        self._previous = ()

    def loop_frame(self) -> FrameType | None:
        """The loop frame itself (the last sample's frame at the loop depth), while the
        window still holds its frames."""
        depth = self.loop_depth()
        return self._previous[depth - 1] if 0 < depth <= len(self._previous) else None

    def loop_depth(self) -> int:
        """How many frames from the top stayed the same objects through the window."""
        if len(self.codes) < 2:
            return 0
        return min(min(self.same[1:]), *(len(c) for c in self.codes))

    def candidate(self, index: int, depth: int) -> int | None:
        """Depth of sample ``index``'s first frame under the loop frame that is not a
        dispatch wrapper, or None (the sample was in the loop frame itself, or a wrapper, or
        that frame is a generator's or coroutine's)."""
        codes = self.codes[index]
        for at in range(depth, len(codes)):
            key = id(codes[at])
            wrapper = self._wrapper.get(key)
            if wrapper is None:
                wrapper = self._wrapper[key] = is_wrapper(codes[at])
            if not wrapper:
                # a generator's frame comes and goes at each item: its calls are not
                # iterations (and a watched generator would open a cycle per resume or none)
                return None if codes[at].co_flags & _SUSPENDABLE else at
        return None

    def result(self) -> Found | str:
        """The outermost repeating call, or why this window found none."""
        if len(self.codes) < MIN_CALLS:
            return f"only {len(self.codes)} stack samples"
        depth = self.loop_depth()
        if depth == 0:
            return "no frame stayed on the main thread's stack through a window"
        at = [self.candidate(i, depth) for i in range(len(self.codes))]
        inside: Counter[CodeType] = Counter()
        calls: Counter[CodeType] = Counter()
        for i, d in enumerate(at):
            if d is None:
                continue
            code = self.codes[i][d]
            inside[code] += 1
            if i == 0 or self.same[i] <= d:  # a frame at or above it changed: a new call
                calls[code] += 1
        if not inside:
            return (f"the program stayed in {self.codes[0][depth - 1].co_qualname} "
                    "without calling a function again and again")
        repeating = [c for c in inside if calls[c] >= MIN_CALLS]
        code = max(repeating, key=lambda c: inside[c]) if repeating else \
            inside.most_common(1)[0][0]
        share = inside[code] / len(self.codes)
        if calls[code] < MIN_CALLS or share < MIN_SHARE:
            return (f"the most frequent call under {self.codes[0][depth - 1].co_qualname}, "
                    f"{code.co_qualname}, was seen {calls[code]} time(s) in "
                    f"{100 * share:.0f} % of the samples (a repeating call needs {MIN_CALLS} "
                    f"calls in {100 * MIN_SHARE:.0f} %)")
        return Found(code, self.module_of.get(id(code), ""), calls[code], round(share, 3),
                     self.codes[-1][:depth])


def main_stack(main_ident: int) -> tuple[FrameType, ...]:
    """The main thread's stack now, outermost frame first (empty once it has ended)."""
    frame: FrameType | None = sys._current_frames().get(main_ident)
    frames: list[FrameType] = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    frames.reverse()
    return tuple(frames)


class FoundFunction:
    """Finds the program's outermost repeating call while it runs and cuts one cycle of
    ``found.function_log`` per outermost call of it; the :class:`CycleRecorder` of that
    watcher. ``ready()``: whether the program has started using the GPU; ``marked()``:
    whether it marks cycles of its own (``perfdiff.cycle()``), which are the run's, so that
    no sample lands in one of them."""

    def __init__(self, found: FoundCycles, ready: Callable[[], bool],
                 marked: Callable[[], bool] = lambda: False,
                 main_ident: int | None = None) -> None:
        self.found = found
        self.ready = ready
        self.marked = marked  # the program marks its own cycles (perfdiff.cycle()): not ours
        self.main_ident = main_ident if main_ident is not None else threading.main_thread().ident
        self.anchor: AnchorFunction | None = None
        self.windows = 0  # learning windows sampled
        self._lock = threading.Lock()  # the watched anchor and the log, against _move
        # the loop frame of the window that found the function, held while confirming it
        self._loop: FrameType | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ learning

    def start(self) -> None:
        """Start the learning thread (it waits for ``ready()`` first)."""
        self._thread = threading.Thread(target=self._learn, name="perfdiff-found-function",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop learning (an optimizer stepped, or the program exits) and, at exit, watching."""
        self._stop.set()

    def uninstall(self) -> None:
        """At exit, before the run file is built: no more learning, no more watching; a
        function found but then called fewer than twice says so (for the period's warning)."""
        self.stop()
        anchor = self.anchor
        if anchor is None:
            return
        anchor.uninstall()
        if anchor.calls < MIN_FOUND_CYCLES and not self.found.stepped:
            self.found.function_problem = (
                f"{anchor.spec} was found but called {anchor.calls} time(s) after that"
                + ("" if hasattr(sys, "monitoring") else
                   " through its name (a reference taken earlier is not watched on Python "
                   "3.11: pin it with --cycle-function, or run on 3.12+)"))

    def _learn(self) -> None:
        """The thread: wait for the GPU, then sample windows until one finds the call."""
        try:
            while not self.ready():
                if self.found.stepped or self.marked():
                    return  # their cycles are the run's: the thread ends now
                if self._stop.wait(READY_POLL_S):
                    if not (self.found.stepped or self.marked()):
                        self._fail("the program ended before it used the GPU")
                    return
            problem = ""
            for _ in range(MAX_WINDOWS):
                outcome = self._window()
                if outcome is _STOPPED:
                    if not (self.found.stepped or self.marked()):  # theirs win: nothing to say
                        self._fail(f"{problem}; then the program ended while its stack was "
                                   "sampled" if problem else "the program ended while its "
                                   "stack was sampled (it ran too short a time after its "
                                   "first GPU use)")
                    return
                self.windows += 1
                if isinstance(outcome, Found):
                    if self._watch(outcome):
                        self._confirm(outcome)
                    self._loop = None
                    return
                problem = outcome
            self._fail(f"{problem} (in the last of {self.windows} windows of up to "
                       f"{WINDOW_S:g} s)")
        except Exception as exc:  # the program must never see our failure
            self._fail(f"stack sampling failed ({type(exc).__name__}: {exc})")

    def _window(self) -> Found | str:
        window = StackWindow()
        began = time.monotonic()
        try:
            while len(window) < WINDOW_SAMPLES and time.monotonic() - began < WINDOW_S:
                if self._stop.is_set() or self.found.stepped or self.marked():
                    return _STOPPED
                stack = main_stack(self.main_ident) if self.main_ident is not None else ()
                if not stack:
                    return _STOPPED  # the main thread has ended
                window.add(stack)
                del stack
                self._stop.wait(SAMPLE_INTERVAL_S)
            result = window.result()
            self._loop = window.loop_frame() if isinstance(result, Found) else None
            return result
        finally:
            window.release()

    def _watch(self, found: Found) -> bool:
        """Watch the found code: each outermost call is one cycle from now on."""
        try:
            parse_spec(found.spec)
        except CycleFunctionError:
            self._fail(f"the repeating call {found.code.co_qualname} (in {found.module}) "
                       "cannot be named MODULE:QUALNAME (a nested function or a lambda)")
            return False
        anchor = AnchorFunction(self, found.spec)
        if not anchor.attach_code(found.code):
            self._fail(f"the repeating call {found.spec} could not be watched "
                       f"({anchor.problem})")
            return False
        with self._lock:
            self.anchor = anchor
            self.found.function_name = found.spec
        return True

    def _confirm(self, found: Found) -> None:
        """Check, while cycles are cut at ``found``, that its window's loop frame is the
        program's loop; where it returns, find the call around it and move up.

        Why: a window can fall inside one long call that is not an iteration, most often the
        first one (GPT-2 ``generate`` sdpa, H200 2026-11-28: the first ``generate`` call took
        5.4 s, its ``_sample`` frame stayed through the window, and the repeating call under
        it was ``forward``, where another process of the same program found ``generate``).
        Only the loop frame returning says so: then, if windows sampled after it find a
        repeating call among the codes that were around the found one (``Found.outer``),
        cycles move up to that call (``FoundCycles.move_function``: the cycles cut so far are
        left out, the untraced switch restarts). A loop frame that returns while nothing
        around it repeats (the program's loop ending) changes nothing."""
        current = found
        moves = 0
        for _ in range(MAX_MOVES + 2):  # a loop frame that keeps returning: give up
            try:
                returned = self._loop_returned(time.monotonic() + CONFIRM_S)
            finally:
                self._loop = None  # the frame (and its locals) is not held past this
            if not returned or moves >= MAX_MOVES:
                return
            outer = self._relearn(current)
            if outer is None:
                return
            if outer.code is not current.code:
                self._move(current, outer)
                if self.anchor is None:
                    return
                moves += 1
            current = outer

    def _loop_returned(self, deadline: float) -> bool:
        """Whether the found window's loop frame left the main thread's stack before
        ``deadline`` (False also when learning stops, a step wins or the program ends)."""
        loop = self._loop
        if loop is None or self.main_ident is None:
            return False
        while time.monotonic() < deadline:
            if self._stop.wait(CONFIRM_INTERVAL_S) or self.found.stepped or self.marked():
                return False
            stack = main_stack(self.main_ident)
            if not stack:
                return False  # the main thread has ended
            if loop not in stack:  # frames compare by identity
                return True
            del stack
        return False

    def _relearn(self, found: Found) -> Found | None:
        """A repeating call found by the next windows that is ``found`` itself or one of the
        codes around it, or None."""
        for _ in range(RELEARN_WINDOWS):
            outcome = self._window()
            if outcome is _STOPPED:
                return None
            self.windows += 1
            if isinstance(outcome, Found) and (outcome.code is found.code
                                               or outcome.code in found.outer):
                return outcome
            self._loop = None
        return None

    def _move(self, inner: Found, outer: Found) -> None:
        """Cycles move from ``inner``'s calls to ``outer``'s."""
        with self._lock:
            anchor, self.anchor = self.anchor, None
            if anchor is not None:
                anchor.retire()
            self.found.move_function(inner.spec)
        self._watch(outer)  # where it fails, no anchor is left and _confirm stops

    def _fail(self, why: str) -> None:
        if not self.found.function_name:
            self.found.function_problem = why

    # ------------------------------------------------------------ CycleRecorder

    def begin_cycle(self, label: str, warmup: bool) -> None:
        """An outermost call began: a new cycle, unless an optimizer or profiler stepped
        (their cycles are the run's: found_cycles.chosen_log) or the program marks its own.
        Only the watched function's calls count: a call of one that was left for the call
        around it (``_move``, on the learning thread) may still arrive."""
        if self.found.stepped or self.marked():
            return
        with self._lock:
            anchor = self.anchor
            if anchor is None or anchor.label != label:
                return
            self.found.new_cycle(self.found.function_log, label)

    def end_cycle(self, *, completed: bool = True) -> None:
        with self._lock:
            self.found.function_log.end_cycle(completed=completed)


__all__ = ["CONFIRM_INTERVAL_S", "CONFIRM_S", "DISPATCH_WRAPPERS", "MAX_MOVES", "MAX_WINDOWS",
           "MIN_CALLS", "MIN_SHARE", "RELEARN_WINDOWS", "SAMPLE_INTERVAL_S", "WINDOW_S",
           "WINDOW_SAMPLES", "Found", "FoundFunction", "StackWindow", "Wrapper", "is_wrapper",
           "main_stack"]
