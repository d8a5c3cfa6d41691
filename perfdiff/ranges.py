"""A numeric setting's usable range, as data: one table per command, read by two checkers.

Why here, beside neither of them: the command line (``perfdiff.cli.option_limits``) refuses a
hostile value on the raw argv before anything runs, and the settings objects
(``perfdiff.collect.settings``) refuse it when they are built in code; the collect bounds were
written twice, once in each, and disagreed (the CLI refused ``--device 5000``, a settings
object built in code took it). Standard library only: the CLI's door imports it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    """A range (inclusive unless ``low_open``) and whether the value must be a whole number."""

    low: float
    high: float
    unit: str = ""
    whole: bool = False
    low_open: bool = False

    def allows(self, value: float) -> bool:
        """Whether ``value`` is a finite number in the range (and whole, if it must be)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if not math.isfinite(value):
            return False
        above_low = self.low < value if self.low_open else self.low <= value
        return above_low and value <= self.high and (not self.whole or value == math.floor(value))

    def describe(self) -> str:
        low = f"above {self.low:g}" if self.low_open else f"from {self.low:g}"
        kind = "a whole number" if self.whole else "a number"
        return f"{kind} {low} to {self.high:g}{' ' + self.unit if self.unit else ''}"


__all__ = ["Limit"]
