"""How each torch/Kineto version spells what the reader needs: categories, graph launches.

Why a table: Kineto renamed its categories (torch 1.8/1.9 wrote ``"Kernel"``, ``"Runtime"``,
``"Memcpy"``, ``"Memset"``, with ``ProfilerStep#N`` as an ``"Operator"``; later versions write
``"kernel"``, ``"cuda_runtime"``, ``"gpu_memcpy"``, ``"gpu_memset"``, ``"user_annotation"``),
ROCm builds write HIP calls under the same or ``hip_*`` names, and more spellings will come.
(Graph replays are told by the data, not by a name: several kernels share one correlation;
the names below only say which launch calls may do that at all.)
Each spelling seen in a real trace is one row here, and ``tests/readers`` checks the table
against the real traces (fixtures/kineto/foreign); the rest of the reader speaks the canonical
names only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

KERNEL: Final = "kernel"
MEMCPY: Final = "gpu_memcpy"
MEMSET: Final = "gpu_memset"
LAUNCH: Final = "cuda_runtime"  # a host call that may launch GPU work (its correlation)
CPU_RANGE: Final = "user_annotation"
GPU_RANGE: Final = "gpu_user_annotation"
STEP_OPERATOR: Final = "operator"  # a CPU op: kept only when it is a ProfilerStep#N
COUNTERS: Final = "hardware_counters"
PROFILER_RANGE: Final = "cuda_profiler_range"
HOST_OP: Final = "cpu_op"  # a framework op on a CPU thread (readers/torch_profiler/ops.py)
PY_FUNCTION: Final = "python_function"  # a Python frame; ``nn.Module: X`` ones name modules

GPU_KINDS: Final = (KERNEL, MEMCPY, MEMSET)

# category as written -> canonical kind (torch version that wrote it, where known)
CATEGORY_SPELLINGS: Final[dict[str, str]] = {
    "kernel": KERNEL,  # torch >= 1.10
    "Kernel": KERNEL,  # torch 1.8, 1.9
    "gpu_memcpy": MEMCPY,
    "Memcpy": MEMCPY,  # torch 1.8, 1.9
    "gpu_memset": MEMSET,
    "Memset": MEMSET,  # torch 1.8, 1.9
    "cuda_runtime": LAUNCH,  # also HIP calls on ROCm builds (hipLaunchKernel, hipGraphLaunch)
    "cuda_driver": LAUNCH,  # cuLaunchKernel (Triton), torch >= 2.1
    "hip_runtime": LAUNCH,
    "hip_driver": LAUNCH,
    "Runtime": LAUNCH,  # torch 1.8, 1.9
    "Driver": LAUNCH,
    "user_annotation": CPU_RANGE,
    "gpu_user_annotation": GPU_RANGE,
    "Operator": STEP_OPERATOR,  # torch 1.8, 1.9: CPU ops, ProfilerStep#N among them
    "hardware_counters": COUNTERS,
    "cuda_profiler_range": PROFILER_RANGE,
    "cpu_op": HOST_OP,  # torch >= 1.10 (torch 1.8's "Operator" ops are not linked)
    "python_function": PY_FUNCTION,  # with_stack / with_modules
}

# category -> the torch versions that write it: Kineto renamed its categories in torch 1.10
# ("Kernel" -> "kernel", "Operator" -> "cpu_op"). A trace does not record its torch version, so
# this is how the line about a trace perfdiff cannot read names it (checked against the real
# traces of fixtures/kineto: the HolisticTraceAnalysis torch 1.8 trace, torch 2.x recordings)
TORCH_OF_CATEGORY: Final[dict[str, str]] = {
    "Kernel": "torch 1.8-1.9",
    "Memcpy": "torch 1.8-1.9",
    "Memset": "torch 1.8-1.9",
    "Runtime": "torch 1.8-1.9",
    "Operator": "torch 1.8-1.9",
    "kernel": "torch >= 1.10",
    "cpu_op": "torch >= 1.10",
    "cuda_runtime": "torch >= 1.10",
}

# Launch calls that start several kernels under one correlation id, as substrings of the API
# name (any version suffix: cudaGraphLaunch, cudaGraphLaunch_v10000, cuGraphLaunch,
# hipGraphLaunch). Every other launch starts one kernel, so kernels sharing its correlation are
# damage (a kernel moved to another launch lands in that launch's step: issue 25, rows flipped).
# Seen in real traces: cudaGraphLaunch (HTA trace_diff/test, CUDA), hipGraphLaunch (vLLM and
# SGLang on ROCm, fixtures/kineto/foreign). From the CUDA/HIP API references, not yet seen in a
# trace: cudaLaunchCooperativeKernelMultiDevice (one call, one kernel per device),
# hipLaunchCooperativeKernelMultiDevice, hipExtLaunchMultiKernelMultiDevice.
MULTI_KERNEL_LAUNCHES: Final = ("GraphLaunch", "MultiDevice", "MultiKernel")

# top-level keys that tell which software wrote a trace, for the line that says what a trace
# perfdiff cannot read was missing
WRITER_KEYS: Final = ("schemaVersion", "cuda_runtime_version", "hip_runtime_version",
                      "roctracer_version", "cupti_version")


def torch_of(categories: Iterable[str]) -> str:
    """Which torch wrote a trace, as its category spellings tell ("an unknown torch version (not
    recorded)" when none is telling; both eras named when the spellings are mixed)."""
    eras = sorted({TORCH_OF_CATEGORY[c] for c in categories if c in TORCH_OF_CATEGORY})
    return " or ".join(eras) + " by its category spellings" if eras else \
        "an unknown torch version (not recorded)"


def known_gpu_spellings() -> str:
    """The GPU-event categories perfdiff reads, for the line that says none was found."""
    return ", ".join(repr(cat) for cat, kind in CATEGORY_SPELLINGS.items() if kind in GPU_KINDS)
