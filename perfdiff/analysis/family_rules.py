"""Kernel-name rules as data: family, precision and engine of a GPU kernel.

Why a table: kernel names change with every library release and vendor (cuBLAS ``nvjet_…``,
cuBLASLt ``sm90_xmma_…``, CUTLASS, rocBLAS/hipBLASLt Tensile ``Cijk_…``, MIOpen, Triton,
Inductor), so the knowledge lives here as ordered (label, pattern) rows, not as ``if`` chains.
``families.py`` applies them; ``tests/analysis/test_families.py`` checks them against
``fixtures/kernel-names/kernel-names.tsv`` (real names from CUDA and ROCm traces, with
provenance). The first matching row wins, so specific rows (a convolution's implicit GEMM, a
GEMM's split-K reduction) come before generic ones ("gemm", "reduce").

Patterns are Python regular expressions searched (not matched) in the demangled name,
case-insensitively unless they start with ``(?-i)``.
"""

from __future__ import annotations

from typing import Final

GEMM: Final = "GEMM"
ATTENTION: Final = "attention"
CONVOLUTION: Final = "convolution"
NORMALIZATION: Final = "normalization"
SOFTMAX: Final = "softmax"
ELEMENTWISE: Final = "elementwise"
REDUCTION: Final = "reduction"
COPY: Final = "copy/memset"
INDEXING: Final = "indexing"  # gather, scatter, embedding lookups: data-dependent addressing
COMMUNICATION: Final = "communication"
OPTIMIZER: Final = "optimizer"
SOLVER: Final = "solver"  # dense linear algebra beyond GEMM (cuSOLVER, MAGMA, rocSOLVER)
# a loop body launched by a portability layer or an offloading compiler (Kokkos, RAJA, OpenMP
# target, CloverLeaf's par_ranged): the name says "a loop over a range", not what
# the body computes, so calling it elementwise would be a guess
PARALLEL_LOOP: Final = "parallel loop"
OTHER: Final = "other"

