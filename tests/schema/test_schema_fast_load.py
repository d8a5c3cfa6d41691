"""The fast run-file reader (schema/numeric_json.py) gives exactly what json.loads gives.

Why these tests: the fast path replaces the JSON parser for the numbers, so every claim of its
docstring is checked against the plain path (``json.loads`` + ``numpy.asarray``) as reference:
values bit for bit, the same run file, and the same one-line error for damaged input.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from perfdiff.errors import InputError
from perfdiff.schema import io, numeric_json, run_file_to_dict, save_run_file
from perfdiff.schema.io import load_run_file
from tests.factories import KernelSpec, make_run_file

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the fast path take arrays of any length, so small documents exercise it."""
    monkeypatch.setattr(numeric_json, "MIN_CHUNK_BYTES", 1)


def _reference_floats(text: bytes) -> np.ndarray[Any, np.dtype[np.float64]]:
    values = json.loads(b"[" + text + b"]")
    return np.asarray([math.nan if v is None else v for v in values], dtype=np.float64)


def _same_bits(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


PARSERS = pytest.mark.parametrize("parser", ["pandas", "numpy"])


def _number_array(text: bytes, parser: str) -> numeric_json.NumberArray | None:
    """numeric_json.number_array with floats parsed by pandas (if exact here) or by numpy."""
    with pytest.MonkeyPatch.context() as patch:
        if parser == "numpy":
            patch.setattr(numeric_json, "_pandas_floats_exact", lambda: False)
        return numeric_json.number_array(text)


def test_pandas_float_parser_is_used_where_exact() -> None:
    """The test environment's pandas (3.1+) is the fast path; older ones fall back to numpy."""
    import pandas as pd

    major, minor = (int(p) for p in pd.__version__.split(".")[:2])
    assert numeric_json._pandas_floats_exact() == ((major, minor) >= (3, 1))


def _column(array: numeric_json.NumberArray) -> np.ndarray[Any, Any]:
    ints = array.int64()
    return ints if ints is not None else array.float64()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=INT64_MIN, max_value=INT64_MAX), min_size=1, max_size=40))
@example([INT64_MAX, 1])
@example([INT64_MIN, 0])
@example([0, -1, 10**18, -(10**18), 999_999_999_999_999_999])
def test_integer_lists_parse_exactly(values: list[int]) -> None:
    text = json.dumps(values, separators=(",", ":"))[1:-1].encode()
    parsed = numeric_json.number_array(text)
    if INT64_MAX in values or INT64_MIN in values:
        assert parsed is None  # numpy clamps there: the exact path decides
        return
    assert parsed is not None
    assert _same_bits(_column(parsed), np.asarray(values, dtype=np.int64))
    assert _same_bits(parsed.float64(), np.asarray(values, dtype=np.float64))
    assert parsed.as_list() == values


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False),
                          st.integers(min_value=-(10**30), max_value=10**30)),
                min_size=1, max_size=40))
@example([-0.0, 1])
@example([0.1, None, 5e-324, 1.7976931348623157e308])
@PARSERS
def test_float_lists_parse_exactly(parser: str, values: list[float | int | None]) -> None:
    text = json.dumps(values, separators=(",", ":"))[1:-1].encode()
    parsed = _number_array(text, parser)
    if parsed is None:
        return  # allowed: the plain path reads it (e.g. -0.0, or only integers beyond int64)
    assert _same_bits(parsed.float64(), _reference_floats(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("0123456789", min_size=1, max_size=25), min_size=1, max_size=8),
       st.lists(st.integers(-400, 400), min_size=8, max_size=8))
@PARSERS
def test_long_decimals_round_like_python(
    parser: str, mantissas: list[str], exponents: list[int]
) -> None:
    """numpy's float parser must round every decimal the way ``float()`` does."""
    tokens = []
    for digits, exponent in zip(mantissas, exponents, strict=False):
        digits = digits.lstrip("0") or "0"
        tokens.append(f"{digits[0]}.{digits[1:] or '0'}e{exponent}")
    text = ",".join(tokens).encode()
    parsed = _number_array(text, parser)
    reference = _reference_floats(text)
    if np.isinf(reference).any() or (np.signbit(reference) & (reference == 0)).any():
        return
    assert parsed is not None
    assert _same_bits(parsed.float64(), reference)


