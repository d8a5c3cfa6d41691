"""An unmodified HF ``Trainer`` job (issue 14): GPT-2 small, random init, synthetic tokens.

Nothing here tells perfdiff where a step is: ``perfdiff collect -- python cycles_trainer.py``
must find the optimizer steps by itself. Prints the Trainer's own steps/s (``train()``
metrics) and the steady-state steps/s after the first ``--warm`` steps (from the Trainer's
step-end callbacks), so the report's cycle-time change can be checked against them.
usage: python scripts/gpu/cycles_trainer.py [--gc] [--steps 50] [--batch 8] [--seq 512]
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments


class Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, n: int, seq: int, vocab: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self) -> int:
        return self.ids.shape[0]

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class StepClock(TrainerCallback):
    def __init__(self) -> None:
        self.ends: list[float] = []

    def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
        torch.cuda.synchronize()
        self.ends.append(time.perf_counter())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gc", action="store_true", help="gradient checkpointing")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--warm", type=int, default=6)
    a = ap.parse_args()
    torch.manual_seed(0)
    config = GPT2Config(n_positions=a.seq)
    model = GPT2LMHeadModel(config)
    args = TrainingArguments(
        output_dir="/tmp/cycles-trainer", per_device_train_batch_size=a.batch,
        max_steps=a.steps, bf16=True, gradient_checkpointing=a.gc, logging_steps=10_000,
        save_strategy="no", report_to=[], disable_tqdm=True, dataloader_num_workers=0,
        seed=0,
    )
    clock = StepClock()
    trainer = Trainer(model=model, args=args,
                      train_dataset=Tokens(a.batch * a.steps, a.seq, config.vocab_size),
                      callbacks=[clock])
    out = trainer.train()
    ends = clock.ends
    steady = (len(ends) - 1 - a.warm) / (ends[-1] - ends[a.warm]) if len(ends) > a.warm + 1 \
        else float("nan")
    print("TRAINER " + json.dumps({
        "gradient_checkpointing": a.gc, "steps": len(ends),
        "train_steps_per_second": out.metrics.get("train_steps_per_second"),
        "steady_steps_per_second": round(steady, 3),
        "optimizer": type(trainer.optimizer).__name__,
        "optim": str(args.optim),
    }), flush=True)


if __name__ == "__main__":
    main()
