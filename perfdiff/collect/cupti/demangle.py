"""Demangle C++ kernel names (CUPTI reports them mangled, reports want them readable).

Why ctypes and libstdc++'s ``__cxa_demangle``: it is the reference Itanium demangler, it is
present wherever CUDA programs run, and it needs no extra package. Where it cannot be loaded
(or a name does not demangle, e.g. a plain C kernel name), the mangled name is kept: a
readable-enough fallback that never loses information.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

_Demangler = Callable[[str], str | None]


@functools.lru_cache(maxsize=1)
def _load_cxa_demangle() -> _Demangler | None:
    """Bind ``__cxa_demangle`` from libstdc++ (or libc++), or None if unavailable."""
    for name in ("stdc++", "c++"):
        path = ctypes.util.find_library(name)
        candidates = [path] if path else []
        candidates += ["libstdc++.so.6"] if name == "stdc++" else ["libc++.so.1"]
        for candidate in candidates:
            try:
                lib = ctypes.CDLL(candidate)
                func = lib.__cxa_demangle
            except (OSError, AttributeError):
                continue
            return _wrap(lib, func)
    return None


def _wrap(lib: ctypes.CDLL, func: ctypes._NamedFuncPointer) -> _Demangler:
    func.restype = ctypes.c_void_p
    func.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_int),
    ]
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    free = libc.free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    del lib  # keep the library loaded through func's reference

    def demangle_one(mangled: str) -> str | None:
        status = ctypes.c_int(0)
        ptr = func(mangled.encode("utf-8", "replace"), None, None, ctypes.byref(status))
        if status.value != 0 or not ptr:
            return None
        try:
            raw = ctypes.string_at(ptr)
        finally:
            free(ptr)
        return raw.decode("utf-8", "replace")

    return demangle_one


@functools.lru_cache(maxsize=65536)
def demangle(mangled: str) -> str:
    """Demangled form of ``mangled``; the input itself when it is not a mangled C++ name."""
    if not mangled.startswith("_Z"):
        return mangled
    demangler = _load_cxa_demangle()
    if demangler is None:
        return mangled
    return demangler(mangled) or mangled


def demangler_available() -> bool:
    """Whether names will actually be demangled here (recorded as a warning when not)."""
    return _load_cxa_demangle() is not None


__all__ = ["demangle", "demangler_available"]