@settings(max_examples=2000, deadline=None)
@given(st.text("0123456789,-+.eEnul x_", min_size=1, max_size=30))
@example("01,2")
@example("1.,2")
@example(".5")
@example("+5")
@example("1.e5")
@example("-0")
@example("1,,2")
@example("1,2,")
@example("nullnull")
@example("1null")
@example("1e05,0.5E-07,-3")
@example("1 ,2")
@example("1e5e3,2.5")
@example("1.5.5,2.5")
@PARSERS
def test_nothing_invalid_gets_through(parser: str, text: str) -> None:
    """Whatever the fast path accepts, json.loads accepts too, with the same values."""
    parsed = _number_array(text.encode(), parser)
    if parsed is None:
        return
    reference = json.loads("[" + text + "]")
    assert parsed.as_list() == reference
    if all(type(v) is int for v in reference):
        assert _same_bits(_column(parsed), np.asarray(reference, dtype=np.int64))
    else:
        assert parsed.int64() is None
        assert _same_bits(parsed.float64(), _reference_floats(text.encode()))


@settings(max_examples=1000, deadline=None)
@given(st.text("0123456789,-+.eE", min_size=0, max_size=30), st.integers(0, 6))
@example("1.5,2.5,", 1)
@example("1.5,,2.5", 1)
@example(",1.5", 0)
@example("1.5,2.5,3.", 2)
def test_float_grammar_in_pieces_is_the_grammar_of_the_whole(text: str, piece: int) -> None:
    """Checked in pieces cut at commas (any piece size), the grammar's verdict is the one of
    the whole text at once, empty elements at the cuts included."""
    chunk = text.encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numeric_json, "_GRAMMAR_PIECE", piece)
        in_pieces = numeric_json._float_grammar_ok(chunk)
    assert in_pieces == numeric_json._piece_grammar_ok(chunk)


@pytest.mark.parametrize("token", [
    "0", "7", "-5", "132", "9223372036854775806", "-9223372036854775807",
    "9223372036854775807", "+1", "01", "-0", "1_0", " 1", "1.0", "null", "٣",
])
@pytest.mark.parametrize("count", [1, 2, 1000])
def test_constant_columns(token: str, count: int) -> None:
    """One value repeated (device, stream, grid sizes): the memcmp shortcut or the plain path."""
    text = ",".join([token] * count).encode()
    parsed = numeric_json.number_array(text)
    try:
        reference = json.loads(b"[" + text + b"]")
    except ValueError:
        assert parsed is None
        return
    if parsed is not None:
        assert parsed.as_list() == reference
        if parsed.ints is not None:
            assert _same_bits(parsed.ints, np.asarray(reference, dtype=np.int64))


def _documents() -> st.SearchStrategy[Any]:
    numbers = st.lists(st.integers(-(10**12), 10**12), max_size=6)
    floats = st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
                      max_size=6)
    names = st.text(alphabet='ab[]{}:,"\\1- ', max_size=12)
    leaf = st.one_of(numbers, floats, names, st.integers(), st.none(), st.booleans())
    return st.recursive(
        leaf,
        lambda inner: st.one_of(st.lists(inner, max_size=3),
                                st.dictionaries(names, inner, max_size=4)),
        max_leaves=20,
    )


def _plain(value: Any) -> Any:
    return io._plain_json(value)


@settings(max_examples=300, deadline=None)
@given(_documents(), st.booleans())
def test_documents_decode_like_json_loads(doc: Any, indent: bool) -> None:
    """Names with brackets and escaped quotes inside, nested lists: same tree as json.loads."""
    compact = json.dumps(doc, separators=(",", ":"))
    data = (json.dumps(doc, indent=1) if indent else compact).encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numeric_json, "MIN_CHUNK_BYTES", 1)
        fast = numeric_json.loads(data)
    if fast is None:
        return
    assert _plain(fast) == json.loads(data)


@pytest.mark.parametrize("text", [
    b'{"a":[1,2,3],"b":"x[4,5]y"}',
    b'{"a\\"":[1,2,3],"b":"q\\\\"}',
    b'{"a":[[1,2],[3]],"b":[1.5,null,2]}',
    b'{"a": [1,2,3] ,"b":{"c":[4,5]}}',
])
def test_hand_picked_documents(small_chunks: None, text: bytes) -> None:
    fast = numeric_json.loads(text)
    assert fast is not None
    assert _plain(fast) == json.loads(text)


