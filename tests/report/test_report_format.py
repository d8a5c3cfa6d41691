"""The one number format and the escaping rules (perfdiff.report.format, perfdiff.report.table)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfdiff.report.format import (
    display_name,
    fmt_int,
    fmt_ms,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pp,
    md_cell,
    md_code,
    shorten_middle,
)
from perfdiff.report.table import pipe_table, seed_pipe_table
from perfdiff.schema.names import base_name

NUMBER = re.compile(r"^[+-]?\d{1,3}(,\d{3})*\.\d+$")


def split_row(line: str) -> list[str]:
    """Cells of a GFM table row: split on pipes not escaped by a backslash."""
    cells, cur, i = [], "", 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            cur += line[i : i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur)
    return cells[1:-1]


def unescape_cell(cell: str) -> str:
    return re.sub(r"\\(.)", r"\1", cell.strip())


def visible(text: str) -> str:
    """What a name becomes on one line: breaks/tabs -> space, control chars -> U+FFFD."""
    return "".join(
        ch if ch.isprintable() or ch == " " else " " if ch.isspace() else "\ufffd"
        for ch in text
    )


@given(st.floats(allow_nan=True, allow_infinity=True), st.integers(0, 4), st.booleans())
def test_fmt_num_is_one_format(value: float, decimals: int, signed: bool) -> None:
    text = fmt_num(value, decimals, signed=signed)
    if math.isnan(value):
        assert text == "n/a"
    elif math.isinf(value):
        assert text in ("inf", "-inf")
    else:
        assert "nan" not in text
        assert not re.fullmatch(r"-0(\.0*)?", text)  # no negative zero
        digits = text.replace(",", "")
        assert abs(float(digits) - value) <= 0.5 * 10 ** -decimals * (1 + 1e-9) + abs(value) * 1e-15
        if decimals:
            assert NUMBER.match(text), text
        if signed and float(digits) > 0:
            assert text.startswith("+")


def test_fmt_num_examples() -> None:
    assert fmt_num(1001081.25) == "1,001,081.25"
    assert fmt_num(-0.001) == "0.00"  # no negative zero
    assert fmt_ms(1.5, signed=True) == "+1.500"
    assert fmt_pct(4.656, signed=True) == "+4.66%"
    assert fmt_pct(math.nan) == "n/a"
    assert fmt_pp(-5.91) == "-5.91 pp"
    assert fmt_int(1234567) == "1,234,567"


@given(st.floats(min_value=0.0, max_value=1.0))
def test_fmt_p_never_prints_zero(p: float) -> None:
    text = fmt_p(p)
    assert text == "<0.001" or (0.001 <= float(text) <= 1.0)
    assert text not in ("0", "0.000")


def test_fmt_p_nan_is_na() -> None:
    assert fmt_p(math.nan) == "n/a"
    assert fmt_p(0.0) == "<0.001"
    assert fmt_p(0.0123) == "0.012"


@given(st.lists(st.text(max_size=40), min_size=1, max_size=4))
def test_md_cell_cannot_break_a_table(names: list[str]) -> None:
    table = pipe_table(["a", "b"], [[md_cell(n), "x"] for n in names])
    lines = table.splitlines()
    assert len(lines) == len(names) + 2
    for line, name in zip(lines[2:], names, strict=True):
        cells = split_row(line)
        assert len(cells) == 2
        assert unescape_cell(cells[0]) == visible(name).strip()
        assert not re.search(r"(?<!\\)[<`]", cells[0])  # every < and ` escaped


@given(st.text(min_size=1, max_size=30))
def test_md_code_holds_any_text(text: str) -> None:
    span = md_code(text)
    fence = re.match(r"^`+", span)
    assert fence is not None
    n = len(fence.group(0))
    inner = span[n:-n]
    assert span.endswith("`" * n)
    assert "`" * n not in inner  # the fence cannot close early
    one_line = visible(text)
    if inner.startswith(" ") and inner.endswith(" ") and len(inner) >= 2 and (
        one_line != inner
    ):
        inner = inner[1:-1]
    assert inner == one_line


@given(st.text(max_size=300), st.integers(10, 120))
def test_shorten_middle_bounds(text: str, width: int) -> None:
    short = shorten_middle(text, width)
    assert len(short) <= width or short == visible(text)


def test_shortened_names_stay_distinct_in_their_tails() -> None:
    a = "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_tn" * 2
    b = "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x6_tn" * 2
    assert display_name(a) != display_name(b)
    assert len(display_name(a)) == 72


@pytest.mark.parametrize(
    ("demangled", "short"),
    [
        ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<"
         "at::native::AddFunctor<float> >(at::TensorIteratorBase&, "
         "at::native::AddFunctor<float> const&)::{lambda(int)#1}>(int, "
         "at::native::gpu_kernel_impl<...>::{lambda(int)#1})", "elementwise_kernel"),
        ("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::Half, long, "
         "unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::Half, unsigned int>)",
         "indexSelectLargeIndex"),
        ("ampere_fp16_s16816gemm_fp16_64x128_ldg8_relu_f2f_tn",
         "ampere_fp16_s16816gemm_fp16_64x128_ldg8_relu_f2f_tn"),
        ("void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_64x4_nn_align8>"
         "(cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_64x4_nn_align8::Params)", "Kernel"),
        ("Memcpy DtoH (Device -> Pageable)", "DtoH"),
    ],
)
def test_base_name(demangled: str, short: str) -> None:
    assert base_name(demangled) == short


def test_seed_pipe_table_layout() -> None:
    """tabulate's rules: numeric columns right-aligned with floatfmt, mixed ones str()."""
    text = seed_pipe_table(["Time Rank", "n (us)", "a (us)"],
                           [[1, 771618.75, 1001081.25], [2, 737434.75, "-"]])
    assert text.splitlines() == [
        "|   Time Rank |     n (us) | a (us)     |",
        "|------------:|-----------:|:-----------|",
        "|           1 | 771,618.75 | 1001081.25 |",
        "|           2 | 737,434.75 | -          |",
    ]


@pytest.mark.parametrize(
    ("full", "shown"),
    [
        ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,"
         " std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, "
         "std::array<char*, 3ul>)",
         "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3…"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
         "lerp_scalar_kernel(at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#1}::"
         "operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}, "
         "std::array<char*, 3ul> >(int, ...)",
         "vectorized_elementwise_kernel<4, lerp_scalar_kernel(…)::λ, array<char*,…"),
        ("void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, unsigned int)",
         "RMSNormKernel<8u, __nv_bfloat16>(…)"),
        ("Memcpy DtoH (Device -> Pageable)", "Memcpy DtoH (Device -> Pageable)"),
        ("[GPU idle]", "[GPU idle]"),
    ],
)
def test_display_name_keeps_what_tells_kernels_apart(full: str, shown: str) -> None:
    assert display_name(full) == shown


@pytest.mark.parametrize("name", ["aten::linear > aten::addmm", "AddmmBackward0 > aten::mm",
                                  "aten::scaled_dot_product_attention > "
                                  "aten::_cudnn_attention_forward", "aten::add"])
def test_a_framework_op_keeps_its_namespace(name: str) -> None:
    assert display_name(name, 200) == name


def test_a_kernel_signature_is_still_compacted() -> None:
    assert display_name("void at::native::vectorized_elementwise_kernel<4, "
                        "at::native::FillFunctor<float> >(int)", 200).startswith(
                            "vectorized_elementwise_kernel<4")
