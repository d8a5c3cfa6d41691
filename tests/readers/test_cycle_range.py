"""``--cycle-range``: one rule for every reader (readers/cycle_range.py).

Why a property test: the option takes any text a user types; the torch.profiler reader once
took an invalid expression literally while the nsys reader refused it (issue 24).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfdiff.errors import UsageError
from perfdiff.readers.cycle_range import CycleRange


@given(st.text(max_size=40))
def test_any_text_is_a_pattern_or_one_usage_line(text: str) -> None:
    try:
        re.compile(text)
    except re.error:
        with pytest.raises(UsageError) as caught:
            CycleRange.parse(text)
        message = str(caught.value)
        assert "\n" not in message and "is not a regular expression" in message
        return
    chosen = CycleRange.parse(text)
    assert chosen.matches(text)  # the name as typed always matches itself


@given(st.text(min_size=1, max_size=30))
def test_an_escaped_name_matches_that_name_only(name: str) -> None:
    chosen = CycleRange.parse(re.escape(name))
    assert chosen.matches(name)
    assert not chosen.matches(name + "x")


def test_the_whole_name_must_match() -> None:
    chosen = CycleRange.parse(r"## Call CompiledFxGraph .* ##")
    assert chosen.matches("## Call CompiledFxGraph f4ii27dd ##")
    assert not chosen.matches("x ## Call CompiledFxGraph f4ii27dd ##")
    assert CycleRange.parse("step[0]").matches("step[0]")  # an exact name, brackets and all