@pytest.mark.parametrize("text", [
    b'{"a":[1,2,3],"b":"unterminated}',
    b'{"a":[1,2,3]',
    b'{"a":[1,2,3],}',
    b'{"a":[01,2,3]}',
    b'\xff{"a":[1,2,3]}',
])
def test_damaged_documents_fall_back(small_chunks: None, text: bytes) -> None:
    """The fast path never decides on a broken document: the plain path reports it."""
    assert numeric_json.loads(text) is None


def _fields_equal(a: Any, b: Any, where: str = "run_file") -> None:
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _fields_equal(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and _same_bits(a, b), where
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _fields_equal(x, y, f"{where}[{i}]")
    else:
        assert type(a) is type(b) and a == b, where


def _slow_load(path: Path) -> Any:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return io.run_file_from_dict(json.loads(data), source=str(path))


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_run_file_identical_to_plain_path(tmp_path: Path, suffix: str) -> None:
    run_file = make_run_file(
        [KernelSpec("gemm", 0.5, {"tensor_pct": 70.0}, launches=40), KernelSpec("relu", 0.1)],
        n_cycles=30, n_runs=2, n_devices=2, nan_metric_fraction=0.1, nvml_clock_mhz=1980.0,
        memcpy_per_cycle=2, memset_per_cycle=1,
    )
    path = save_run_file(run_file, tmp_path / f"run{suffix}")
    assert numeric_json.loads(path.read_bytes() if suffix == ".json" else
                              gzip.decompress(path.read_bytes())) is not None
    _fields_equal(load_run_file(path), _slow_load(path))
    _fields_equal(load_run_file(path), run_file)


@pytest.mark.parametrize(("column", "token"), [
    ("start_ns", "1.5"),  # float in an integer column: numpy.asarray truncates
    ("start_ns", "null"),  # null in an integer column: refused
    ("start_ns", "99999999999999999999"),  # beyond int64: refused
    ("start_ns", "9223372036854775807"),  # at the limit: kept exactly
    ("start_ns", "01"),  # not JSON
    ("start_ns", "true"),
    ("warmup", "1"),  # numbers where booleans belong
    ("label", "7"),  # numbers where strings belong
])
def test_odd_columns_same_result_or_error(
    small_chunks: None, tmp_path: Path, column: str, token: str
) -> None:
    table = "cycles" if column in ("warmup", "label") else "kernels"
    doc = run_file_to_dict(make_run_file(n_cycles=3))
    n = len(doc["runs"][0][table][column])
    raw = json.dumps(doc, separators=(",", ":"))
    old = f'"{column}":' + json.dumps(doc["runs"][0][table][column], separators=(",", ":"))
    assert old in raw
    path = tmp_path / "odd.json"
    path.write_text(raw.replace(old, f'"{column}":[{",".join([token] * n)}]', 1))

    def outcome(fast: bool) -> tuple[str, Any]:
        with pytest.MonkeyPatch.context() as patch:
            if not fast:
                patch.setattr(numeric_json, "loads", lambda data: None)
            try:
                return "ok", load_run_file(path)
            except InputError as exc:
                return "error", str(exc)

    fast, slow = outcome(True), outcome(False)
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        _fields_equal(fast[1], slow[1])
    else:
        assert fast[1] == slow[1]


@pytest.mark.parametrize("case", ["one member", "two members", "truncated", "corrupt", "trailing"])
def test_gunzip_reads_every_member_or_refuses(case: str) -> None:
    """The bounded reader gives gzip.decompress's bytes (every member, issue 25: a second
    member was dropped), or one InputError where gzip.decompress raises."""
    from perfdiff.errors import InputError
    from perfdiff.limits import gunzip_bounded

    one = gzip.compress(b'{"a": [1, 2, 3]}' * 100)
    data = {
        "one member": one,
        "two members": one + gzip.compress(b"[4]"),
        "truncated": one[: len(one) // 2],
        "corrupt": one[:20] + bytes(b ^ 0xFF for b in one[20:40]) + one[40:],
        "trailing": one + b"garbage",
    }[case]
    try:
        expected: Any = gzip.decompress(data)
    except Exception:
        with pytest.raises(InputError, match=r"x\.gz: .*re-copy"):
            gunzip_bounded(data, "x.gz", "re-copy it")
        return
    assert gunzip_bounded(data, "x.gz", "re-copy it") == expected
