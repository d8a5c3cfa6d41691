"""``gpt-infer``: forward pass of a decoder-only transformer in fp16, one batch per cycle.

Why it ends each cycle by copying the next-token ids to the host: that is what a real
inference loop does (it needs the tokens), and it makes a cycle's host interval cover its
GPU work, so cycle times are GPU times plus launch overhead, not launch time alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfdiff.collect.workloads._transformer import (
    AttentionKind,
    DTypeName,
    ModelShape,
    build_model,
    torch_dtype,
)
from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParams, run_cycles
from perfdiff.markers import CycleMarker


@dataclass(frozen=True)
class GptInferParams(WorkloadParams):
    """Model size and input shape (defaults: GPU-bound cycles of a few ms on an H100/H200).

    ``fail_after_cycles`` (default off) raises inside that cycle: it exists to test, on the
    GPU, that a failing workload still leaves a valid incomplete run file.
    """

    layers: int = 6
    d_model: int = 1024
    heads: int = 16
    vocab: int = 8192
    batch: int = 32
    seq_len: int = 256
    dtype: DTypeName = "fp16"
    attention: AttentionKind = "manual"
    seed: int = 0
    fail_after_cycles: int = -1


def import_torch_cuda() -> Any:
    """torch with a usable CUDA device, or a one-line CollectorUnavailableError."""
    from perfdiff.errors import CollectorUnavailableError

    try:
        import torch
    except ImportError:
        raise CollectorUnavailableError(
            "built-in workloads need PyTorch: pip install torch (a CUDA build)"
        ) from None
    if not torch.cuda.is_available():
        raise CollectorUnavailableError(
            "no CUDA GPU is visible to PyTorch; run perfdiff collect on a machine with an "
            "NVIDIA GPU and a CUDA build of torch"
        )
    return torch


class GptInfer(Workload):
    """Inference forward pass; one case."""

    name = "gpt-infer"
    summary = "decoder-only transformer forward (fp16), like the inference seed table"
    params_class = GptInferParams

    def setup(self, device: str) -> None:
        p = self.params
        assert isinstance(p, GptInferParams)
        torch = import_torch_cuda()
        self._torch = torch
        torch.manual_seed(p.seed)
        shape = ModelShape(
            layers=p.layers, d_model=p.d_model, heads=p.heads, vocab=p.vocab,
            max_seq=p.seq_len, dropout=0.0, attention=p.attention,
        )
        self._model = build_model(torch, shape).to(device=device, dtype=torch_dtype(torch, p.dtype))
        self._model.eval()
        self._tokens = torch.randint(0, p.vocab, (p.batch, p.seq_len), device=device)
        torch.cuda.synchronize()

    def _step(self) -> Any:
        with self._torch.inference_mode():
            logits = self._model(self._tokens)
            return logits[:, -1, :].argmax(dim=-1).cpu()

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        p = self.params
        assert isinstance(p, GptInferParams)
        if p.fail_after_cycles < 0:
            run_cycles(marker, plan, self._step)
            return
        for i in range(plan.warmup + plan.measured):
            with marker.cycle("", warmup=i < plan.warmup):
                self._step()
                if i == p.fail_after_cycles:
                    raise RuntimeError(f"fail_after_cycles={i} reached (test of partial files)")

    def teardown(self) -> None:
        self._model = None
        self._tokens = None


__all__ = ["GptInfer", "GptInferParams", "import_torch_cuda"]
