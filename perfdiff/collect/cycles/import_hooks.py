"""Run code right after a module of the user's program is imported (now, if it already is).

Why its own module: the collector in a user program attaches to libraries the program
imports later (NVTX wrappers for ``--cycle-range``, optimizer hooks for found cycles, the
function behind ``--cycle-function``, CUDA initialisation for starting CUPTI), and several
of them may wait for the same module (``torch.cuda``), so hooks chain per module.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

ModuleHook = Callable[[ModuleType], None]


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs hooks right after a named module has executed (for modules imported later)."""

    def __init__(self) -> None:
        self.hooks: dict[str, list[ModuleHook]] = {}
        self._busy: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        hooks = self.hooks.get(fullname)
        if not hooks or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _HookedLoader(spec.loader, self.hooks.pop(fullname))
        return spec


class _HookedLoader(importlib.abc.Loader):
    def __init__(self, inner: Any, hooks: list[ModuleHook]) -> None:
        self._inner = inner
        self._hooks = hooks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        result: ModuleType | None = self._inner.create_module(spec)
        return result

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        self._inner.exec_module(module)
        for hook in self._hooks:
            _run_hook(hook, module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... of the real loader
        return getattr(self._inner, name)


_finder: _AfterImport | None = None


def _run_hook(hook: ModuleHook, module: ModuleType) -> None:
    try:
        hook(module)
    except Exception as exc:  # a hook that fails must not break the program's import
        print(f"perfdiff: warning: could not attach to {module.__name__} ({exc})",
              file=sys.stderr)


def when_imported(hooks: dict[str, ModuleHook]) -> None:
    """Run each hook on its module now if it is imported, else right after its import."""
    global _finder
    for name, hook in hooks.items():
        module = sys.modules.get(name)
        if module is not None:
            _run_hook(hook, module)
            continue
        if _finder is None:
            _finder = _AfterImport()
            sys.meta_path.insert(0, _finder)
        _finder.hooks.setdefault(name, []).append(hook)


__all__ = ["ModuleHook", "when_imported"]
