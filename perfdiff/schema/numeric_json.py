"""Decode a run file's JSON with its long number arrays parsed straight into numpy.

Why: a run of a million kernel launches holds about fifteen million numbers (13 integer columns
per launch, plus the metric samples). ``json.loads`` makes a Python object of each (about 60 ns
apiece, 200 ns for a 17-digit float) and ``numpy.asarray`` then copies them again (about
20 ns); that was most of the time ``compare`` spent. Here every flat number array that is the
value of an object key (every column of every table: ``"start_ns":[...]``) is cut out of the
text, parsed into numpy and checked to be exactly JSON's number grammar (see
:func:`number_array`), and replaced by a placeholder string; ``json.loads`` parses the few
kilobytes left and the placeholders come back as :class:`NumberArray` objects that the
run-file validators turn into numpy columns.

Results are identical to ``json.loads`` followed by ``numpy.asarray``, by construction:
- A chunk is cut out only if it is, byte for byte, a valid JSON array of numbers (or null),
  written without whitespace (the compact form ``save_run_file`` writes), whose values numpy
  holds exactly as Python would (no integer at the int64 limits, no float beyond range, no
  negative zero). Anything else stays in the text for ``json.loads``. Swapping one valid JSON
  value for another (a string) keeps the document valid or invalid alike; on any failure the
  caller falls back to the plain path, which then raises the same one-line errors as before.
- Validators that want something other than what was parsed (an int64 column of floats, a list
  of booleans or strings, a plain value) call :meth:`NumberArray.as_list`, the very list
  ``json.loads`` would have produced.
- tests/schema/test_schema_fast_load.py checks all of this against ``json.loads``.
"""

from __future__ import annotations

import functools
import io
import json
import sys
import warnings
from typing import Any

import numpy as np

from perfdiff.schema.model import FloatArray, IntArray

# Shorter arrays are not worth the bookkeeping: json.loads handles them.
MIN_CHUNK_BYTES = 1024
# Float arrays at least this long are parsed with pandas even if it is not loaded yet.
_PANDAS_WORTH_BYTES = 32 * 2**20
# Float arrays are grammar-checked in pieces of about this many bytes (see _float_grammar_ok).
_GRAMMAR_PIECE = 2**18

_POWERS_OF_TEN = tuple(10**k for k in range(1, 19))
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min
_NUMBER_START = frozenset(b"-0123456789n")
# bytes numpy's integer parser reads, alone between commas, as the value 0
_READ_AS_ZERO = (b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"+")
_NULL = b"null"
# byte -> class for the float grammar check: 0 the digit zero, 1 other digits, 2 comma,
# 3 minus, 4 plus, 5 point, 6 exponent mark, 7 anything else
_CLASS_TABLE = bytes(
    0 if b == ord("0") else 1 if chr(b) in "123456789" else 2 if b == ord(",")
    else 3 if b == ord("-") else 4 if b == ord("+") else 5 if b == ord(".")
    else 6 if chr(b) in "eE" else 7
    for b in range(256)
)
_DIGIT, _COMMA, _MINUS, _PLUS, _POINT, _EXP, _OTHER = 1, 2, 3, 4, 5, 6, 7
_WHITESPACE = frozenset(b" \t\r\n")
_BACKSLASH = 0x5C
_COLON = 0x3A


class NumberArray:
    """A flat JSON array of numbers, already parsed, standing where the list stood.

    ``ints`` is set when every element is an integer, else ``floats`` (null -> NaN).
    """

    __slots__ = ("floats", "ints", "text")

    def __init__(
        self, text: bytes, *, ints: IntArray | None = None, floats: FloatArray | None = None
    ) -> None:
        self.text = text
        self.ints = ints
        self.floats = floats

    def as_list(self) -> list[Any]:
        """Exactly what ``json.loads`` gives for this array (the slow, always-right path)."""
        value: list[Any] = json.loads(b"[" + self.text + b"]")
        return value

    def int64(self) -> IntArray | None:
        """The column as ``numpy.asarray(the list, dtype=int64)`` would give it.

        None for an array with floats or nulls: there numpy truncates or raises, and the
        caller lets it do so on :meth:`as_list`.
        """
        return self.ints

    def float64(self) -> FloatArray:
        """The column as ``numpy.asarray(the list with null -> NaN, dtype=float64)`` gives it.

        Integers: both convert each to the nearest double (ties to even), so they agree.
        """
        if self.floats is not None:
            return self.floats
        assert self.ints is not None
        return self.ints.astype(np.float64)

    def __repr__(self) -> str:
        kind = "integers" if self.ints is not None else "floats"
        return f"NumberArray({kind}, {len(self.text)} bytes)"


