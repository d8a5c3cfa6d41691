"""Launch-sequence alignment: anchors, stretches, like-for-like pairs and groups."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from perfdiff.analysis.alignment import anchors, replacements
from perfdiff.analysis.families import family_of

GEMM_BF16 = "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT"
GEMM_FP32 = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_ffma_execute_kernel__5x_cublas"
LN = "void at::native::vectorized_layer_norm_kernel<float, float, true>(int, float)"
CAST = "void at::native::vectorized_elementwise_kernel<8, bfloat16_copy_kernel_cuda>"
GELU = "void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>"
SDPA = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_kernel0_0"
SOFTMAX = "void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 6>"
GEMV = "void gemvNSP_kernel<__half, __half, __half, float, 1, 32, 4, 1024>"


def test_identical_sequences_are_all_anchors_and_replace_nothing() -> None:
    seq = [LN, GEMM_BF16, GELU, GEMM_BF16] * 12
    assert len(anchors(seq, seq)) == len(seq)
    assert replacements(seq, seq, family_of) == []


def test_a_precision_change_gives_one_to_one_gemm_pairs() -> None:
    normal = [LN, CAST, GEMM_BF16, GELU, CAST, GEMM_BF16] * 4
    abnormal = [LN, GEMM_FP32, GELU, GEMM_FP32] * 4
    found = replacements(normal, abnormal, family_of)
    assert len(found) == 8
    assert all(f.is_pair and f.before == (GEMM_BF16,) and f.after == (GEMM_FP32,)
               for f in found)


def test_an_attention_backend_change_is_one_group_per_layer() -> None:
    normal = [LN, GEMM_BF16, GEMV, SOFTMAX, GEMV, GEMM_BF16] * 3
    abnormal = [LN, GEMM_BF16, SDPA, GEMM_BF16] * 3
    found = replacements(normal, abnormal, family_of)
    assert [(f.before, f.after) for f in found] == [((GEMV, SOFTMAX, GEMV), (SDPA,))] * 3
    assert all(not f.is_pair for f in found)


def test_extra_launches_on_one_side_are_not_replacements() -> None:
    normal = [LN, GEMM_BF16, GELU] * 5
    abnormal = [LN, GEMM_BF16, GELU, CAST] * 5
    assert replacements(normal, abnormal, family_of) == []


def test_a_fused_kernel_replaced_by_a_loop_of_many_is_a_group() -> None:
    fused = "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>"
    normal = [LN, GEMM_BF16, fused]
    abnormal = [LN, GEMM_BF16, *([GELU, CAST] * 700)]
    (group,) = replacements(normal, abnormal, family_of)
    assert group.before == (fused,) and len(group.after) == 1400


names = st.sampled_from([LN, GEMM_BF16, GEMM_FP32, CAST, GELU, SDPA, SOFTMAX, GEMV])


@given(st.lists(names, max_size=60), st.lists(names, max_size=60))
def test_anchors_keep_order_and_name_and_replacements_use_unmatched_launches(
    a: list[str], b: list[str]
) -> None:
    pairs = anchors(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(i0 < i1 and j0 < j1 for (i0, j0), (i1, j1) in itertools.pairwise(pairs))
    anchored_a = {i for i, _ in pairs}
    anchored_b = {j for _, j in pairs}
    used_a: set[int] = set()
    for found in replacements(a, b, family_of):
        assert found.before and found.after
        assert not anchored_a & set(found.before_at) and not anchored_b & set(found.after_at)
        assert not used_a & set(found.before_at)  # a launch is replaced once
        used_a |= set(found.before_at)
        assert tuple(a[i] for i in found.before_at) == found.before
        assert tuple(b[j] for j in found.after_at) == found.after
