"""``--cycle-range REGEX``: one rule for every reader that cuts cycles by range names.

Why one module: the torch.profiler reader took an invalid expression literally while the
Nsight Systems reader refused it (exit 2), so the same option meant two things by input kind.
Now a pattern that is not a regular expression is a usage error (one line, exit 2,
docs/reference/exit-codes.md) for every kind, raised before any input is read; a range name
matches when the whole name matches the expression or equals the text as typed (so an exact
name with brackets, ``step[0]``, still works without escaping).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perfdiff.errors import UsageError


@dataclass(frozen=True)
class CycleRange:
    """``--cycle-range`` as typed (``text``) and compiled (``pattern``)."""

    text: str
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, text: str) -> CycleRange:
        """The compiled pattern, or a :class:`UsageError` saying why ``text`` is not one."""
        try:
            return cls(text, re.compile(text))
        except re.error as exc:
            raise UsageError(f"--cycle-range {text!r} is not a regular expression ({exc}); "
                             "escape special characters, e.g. 'step\\[0\\]'") from None

    def matches(self, name: str) -> bool:
        """Whether a range called ``name`` is a cycle."""
        return name == self.text or self.pattern.fullmatch(name) is not None


__all__ = ["CycleRange"]
