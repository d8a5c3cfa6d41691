"""The interface every built-in workload implements.

Why this shape: a workload is a small class with a ``name``, a frozen dataclass of typed
parameters, and ``run(marker, plan)`` in which the workload itself opens
``with marker.cycle(label=..., warmup=...)`` around each iteration. User programs mark their
iterations with ``perfdiff.cycle()`` the same way, so the collector treats both alike, and
cycles sharing a label form a *case* (e.g. one input shape, or one implementation).

Lifecycle, driven by the collector:

1. ``cls.params_class.from_strings({"batch": "8"})`` parses ``-p KEY=VALUE`` options;
2. ``workload = cls(params)``; ``workload.setup(device)`` builds models and inputs
   (not recorded as cycles; heavy imports such as torch happen here, lazily);
3. ``workload.run(marker, plan)`` runs the warm-up and measured cycles of every case;
4. ``workload.teardown()`` frees what setup made (also after an exception or Ctrl-C).

torch is never imported at module level here or in any workload module, so that the
``perfdiff`` CLI starts, and ``compare`` runs, on a machine without torch.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, get_args, get_origin

from perfdiff.collect.settings import DEFAULT_WARMUP
from perfdiff.errors import UsageError
from perfdiff.markers import CycleMarker


class WorkloadParamError(UsageError):
    """A ``-p KEY=VALUE`` option names an unknown parameter or has a bad value."""


P = TypeVar("P", bound="WorkloadParams")


@dataclass(frozen=True)
class CyclePlan:
    """How many cycles to run *per case*: ``warmup`` first (flagged), then ``measured``."""

    measured: int
    warmup: int = DEFAULT_WARMUP

    def __post_init__(self) -> None:
        if self.measured < 1:
            raise WorkloadParamError(f"--cycles must be at least 1, got {self.measured}")
        if self.warmup < 0:
            raise WorkloadParamError(f"--warmup must be 0 or more, got {self.warmup}")


@dataclass(frozen=True)
class WorkloadParams:
    """Base of every workload's parameter dataclass (subclass it with ``frozen=True``).

    Fields must have defaults and be of type int, float, str or bool, or a ``Literal`` of
    strings (choices). ``from_strings`` converts command-line text by these annotations, so
    a workload declares its options once, as data.
    """

    @classmethod
    def from_strings(cls: type[P], items: Mapping[str, str]) -> P:
        """Build the params from ``KEY=VALUE`` texts; unknown keys and bad values raise."""
        hints = typing.get_type_hints(cls)
        known = {f.name: f for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for raw_key, text in items.items():
            key = raw_key.replace("-", "_")
            if key not in known:
                names = ", ".join(sorted(known)) or "(none)"
                raise WorkloadParamError(
                    f"unknown workload parameter '{raw_key}'; this workload takes: {names}"
                )
            kwargs[key] = _convert(text, hints[key], raw_key)
        return cls(**kwargs)

    def to_json(self) -> dict[str, Any]:
        """The parameters as JSON-compatible values, for ``Workload.params`` in the run file."""
        return dataclasses.asdict(self)

    @classmethod
    def describe(cls) -> list[tuple[str, str, Any]]:
        """(name, type, default) of each parameter, for ``perfdiff collect --list``."""
        hints = typing.get_type_hints(cls)
        out: list[tuple[str, str, Any]] = []
        for f in dataclasses.fields(cls):
            out.append((f.name.replace("_", "-"), _type_text(hints[f.name]), f.default))
        return out


def _type_text(tp: Any) -> str:
    if get_origin(tp) is typing.Literal:
        return "|".join(str(a) for a in get_args(tp))
    return getattr(tp, "__name__", str(tp))


def _convert(text: str, tp: Any, key: str) -> Any:
    """Convert one command-line value to the annotated type, or raise one clear line."""
    if get_origin(tp) is typing.Literal:
        choices = get_args(tp)
        if text not in choices:
            raise WorkloadParamError(
                f"parameter '{key}' must be one of {', '.join(map(str, choices))}; got {text!r}"
            )
        return text
    if get_origin(tp) in (typing.Union, types.UnionType):
        non_none = [a for a in get_args(tp) if a is not type(None)]
        if text.lower() in ("none", "") and len(non_none) < len(get_args(tp)):
            return None
        tp = non_none[0]
    converters: dict[Any, Callable[[str], Any]] = {
        int: int,
        float: float,
        str: str,
        bool: _parse_bool,
    }
    conv = converters.get(tp)
    if conv is None:
        raise WorkloadParamError(f"parameter '{key}' has an unsupported type {tp!r}")
    try:
        return conv(text)
    except ValueError:
        raise WorkloadParamError(
            f"parameter '{key}' expects {_type_text(tp)}, got {text!r}"
        ) from None


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


class Workload(ABC):
    """A built-in workload. Subclasses set ``name``, ``summary`` and ``params_class``."""

    name: ClassVar[str]
    summary: ClassVar[str]  # one line for ``perfdiff collect --list``
    params_class: ClassVar[type[WorkloadParams]] = WorkloadParams
    # True when every cycle ends with the GPU idle (a synchronize inside the cycle): the
    # collector then drains the trace's buffers between cycles (session.py), so that their
    # conversion never lands inside a cycle.
    idle_between_cycles: ClassVar[bool] = False
    # False for the benchmark workloads (rmsnorm, linalg): their per-case tables and the
    # in-situ cross-check need every measured cycle of every case traced and marked, so none
    # is left untraced to measure the collector's overhead (overhead.py).
    untraced_cycles: ClassVar[bool] = True

    def __init__(self, params: WorkloadParams) -> None:
        if not isinstance(params, self.params_class):
            raise TypeError(f"{type(self).__name__} needs {self.params_class.__name__}")
        self.params = params

    def setup(self, device: str) -> None:  # noqa: B027 - optional hook, empty by default
        """Build models and inputs on ``device`` (e.g. "cuda:0"); not recorded as cycles."""

    @abstractmethod
    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        """Run ``plan.warmup`` + ``plan.measured`` cycles of every case, each inside
        ``with marker.cycle(label=case, warmup=...)``. Must not synchronise inside a cycle
        more than the real workload would (the collector measures what runs)."""

    def teardown(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Free what ``setup`` made; called after ``run`` even if it raised."""

    def cases(self) -> tuple[str, ...]:
        """Labels of the cases ``run`` produces (one unlabeled case by default)."""
        return ("",)


def run_cycles(
    marker: CycleMarker, plan: CyclePlan, step: Callable[[], object], label: str = ""
) -> None:
    """Helper for the common case: call ``step`` once per cycle, warm-up cycles first."""
    for i in range(plan.warmup + plan.measured):
        with marker.cycle(label, warmup=i < plan.warmup):
            step()


__all__ = [
    "CyclePlan",
    "Workload",
    "WorkloadParamError",
    "WorkloadParams",
    "run_cycles",
]