# (family, pattern), first match wins.
FAMILY_RULES: Final[tuple[tuple[str, str], ...]] = (
    # collectives first: NCCL's names contain "reduce", "copy", "Sum"
    (COMMUNICATION, r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|alltoall|cross_device"),
    # writes into a KV cache name the attention backend they serve ("..._flash_kernel")
    (COPY, r"reshape_and_cache|store_kvcache|append_paged_kv_cache|kv_cache_copy|"
           r"page_indices"),
    # Inductor's Triton kernels list every op they fused; their prefix says what they do
    (ELEMENTWISE, r"^triton_poi_"),
    (NORMALIZATION, r"^triton_(red|per)_\w*(layer_norm|rms|rsqrt|group_norm|batch_norm)"),
    (REDUCTION, r"^triton_(red|per)_"),
    (GEMM, r"^triton_tem_|^triton_.*_mm_"),
    # portability layers name the loop construct, then the body (a functor or lambda whose own
    # name may hold any word: "copy", "sum", "norm"), so the construct decides. A reduction
    # construct reduces whatever its body is; a for-each construct is a parallel loop.
    # (Kokkos: Impl::ParallelFor/ParallelReduce/ParallelScan<functor>; RAJA: forall_cuda_kernel;
    # OpenMP target: LLVM __omp_offloading_<dev>_<file>_<fn>_l<line>, NVHPC nvkernel_<fn>_F1L<line>)
    (REDUCTION, r"par_reduce|ParallelReduce|ParallelScan"),
    (PARALLEL_LOOP, r"par_ranged|ParallelFor|forall_cuda_kernel|__omp_offloading_|^nvkernel_"),
    # BLAS level 1 y = a*x + y (cuBLAS/hipBLAS axpy, hand-written saxpy/daxpy): a map, truly
    (ELEMENTWISE, r"\b[sdchz]?axpy|axpby"),
    # elementwise kernels whose names hold words of other families ("normal", "embedding")
    (ELEMENTWISE, r"rotary|distribution_|philox|dropout|bernoulli|arange|upsample|quantiz|"
                  r"fp8rowwise|qparam|hfp8"),
    (INDEXING, r"split_embedding|kv_indices"),
    # attention before GEMM: flash kernels name their GEMMs (wgmma, bmm)
    (ATTENTION, r"BatchPrefill|BatchDecode|MergeStates|flash(?!infer)|fmha|_sdpa_|sdpa_|"
                r"attention|attn_fwd|attn_bwd|_mha_|paged_?kv|"
                r"compute_dot_do_o|unpack_cudnn|cudnn::fusion"),
    (SOFTMAX, r"softmax"),
    # convolution before GEMM: cuDNN/MIOpen convolutions are implicit GEMMs
    (CONVOLUTION, r"conv(?!ert)|fprop|dgrad|wgrad|winograd|scudnn|implicit_gemm|"
                  r"igemm_(fwd|bwd|wrw)|im2col|im2d2col|cask_cudnn|fft2d_|_engine<|nhwc.*kernel_cudnn|"
                  r"computeOffsets|col2im"),
    (OPTIMIZER, r"multi_tensor_apply|foreach|adam|optimizer|sgd_|_sgd|\blamb\b|lamb_|"
                r"adagrad|momentum"),
    (SOLVER, r"sytrd|stedc|laed\d|syev|ormqr|orgqr|geqrf|getrf|potrf|trsm|trmm|lansy|lascl|"
             r"laset|magma|colperm|batch_fnrm|batch_eye|batch_symmetrize|column_rotate|"
             r"bubble_sort_onewarp|merge_ker|scale_max|xx_set_info|copy_info_kernel|"
             r"syr2k|larf|steqr|gesvd|getrs|_ker<|scal_kernel|\bepilogue<sytrd|row_rotate|"
             r"offA_stage|setup_vhat|lacpy|pegasus|cuds_scal|slansy|slaset"),
    (GEMM, r"(?<!fb)gemm|gemv|nvjet|Cijk_|cublas|hipblaslt|\bbmm_|wgmma|matmul|_mm_|"
           r"triton_tem_fused"),
    (NORMALIZATION, r"(layer|rms|batch|group|instance|_)_?norm|norm_?(fwd|bwd|kernel)|"
                    r"BatchNorm|GammaBeta|RowwiseMoments|bn_fw|bn_bw|FusedParams|"
                    r"ComputeInternalGradients|layer_?norm|rsqrt"),
    (COPY, r"memcpy|memset|copy|transpose|CatArray|nchwToNhwc|nhwcToNchw|permute|"
           r"\bcat_|_cat\b|clone"),
    (INDEXING, r"index|gather|scatter|embedding|embed|bounds_check|lookup|"
               r"to_dense_representation|offsets_range|krn_partial|"
               r"compute_num_of_partial_segments|compute_grad_weight|searchsorted|"
               r"compute_position|token_ids|moe::dev|routing"),
    (REDUCTION, r"lpnorm|reduce|reduction|triton_(red|per)_|cub::|rocprim|sort|scan|pool|argmax|"
                r"argmin|topk|cumsum|histogram|unique|_sum_|\bsum\b|mean|"
                r"compute_cuda_kernel"),
    (ELEMENTWISE, r"elementwise|triton_poi_|dropout|fill|distribution|philox|triu|tril|"
                  r"upsample|rotary|act_and_mul|silu|gelu|relu|sigmoid|tanh|where|"
                  r"SubTensorOp|\bfused_|_kernel_cuda|arange|\bpow\b|bernoulli|"
                  r"spin_kernel|quant|clamp|scalePackedTensor"),
)

# (precision, pattern), first match wins; the name must say it (template types included).
PRECISION_RULES: Final[tuple[tuple[str, str], ...]] = (
    ("fp8", r"e4m3|e5m2|float8|fp8|_f8_|\bF8"),
    # cuBLAS nvjet: the type letters after the arch (h: fp16, t: bf16, s: fp32)
    ("bf16", r"(?-i)nvjet(_sm\d+)?_t"),
    ("fp16", r"(?-i)nvjet(_sm\d+)?_h"),
    # Tensile (rocBLAS/hipBLASLt): Cijk_<A>_<B>_<types>; B = bf16, H = fp16, S = fp32
    ("bf16", r"(?-i)Cijk_A[a-z]+_B[a-z]+_B"),
    ("fp16", r"(?-i)Cijk_A[a-z]+_B[a-z]+_H"),
    ("fp32", r"(?-i)Cijk_A[a-z]+_B[a-z]+_S"),
    # cuDNN's generated attention kernels say "f16" for both 16-bit types
    ("fp16/bf16", r"cudnn_generated\w*_f16_"),
    ("tf32", r"tf32|xf32|s1688gemm(?!_bf16)|s1688fprop|tensor16x8x8"),
    ("bf16", r"bf16|bfloat16|Bfloat16"),
    ("fp16", r"fp16|f16f16|_f16_|half|hgemm|h884|h1688|h16816|__half|_hsh_|\bf16\b"),
    ("fp32", r"sgemm|scudnn|f32f32_f32f32|ffma|\bfloat\b|\bfloat[,>)]|_float_"),
    ("fp64", r"dgemm|\bdouble\b"),
)

# (engine, pattern), first match wins: does the kernel use tensor cores (matrix cores on AMD)?
ENGINE_RULES: Final[tuple[tuple[str, str], ...]] = (
    ("SIMT", r"simt|sgemm|ffma|scudnn|gemv|dgemm"),
    ("tensor core", r"tensorop|wgmma|hmma|nvjet|xmma_gemm_(bf16|f16|tf32|e4m3)|s16816|h16816|"
                    r"s1688|h1688|h884|s884|tensor16x8|_MI\d+x\d+|mfma|sdpa|flash(?!infer)|fmha|"
                    r"xmma_fprop_implicit_gemm_indexed_(tf32|bf16|f16)|Cijk_.*_MI\d"),
)

# (library, pattern), first match wins: which library or compiler built the kernel. Named in
# a replaced pair whose two kernels are of the same class (a cross-vendor or library change).
LIBRARY_RULES: Final[tuple[tuple[str, str], ...]] = (
    ("NCCL", r"nccl"),
    ("RCCL", r"rccl"),
    ("cuDNN", r"cudnn|cask_"),
    ("MIOpen", r"MIOpen|igemm_(fwd|bwd|wrw)|naive_conv"),
    ("Tensile (rocBLAS/hipBLASLt)", r"(?-i)^Cijk_"),
    ("Composable Kernel", r"ck_tile|\bck::|_ZN2ck|_ZN7ck_tile"),
    ("aiter", r"aiter"),
    ("CUTLASS", r"cutlass"),
    ("cuBLAS", r"nvjet|xmma|cublas|gemvx|gemv2|gemvNSP|gemmSN|gemmk1|splitKreduce|"
               r"(volta|ampere|turing|sm\d+)_[sdhc]?gemm"),
    ("cuSOLVER", r"sytrd|syevj|syevbj|stedc|laed\d|ormqr|geqrf|potrf|getrf"),
    ("MAGMA", r"magma"),
    ("FlashAttention", r"flash_fwd|flash_bwd|pytorch_flash|fmha"),
    ("Triton", r"^triton_|attn_fwd|_kernel_triton|triton"),
    ("ATen", r"at::native|at_cuda_detail|at::cuda"),
)
