"""TraceLens' H100 vs MI300X traces of one model (fixtures/kineto/tracelens, recorded by AMD):
the headline names the family that moved most, and the NVIDIA GEMMs are paired with the
rocBLAS/hipBLASLt ``Cijk_...`` kernels that took their place (issue 23's acceptance)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfdiff.analysis.families import classify
from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.report.markdown import render_markdown
from tests.door import compare_inputs

TRACELENS = Path(__file__).parents[2] / "fixtures" / "kineto" / "tracelens"
MODELS = ("bert-small", "falconsai-nsfw")
_cache: dict[str, Comparison] = {}


def _compare(model: str) -> Comparison:
    if model not in _cache:
        _cache[model] = compare_inputs(TRACELENS / f"h100-{model}.json.gz",
                                       TRACELENS / f"mi300-{model}.json.gz",
                                       CompareOptions(force=True))
    return _cache[model]


@pytest.mark.parametrize("model", MODELS)
def test_the_headline_names_the_family_that_moved_most(model: str) -> None:
    c = _compare(model)
    assert c.headline is not None
    families = [p for p in c.headline.parts if p.kind == "family"]
    moved_most = max(families, key=lambda p: abs(p.delta_ms))
    assert moved_most.label == "attention"  # flash_fwd_kernel -> attn_fwd (Triton, AMD)
    text = render_markdown(c)
    headline = text[text.index("## Headline"):text.index("## 1.")]
    assert "| attention " in headline
    # one profiled step per side: described, never "no function needs investigation"
    assert "not tested (1 vs 1 cycles)" in headline
    assert "no function needs investigation" not in text


@pytest.mark.parametrize("model", MODELS)
def test_nvidia_gemms_are_paired_with_rocblas_cijk_kernels(model: str) -> None:
    c = _compare(model)
    gemm = [r for r in c.replacements
            if r.function.startswith("[replaced] GEMM") and "Tensile" in r.function]
    assert gemm, [r.function for r in c.replacements]
    for member in gemm[0].members:
        assert all(classify(n).library in ("cuBLAS", "CUTLASS") for n in member.before)
        assert all(n.startswith("Cijk_") for n in member.after)
    rows = {r.function for r in c.rows} | {d.function for d in c.described}
    assert gemm[0].function in rows  # ranked with every other change


@pytest.mark.parametrize("model", MODELS)
def test_the_parts_add_up_to_the_cycle_time_change(model: str) -> None:
    c = _compare(model)
    assert c.headline is not None
    total = sum(p.delta_ms for p in c.headline.parts)
    assert total == pytest.approx(c.headline.delta_ms, rel=1e-9, abs=1e-9)
    assert total == pytest.approx(c.cycle_time.delta_ms, rel=0.01)


def test_the_op_view_names_the_same_ops_on_both_vendors() -> None:
    c = compare_inputs(TRACELENS / "h100-bert-small.json.gz",
                       TRACELENS / "mi300-bert-small.json.gz", CompareOptions(force=True, by="op"))
    changes = {d.function: d for d in c.described}
    linear = changes["aten::linear > aten::addmm"]
    assert linear.time_ms_normal > 0 and linear.time_ms_abnormal > 0  # one op, two libraries
    sdpa = changes["aten::scaled_dot_product_attention > aten::_flash_attention_forward"]
    assert sdpa.change == "slower"
