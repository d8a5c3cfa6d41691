"""Kernels the benchmark workloads time: RMSNorm in plain PyTorch ops, TorchScript, Triton and a
C++/CUDA extension, and the float64 reference checks every one of them must pass first.

Modules here import torch (and triton) at import time; the workloads import them lazily, inside
``setup``, so ``import perfdiff.collect.workloads`` stays free of torch.
"""

from __future__ import annotations
