"""A small decoder-only transformer (GPT-style) in plain PyTorch, shared by gpt-infer and
train-step.

Why hand-written and not a library model: the kernels it launches should be the ordinary
ones a PyTorch user sees (cuBLAS GEMMs, layer norm, softmax, GELU, elementwise, dropout),
like the seeds' kernel tables, and nothing here may need a download. ``attention="manual"``
spells attention out (matmul, mask, softmax, matmul) as older GPT code does;
``attention="sdpa"`` uses ``scaled_dot_product_attention`` (one fused flash kernel), so the
two are a realistic "another kernel implementation" pair.

torch is imported by the caller and passed in: this module must import without torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

AttentionKind = Literal["manual", "sdpa"]
DTypeName = Literal["fp16", "bf16", "fp32"]


@dataclass(frozen=True)
class ModelShape:
    """Model size; ``d_ff`` is 4 x ``d_model`` as in GPT-2."""

    layers: int
    d_model: int
    heads: int
    vocab: int
    max_seq: int
    dropout: float
    attention: AttentionKind


def torch_dtype(torch: Any, name: DTypeName) -> Any:
    """The torch dtype for a ``--dtype`` name."""
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def build_model(torch: Any, shape: ModelShape) -> Any:
    """A ``torch.nn.Module`` mapping token ids (batch, seq) to logits (batch, seq, vocab)."""
    nn: Any = torch.nn
    module_base: Any = nn.Module
    functional = torch.nn.functional

    class Block(module_base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            d = shape.d_model
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.drop = nn.Dropout(shape.dropout)

        def attention(self, x: Any) -> Any:
            b, t, d = x.shape
            h = shape.heads
            q, k, v = self.qkv(x).split(d, dim=2)
            q = q.view(b, t, h, d // h).transpose(1, 2)
            k = k.view(b, t, h, d // h).transpose(1, 2)
            v = v.view(b, t, h, d // h).transpose(1, 2)
            if shape.attention == "sdpa":
                y = functional.scaled_dot_product_attention(
                    q, k, v, is_causal=True,
                    dropout_p=shape.dropout if self.training else 0.0,
                )
            else:
                scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
                mask = torch.ones(t, t, device=x.device, dtype=torch.bool).triu(1)
                scores = scores.masked_fill(mask, float("-inf"))
                probs = self.drop(torch.softmax(scores, dim=-1))
                y = probs @ v
            y = y.transpose(1, 2).contiguous().view(b, t, d)
            return self.drop(self.proj(y))

        def forward(self, x: Any) -> Any:
            x = x + self.attention(self.ln1(x))
            return x + self.drop(self.fc2(functional.gelu(self.fc1(self.ln2(x)))))

    class Gpt(module_base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(shape.vocab, shape.d_model)
            self.pos = nn.Embedding(shape.max_seq, shape.d_model)
            self.drop = nn.Dropout(shape.dropout)
            self.blocks = nn.ModuleList(Block() for _ in range(shape.layers))
            self.ln_f = nn.LayerNorm(shape.d_model)
            self.head = nn.Linear(shape.d_model, shape.vocab, bias=False)

        def forward(self, idx: Any) -> Any:
            t = idx.shape[1]
            positions = torch.arange(t, device=idx.device)
            x = self.drop(self.tok(idx) + self.pos(positions))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    return Gpt()


__all__ = ["AttentionKind", "DTypeName", "ModelShape", "build_model", "torch_dtype"]
