"""A reader package's public names imported on first use (PEP 562 module ``__getattr__``).

Why: the door (``readers.dispatch``) asks every input whether it is a trace or an nsys
export, so each reader package is imported for its detector; its reader modules need only
load when an input of that format is read (a run file's compare: bench/README.md, issue 25).
One function serves every package, so the packages cannot differ in how a name is found.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, modules: dict[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``modules`` (name -> submodule) from
    its submodule, imported when first asked for; AttributeError for any other name."""

    def getattr_(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return getattr_
