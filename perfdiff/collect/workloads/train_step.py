"""``train-step``: one training step of the same transformer per cycle.

Dropout, cross-entropy loss, backward and AdamW, like the training seed table. Mixed
precision (autocast to ``dtype``) with fp32 master weights, as real training does.
``optimizer=fused`` is PyTorch's single-kernel AdamW; ``foreach`` and ``loop`` are the
multi-tensor and per-parameter implementations (a realistic regression: a config or version
change that silently loses the fused path multiplies the optimizer's kernel count).
Each cycle ends with ``loss.item()``, the sync every training loop does for logging.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from perfdiff.collect.workloads._transformer import (
    AttentionKind,
    DTypeName,
    ModelShape,
    build_model,
    torch_dtype,
)
from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParams, run_cycles
from perfdiff.collect.workloads.gpt_infer import import_torch_cuda
from perfdiff.markers import CycleMarker

OptimizerKind = Literal["fused", "foreach", "loop"]


@dataclass(frozen=True)
class TrainStepParams(WorkloadParams):
    """Model size, input shape and training knobs."""

    layers: int = 6
    d_model: int = 1024
    heads: int = 16
    vocab: int = 8192
    batch: int = 16
    seq_len: int = 256
    dtype: DTypeName = "bf16"
    attention: AttentionKind = "manual"
    dropout: float = 0.1
    lr: float = 3e-4
    optimizer: OptimizerKind = "fused"
    seed: int = 0


class TrainStep(Workload):
    """Training step (forward, loss, backward, AdamW); one case."""

    name = "train-step"
    summary = "transformer training step (dropout, AdamW, loss), like the training seed table"
    params_class = TrainStepParams

    def setup(self, device: str) -> None:
        p = self.params
        assert isinstance(p, TrainStepParams)
        torch = import_torch_cuda()
        self._torch = torch
        torch.manual_seed(p.seed)
        shape = ModelShape(
            layers=p.layers, d_model=p.d_model, heads=p.heads, vocab=p.vocab,
            max_seq=p.seq_len, dropout=p.dropout, attention=p.attention,
        )
        self._model = build_model(torch, shape).to(device=device)
        self._model.train()
        kwargs: dict[str, Any] = {"lr": p.lr}
        if p.optimizer == "fused":
            kwargs["fused"] = True
        else:
            kwargs["foreach"] = p.optimizer == "foreach"
        self._opt = torch.optim.AdamW(self._model.parameters(), **kwargs)
        self._dtype = torch_dtype(torch, p.dtype)
        self._inputs = torch.randint(0, p.vocab, (p.batch, p.seq_len), device=device)
        self._targets = torch.randint(0, p.vocab, (p.batch, p.seq_len), device=device)
        self._vocab = p.vocab
        torch.cuda.synchronize()

    def _step(self) -> float:
        torch = self._torch
        self._opt.zero_grad(set_to_none=True)
        enabled = self._dtype != torch.float32
        with torch.autocast("cuda", dtype=self._dtype, enabled=enabled):
            logits = self._model(self._inputs)
            loss = torch.nn.functional.cross_entropy(
                logits.view(-1, self._vocab).float(), self._targets.view(-1)
            )
        loss.backward()
        self._opt.step()
        return float(loss.item())

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        run_cycles(marker, plan, self._step)

    def teardown(self) -> None:
        self._model = None
        self._opt = None


__all__ = ["TrainStep", "TrainStepParams"]
