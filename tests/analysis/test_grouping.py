"""``--by family|op|module`` (analysis/grouping.py) on real inputs: the rows are the groups,
with the same statistics; an input that does not know the group is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfdiff.analysis.grouping import NO_OP_LABEL, grouped_run_file
from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.errors import InputError
from perfdiff.readers.torch_profiler import read_torch_profiler
from tests.door import compare_inputs

FIXTURES = Path(__file__).parents[2] / "fixtures"
KINETO = FIXTURES / "kineto"
_cache: dict[tuple[str, str], Comparison] = {}


def _by(pair: str, by: str) -> Comparison:
    pairs = {"timm": ("timm-vit-bf16.pt.trace.json.gz", "timm-vit-fp32.pt.trace.json.gz"),
             "gpt2": ("gpt2-generate-eager.pt.trace.json.gz",
                      "gpt2-generate-sdpa.pt.trace.json.gz")}
    if (pair, by) not in _cache:
        normal, abnormal = (KINETO / name for name in pairs[pair])
        _cache[(pair, by)] = compare_inputs(normal, abnormal, CompareOptions(by=by))
    return _cache[(pair, by)]


def _leads(c: Comparison) -> list[str]:
    return [f.function for f in c.findings] or [d.function for d in c.described]


def test_timm_by_op_leads_with_the_gemm_ops() -> None:
    c = _by("timm", "op")
    functions = {r.function for r in c.rows}
    assert {"aten::linear > aten::addmm", "AddmmBackward0 > aten::mm"} <= functions
    first_op = next(f for f in _leads(c) if f != "[GPU idle]")
    assert first_op in ("AddmmBackward0 > aten::mm", "aten::linear > aten::addmm")
    assert not any(f.startswith("[") and f != "[GPU idle]" for f in functions)  # no pseudo rows
    assert any("--by op" in note for note in c.notes)
    assert c.headline is not None and c.headline.parts[0].label == "GEMM"  # still by family


def test_gpt2_by_op_names_sdpa_against_softmax_and_bmm() -> None:
    c = _by("gpt2", "op")
    described = {d.function: d for d in c.described}
    sdpa = [f for f in described if f.startswith("aten::scaled_dot_product_attention > ")]
    assert sdpa, sorted(described)
    assert described[sdpa[0]].change == "appeared"
    for eager_op in ("aten::softmax > aten::_softmax", "aten::matmul > aten::bmm"):
        assert described[eager_op].change == "vanished"


def test_by_family_rows_are_families() -> None:
    c = _by("timm", "family")
    assert {"GEMM", "attention", "elementwise"} <= {r.function for r in c.rows}
    assert next(f for f in _leads(c) if f != "[GPU idle]") == "GEMM"


def test_by_op_on_a_perfdiff_recording_says_it_does_not_know() -> None:
    with pytest.raises(InputError) as caught:
        compare_inputs(FIXTURES / "timm" / "timm-vit-bf16.json.gz",
                       FIXTURES / "timm" / "timm-vit-fp32.json.gz", CompareOptions(by="op"))
    line = str(caught.value)
    assert "\n" not in line and "perfdiff collect" in line and "--by op" in line


def test_by_module_on_a_trace_without_modules_says_so() -> None:
    with pytest.raises(InputError, match="with_modules"):
        compare_inputs(KINETO / "timm-vit-bf16.pt.trace.json.gz",
                       KINETO / "timm-vit-fp32.pt.trace.json.gz", CompareOptions(by="module"))


def test_unknown_ops_go_to_a_row_that_says_so() -> None:
    rf = read_torch_profiler([KINETO / "foreign" / "vllm-decode-full.json.gz"], ops=True)
    grouped = grouped_run_file(rf, "op", "vllm")
    names = [s.demangled for s in grouped.strings]
    assert NO_OP_LABEL in names
    k = grouped.runs[0].kernels
    assert k.name_id.size == rf.runs[0].kernels.name_id.size  # no launch lost
