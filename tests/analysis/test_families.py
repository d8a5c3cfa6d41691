"""Kernel families against real names (fixtures/kernel-names, with provenance)."""

from __future__ import annotations

import gzip
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfdiff.analysis.families import classify
from perfdiff.analysis.family_rules import FAMILY_RULES, OTHER

TABLE = Path(__file__).parents[2] / "fixtures" / "kernel-names" / "kernel-names.tsv.gz"


def _rows() -> list[dict[str, str]]:
    with gzip.open(TABLE, "rt") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"), strict=True)) for line in fh]


ROWS = _rows()
NAMED = [r for r in ROWS if not r["name"].startswith("(rest:")]


def test_the_table_holds_at_least_200_real_names_from_cuda_and_rocm() -> None:
    names = {r["name"] for r in NAMED}
    assert len(names) >= 200
    assert any(n.startswith("Cijk_") for n in names)  # rocBLAS / hipBLASLt (ROCm)
    assert any(n.startswith("nvjet_") for n in names)  # cuBLAS (CUDA)


def test_every_labelled_name_gets_its_label() -> None:
    wrong = [
        (r["name"][:100], (r["family"], r["precision"], r["engine"]), classify(r["name"]))
        for r in NAMED
        if (classify(r["name"]).family, classify(r["name"]).precision,
            classify(r["name"]).engine) != (r["family"], r["precision"], r["engine"])
    ]
    assert not wrong, wrong[:5]


def test_families_cover_95_percent_of_kernel_time_in_every_source() -> None:
    total: dict[str, float] = defaultdict(float)
    other: dict[str, float] = defaultdict(float)
    for r in ROWS:
        us = float(r["time_us"])
        total[r["source"]] += us
        if r["name"].startswith("(rest:") or classify(r["name"]).family == OTHER:
            other[r["source"]] += us  # the unlisted rest counts as "other": the worst case
    shares = {s: other[s] / total[s] for s in total if total[s] > 0}
    assert len(shares) >= 40
    assert max(shares.values()) < 0.05, sorted(shares.items(), key=lambda kv: -kv[1])[:3]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", ("GEMM", "bf16", "tensor core")),
        ("nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_bias_NNT", ("GEMM", "fp16", "tensor core")),
        ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_"
         "aligna4_alignc4_execute_kernel__5x_cublas", ("GEMM", "fp32", "SIMT")),
        ("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>("
         "cutlass_80_simt_sgemm_64x64_8x5_nn_align1::Params)", ("GEMM", "fp32", "SIMT")),
        ("Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x16x1_SN_1LDSB0", ("GEMM", "bf16",
                                                                      "tensor core")),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_"
         "cga1x1x1_kernel0_0", ("attention", "fp16/bf16", "tensor core")),
        ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
         "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
         ("softmax", "fp32", "")),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         ("communication", "", "")),
        ("triton_poi_fused__unsafe_view_add_addmm_clone_convolution_mul_native_layer_norm_7",
         ("elementwise", "", "")),
    ],
)
def test_names_a_reader_knows(name: str, expected: tuple[str, str, str]) -> None:
    got = classify(name)
    assert (got.family, got.precision, got.engine) == expected


def test_transfers_are_copies_by_type_not_name() -> None:
    assert classify("Memcpy HtoD", "memcpy").family == "copy/memset"
    assert classify("Memset", "memset").family == "copy/memset"


def test_every_rule_is_used_by_some_real_name() -> None:
    """A rule no real name needs is a guess: each family row must classify a name in the table."""
    used = {classify(r["name"]).family for r in NAMED}
    assert {family for family, _ in FAMILY_RULES} <= used


@given(st.text(max_size=300))
def test_any_text_gets_a_family_and_never_raises(name: str) -> None:
    got = classify(name)
    assert got.family
