"""A name that is not UTF-8 is kept (with U+FFFD), whichever way the installed msgspec reports
it: up to 0.22 as ``UnicodeDecodeError``, from 0.23 as a plain ``DecodeError``. The CI's fresh
install got the newer one and the reader ended in exit 70, so both spellings are pinned here."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from perfdiff.readers.torch_profiler.events import (
    EVENT_DECODER,
    decode_replacing,
    not_utf8,
)

RAW = msgspec.Raw(b'{"ph":"X","cat":"kernel","name":"gemm_\xe9t\xe9","ts":1.5,"dur":2}')


def test_the_installed_msgspec_event_with_a_latin1_name_keeps_its_times() -> None:
    event = decode_replacing(EVENT_DECODER.decode, RAW)
    assert event.name == "gemm_\ufffdt\ufffd"
    assert bytes(event.ts) == b"1.5"


@pytest.mark.parametrize("error", [
    UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte"),
    msgspec.DecodeError("Invalid UTF-8 encoded string"),
])
def test_either_msgspec_spelling_of_bad_text_is_replaced(error: Exception) -> None:
    calls: list[bytes] = []

    def decode(raw: Any) -> str:
        calls.append(bytes(raw))
        if len(calls) == 1:
            raise error
        return bytes(raw).decode()

    assert not_utf8(error)
    assert decode_replacing(decode, RAW) == bytes(RAW).decode("utf-8", "replace")


@pytest.mark.parametrize("error", [
    msgspec.DecodeError("Input data was truncated"),
    msgspec.ValidationError("Expected `str`, got `int` - at `$.name`"),
])
def test_other_decode_errors_are_not_taken_for_bad_text(error: Exception) -> None:
    def decode(raw: Any) -> str:
        raise error

    assert not not_utf8(error)
    with pytest.raises(type(error)):
        decode_replacing(decode, RAW)