def loads(data: bytes) -> Any | None:
    """Decode ``data`` like ``json.loads``, or None when the plain path must decide.

    None is returned when no long integer array was found (nothing to gain) or when anything
    about the document is off (not UTF-8, not valid JSON, an unterminated string): the caller
    then runs ``json.loads`` on the whole text, which either succeeds the same way or raises the
    error that names the line and column.
    """
    cut = _cut_number_arrays(data)
    if cut is None:
        return None
    skeleton, arrays = cut
    try:
        text = skeleton.decode("utf-8")
    except UnicodeDecodeError:
        return None

    def restore(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        for key, value in pairs:
            if type(value) is str and value in arrays:
                out[key] = arrays[value]
        return out

    try:
        return json.loads(text, object_pairs_hook=restore)
    except (ValueError, RecursionError):
        return None


def _cut_number_arrays(data: bytes) -> tuple[bytes, dict[str, NumberArray]] | None:
    """Replace each long integer array that is an object's value by a unique placeholder.

    A scan over quotes and brackets only (``bytes.find``), so it skips over the numbers at
    memory speed; strings are stepped over so that a ``[`` inside a name is never taken for an
    array.
    """
    import secrets  # here, not at the top: reading a trace never needs it (start-up)

    nonce = secrets.token_hex(8)
    arrays: dict[str, NumberArray] = {}
    pieces: list[bytes] = []
    kept_from = 0
    pos = 0
    next_quote = data.find(b'"')
    next_bracket = data.find(b"[")
    while next_bracket != -1:
        if next_quote != -1 and next_quote < next_bracket:
            end = _string_end(data, next_quote)
            if end == -1:
                return None  # unterminated string: json.loads reports it
            pos = end + 1
        else:
            bracket = next_bracket
            close = data.find(b"]", bracket + 1)
            if close == -1:
                return None
            array = None
            if (
                close - bracket - 1 >= MIN_CHUNK_BYTES
                and data[bracket + 1] in _NUMBER_START
                and _after_colon(data, bracket)
            ):
                array = number_array(data[bracket + 1 : close])
            if array is None:
                pos = bracket + 1
            else:
                placeholder = f"\x00perfdiff:{nonce}:{len(arrays)}"
                arrays[placeholder] = array
                pieces.append(data[kept_from:bracket])
                pieces.append(json.dumps(placeholder).encode("ascii"))
                kept_from = pos = close + 1
        if next_quote != -1 and next_quote < pos:
            next_quote = data.find(b'"', pos)
        if next_bracket < pos:
            next_bracket = data.find(b"[", pos)
    if not arrays:
        return None
    pieces.append(data[kept_from:])
    return b"".join(pieces), arrays


def _string_end(data: bytes, start: int) -> int:
    """Index of the quote closing the string opened at ``start`` (-1: none)."""
    end = start + 1
    while True:
        end = data.find(b'"', end)
        if end == -1:
            return -1
        backslashes = 0
        k = end - 1
        while data[k] == _BACKSLASH:
            backslashes += 1
            k -= 1
        if backslashes % 2 == 0:
            return end
        end += 1


def _after_colon(data: bytes, bracket: int) -> bool:
    """True if the array at ``bracket`` is an object's value (not a list element)."""
    k = bracket - 1
    while k >= 0 and data[k] in _WHITESPACE:
        k -= 1
    return k >= 0 and data[k] == _COLON


def number_array(chunk: bytes) -> NumberArray | None:
    """``chunk`` (an array's text without brackets) parsed, if it is a compact JSON number list.

    Integers (the bulk: every table column) are checked without a grammar scan. numpy's parser
    must read exactly one value per comma-separated element, none at the int64 limits (where it
    clamps), and the canonical decimal text of the values (``str(v)``) plus the commas must add
    up to the chunk's length. An element that holds a digit is read from at least as many bytes
    as its value's canonical text, and numpy refuses empty elements, so equality leaves no room
    for a leading zero, ``-0``, or a stray byte. The elements without a digit that numpy reads
    as 0 (a lone space, tab, newline, ``+`` or ``-``) are ruled out first with ``memchr`` scans.
    Anything else is tried as floats.
    """
    if not chunk:
        return None
    constant = _constant_ints(chunk)
    if constant is not None:
        return NumberArray(chunk, ints=constant)
    ints = _fromstring(chunk, np.int64)  # fails at the first point or letter of a float list
    if ints is None:
        return _float_array(chunk)
    if (
        any(mark in chunk for mark in _READ_AS_ZERO)
        or _lone_minus(chunk)
        or _saturated(ints)
        or _canonical_length(ints) + len(ints) - 1 != len(chunk)
    ):
        return None  # not a JSON integer list as written, or beyond what numpy reads exactly
    return NumberArray(chunk, ints=ints)


def _constant_ints(chunk: bytes) -> IntArray | None:
    """A column holding one integer throughout (device, stream, grid and block sizes).

    Why a shortcut: such columns are most of a kernel table's bytes and numpy parses them at
    ~10 ns per element; comparing the chunk with the value repeated is a ``memcmp``.
    """
    comma = chunk.find(b",")
    if comma <= 0:
        return None
    token = chunk[:comma]
    count = len(chunk) // (comma + 1) + 1
    if count * (comma + 1) - 1 != len(chunk) or chunk != (token + b",") * (count - 1) + token:
        return None
    try:
        value = int(token)
    except ValueError:
        return None
    if str(value).encode() != token or not _INT64_MIN < value < _INT64_MAX:
        return None  # not canonical JSON (+1, 01, -0, 1_0), or numpy's limits
    return np.full(count, value, dtype=np.int64)


def _lone_minus(chunk: bytes) -> bool:
    return b"-" in chunk and (b"-," in chunk or chunk.endswith(b"-"))


def _float_array(chunk: bytes) -> NumberArray | None:
    """Floats (and null) where JSON's grammar holds and the parsed value is Python's.

    The parsers below read what JSON writes, correctly rounded like ``float()``, but they also
    read forms JSON forbids: ``.5``, ``5.``, ``05``. :func:`_float_grammar_ok` rejects those; the
    parser rejects the rest (``1e``, ``1.5.5``, letters) by failing on the element.
    """
    nulls = chunk.count(_NULL)
    checked = chunk
    if nulls:
        before = chunk.count(b"," + _NULL) + chunk.startswith(_NULL)
        after = chunk.count(_NULL + b",") + chunk.endswith(_NULL)
        if before != nulls or after != nulls:
            return None  # "null" glued to something else
        checked = chunk.replace(_NULL, b"0")
    if not _float_grammar_ok(checked):
        return None
    floats = _parse_floats(chunk, nulls)
    if floats is None or int(np.count_nonzero(np.isnan(floats))) != nulls:
        return None
    # infinity: an integer beyond float range, which Python refuses to convert; negative zero:
    # JSON's -0 is the integer 0 (+0.0). Both rare: leave them to the exact path.
    if np.isinf(floats).any() or (np.signbit(floats) & (floats == 0)).any():
        return None
    return NumberArray(chunk, floats=floats)


def _parse_floats(chunk: bytes, nulls: int) -> FloatArray | None:
    """Parse a grammar-checked float list: pandas' reader where it is exact, else numpy's.

    Why pandas: from 3.1 on its CSV reader converts with fast_float, correctly rounded like
    ``float()`` and about five times faster than numpy's ``fromstring`` (about 40 against
    190 ns for a 17-digit value: half a million samples per metric make that a tenth of a
    second). It is used only where pandas is already loaded (``compare`` loads it before
    reading run files: :func:`load_float_parser`) or the array is big enough to pay for
    importing it. No DataFrame leaves this function.
    """
    if _pandas_floats_exact() and ("pandas" in sys.modules or len(chunk) >= _PANDAS_WORTH_BYTES):
        import pandas as pd

        try:
            frame = pd.read_csv(
                io.BytesIO(chunk), header=None, lineterminator=",", dtype=np.float64,
                na_values=["null"], keep_default_na=False, skip_blank_lines=False, engine="c",
            )
        except (ValueError, pd.errors.ParserError):
            return None
        values: FloatArray = frame[0].to_numpy(dtype=np.float64)
        if values.shape[0] != chunk.count(b",") + 1:
            return None
        return values
    parsed: FloatArray | None = _fromstring(
        chunk.replace(_NULL, b"nan") if nulls else chunk, np.float64
    )
    return parsed


def load_float_parser() -> None:
    """Import pandas now, so that float columns read from here on go through its reader.

    Why a call: a command that analyses with pandas anyway (``compare``) pays nothing for the
    import and saves numpy's slower parser (2 x 1,000,000 launches: -0.6 s of CPU,
    bench/README.md, issue 25); other commands keep reading without it (the size rule in
    :func:`_parse_floats`). Nothing happens where pandas' reader is not exact.
    """
    if _pandas_floats_exact():
        import pandas  # noqa: F401  (loaded: _parse_floats sees it in sys.modules)


@functools.cache
def _pandas_floats_exact() -> bool:
    """pandas >= 3.1 parses every float with one correctly rounded converter (fast_float)."""
    import importlib.metadata  # here, not at the top: 10-15 ms that reading a trace never needs

    try:
        version = importlib.metadata.version("pandas")
    except importlib.metadata.PackageNotFoundError:
        return False
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (3, 1)
    except (IndexError, ValueError):
        return False


def _float_grammar_ok(chunk: bytes) -> bool:
    r"""The checks of ``-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`` numpy's parser would miss.

    Checked a piece of about :data:`_GRAMMAR_PIECE` bytes at a time, each piece ending at a
    comma (the elements are checked one by one, so the pieces' verdicts add up to the
    chunk's): the temporaries of :func:`_piece_grammar_ok` then stay small, and a fresh
    array as long as the chunk costs more in page faults than its check (bench/README.md,
    issue 25). A comma at the end leaves an empty last piece: an empty element, refused.
    """
    start = 0
    while True:
        stop = chunk.find(b",", start + _GRAMMAR_PIECE)
        if not _piece_grammar_ok(chunk[start:] if stop < 0 else chunk[start:stop]):
            return False
        if stop < 0:
            return True
        start = stop + 1


def _piece_grammar_ok(chunk: bytes) -> bool:
    r"""The grammar of one piece of comma-separated elements.

    Vectorised over byte classes: each element starts with ``-`` or a digit, then a digit; no
    leading zero; a point has digits on both sides; ``+`` only after the exponent mark; ``-``
    only at an element's start or after the exponent mark.
    """
    classes = b"\x02" + chunk.translate(_CLASS_TABLE) + b"\x02"  # a comma on each side
    if bytes((_OTHER,)) in classes:
        return False
    c = np.frombuffer(classes, dtype=np.uint8)
    starts = np.flatnonzero(c == _COMMA)[:-1] + 1
    first = c[starts]
    if (first == _COMMA).any():
        return False  # empty element
    mantissa = starts + (first == _MINUS)
    lead = c[mantissa]
    if (lead > _DIGIT).any():
        return False
    if ((lead == 0) & (c[mantissa + 1] <= _DIGIT)).any():
        return False  # leading zero
    for mark, allowed_before in ((_POINT, None), (_PLUS, (_EXP,)), (_MINUS, (_EXP, _COMMA))):
        if bytes((mark,)) not in classes:
            continue
        where = np.flatnonzero(c == mark)
        before = c[where - 1]
        if allowed_before is None:
            if ((before > _DIGIT) | (c[where + 1] > _DIGIT)).any():
                return False
        elif not np.isin(before, allowed_before).all():
            return False
    return True


def _fromstring(text: bytes, dtype: type[np.int64] | type[np.float64]) -> Any:
    """numpy's text parser, or None unless it read exactly one value per element.

    numpy 2 raises ValueError where the text stops parsing; numpy 1 warned (DeprecationWarning)
    and returned what it had read: both mean "not for us", without a word on stderr.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            parsed = np.fromstring(text, dtype=dtype, sep=",")
    except (ValueError, DeprecationWarning):
        return None
    if parsed.shape[0] != text.count(b",") + 1:
        return None
    return parsed


def _saturated(values: IntArray) -> bool:
    """numpy clamps out-of-range integers to the limits; a limit value needs the exact path."""
    return bool(values.max() == _INT64_MAX or values.min() == _INT64_MIN)


def _canonical_length(values: IntArray) -> int:
    """``sum(len(str(v)) for v in values)``, vectorised (values strictly inside int64)."""
    magnitude = np.abs(values)
    total: int = len(values) + int(np.count_nonzero(values < 0))
    for power in _POWERS_OF_TEN:
        above = int(np.count_nonzero(magnitude >= power))
        if not above:
            break
        total += above
    return total
