"""Kineto microsecond times (JSON text) -> integer nanoseconds, exactly.

Why its own module: an absolute microsecond time with nanosecond decimals has 19 significant
digits, which a float cannot hold, so times are converted from their text; the vectorised
path is the reader's hot loop and is tested on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

import msgspec
import numpy as np

from perfdiff.schema.model import IntArray

_NS_PER_US = 1000
_MAX_WHOLE_US = (2**63 - 1) // _NS_PER_US - 1


def us_text_to_ns(text: bytes | str | msgspec.Raw) -> int:
    """Microseconds as written in the JSON (``123``, ``123.456``, ``"123.4"``) -> integer ns.

    Exact for any number of digits (no float on the way); more than three decimals round half
    to even. Raises ValueError on anything that is not a finite number.
    """
    s = text if isinstance(text, str) else bytes(text).decode("ascii", "replace")
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1].strip()
    body = s[1:] if s[:1] in "+-" else s
    whole, dot, frac = body.partition(".")
    if whole.isdigit() and (not dot or frac.isdigit()) and len(frac) <= 3:
        ns = int(whole) * _NS_PER_US + (int(frac.ljust(3, "0")) if frac else 0)
        return -ns if s.startswith("-") else ns
    try:
        value = Decimal(s)
    except InvalidOperation:
        raise ValueError(f"not a number: {s[:40]!r}") from None
    if not value.is_finite():
        raise ValueError(f"not a finite number: {s[:40]!r}")
    if value.adjusted() > 15:  # beyond 10^16 us (317 years): 1e1000000 overflowed Decimal
        raise ValueError(f"time out of range: {s[:40]!r}")
    return int((value * _NS_PER_US).to_integral_value(rounding=ROUND_HALF_EVEN))


def us_texts_to_ns(texts: Sequence[bytes]) -> IntArray:
    """:func:`us_text_to_ns` for many values at once (numpy string ops; odd ones one by one).

    Why: a trace holds tens of thousands of GPU and launch events; converting their times one
    Python call each was the reader's largest cost.
    """
    if not texts:
        return np.zeros(0, dtype=np.int64)
    arr = np.asarray(texts, dtype=np.bytes_)
    parts = np.char.partition(arr, b".")  # shape (n, 3): head, ".", tail
    head, tail = parts[:, 0], parts[:, 2]
    head_len = np.char.str_len(head)
    tail_len = np.char.str_len(tail)
    plain = (np.char.isdigit(head) & (head_len <= 18) & (tail_len <= 3)
             & (np.char.isdigit(tail) | (tail_len == 0)))
    whole = np.zeros(arr.shape[0], dtype=np.int64)
    whole[plain] = head[plain].astype(np.int64)
    plain &= whole <= _MAX_WHOLE_US  # larger ones would overflow int64 as ns
    out = np.empty(arr.shape[0], dtype=np.int64)
    if plain.any():
        frac = np.char.ljust(tail[plain], 3, b"0").astype("S3").astype(np.int64)
        out[plain] = whole[plain] * _NS_PER_US + frac
    for i in np.flatnonzero(~plain).tolist():
        value = us_text_to_ns(texts[i])
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"time out of range: {texts[i][:40]!r}")
        out[i] = value
    return out
