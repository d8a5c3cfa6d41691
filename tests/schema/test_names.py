"""Short kernel names keep what tells kernels apart (issue 24): ``kernels --by name`` merged every
``cutlass::Kernel2<...>`` of a cuBLAS program into one 725-launch row, and every
``device_kernel<...>`` of a DeepSeek trace into one.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from perfdiff.schema.names import base_name, distinct_short_names, template_arguments

CUTLASS_A = ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"
             "(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)")
CUTLASS_B = ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>"
             "(cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4::Params)")
DEVICE_A = ("void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwd<"
            "128, true, false>, flash::CollectiveEpilogueFwd<128> > >(flash::Params)")
DEVICE_B = ("void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwd<"
            "64, false, false>, flash::CollectiveEpilogueFwd<64> > >(flash::Params)")
ALONE = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >(int)"


def test_kernels_sharing_a_bare_name_keep_their_template_arguments() -> None:
    names = [CUTLASS_A, CUTLASS_B, DEVICE_A, DEVICE_B, ALONE, CUTLASS_A]
    short = distinct_short_names(names)
    assert short[0] == "Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"
    assert short[1] == "Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>"
    assert short[2] == ("device_kernel<FlashAttnFwdSm90<CollectiveMainloopFwd<128, true, false>,"
                        " CollectiveEpilogueFwd<128>>>")
    assert short[3] != short[2]
    assert short[4] == "vectorized_elementwise_kernel"  # alone: the bare name, as the seeds
    assert short[5] == short[0]  # one kernel, one name


def test_template_arguments_are_the_functions_own() -> None:
    assert template_arguments(CUTLASS_A) == "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4"
    assert template_arguments("ampere_fp16_s16816gemm_fp16_64x128_ldg8_relu_f2f_tn") == ""
    assert template_arguments("void f<int>(g<float>)") == "int"


@given(st.lists(st.sampled_from([CUTLASS_A, CUTLASS_B, DEVICE_A, DEVICE_B, ALONE,
                                 "void ns::k<a::x>(int)", "void other::k<b::x>(int)",
                                 "k", "void k<(anonymous namespace)::T>()"]),
                min_size=1, max_size=12))
def test_short_names_are_one_per_kernel(names: list[str]) -> None:
    """Equal short names exactly when the demangled names are equal."""
    short = distinct_short_names(names)
    for a, sa in zip(names, short, strict=True):
        for b, sb in zip(names, short, strict=True):
            assert (sa == sb) == (a == b)
        assert base_name(a) in sa or sa == a
