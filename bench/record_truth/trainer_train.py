"""(c) An unmodified HF ``Trainer`` job, with or without gradient checkpointing.

GPT-2 small built from its config (random weights: nothing downloaded), bf16, batch 8 x 512 of
synthetic tokens, AdamW as the Trainer makes it, no callbacks of ours: nothing tells perfdiff
where a step is (it finds the optimizer steps). The program's own timer (steptimer.py, torch's
global optimizer post-step hook, which the Trainer's optimizer step fires) prints
``STEPTIMER {json}``. Why not the Trainer's steps/s: it is an average over the whole run,
start-up included, and a step-end callback that synchronizes would change the program.

Usage: python bench/record_truth/trainer_train.py [--gc] [--steps 40] [--batch 8] [--seq 512]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from steptimer import StepTimer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gc", action="store_true", help="gradient checkpointing")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    a = ap.parse_args()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    class Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
        def __init__(self, n: int, seq: int, vocab: int) -> None:
            g = torch.Generator().manual_seed(0)
            self.ids = torch.randint(0, vocab, (n, seq), generator=g)

        def __len__(self) -> int:
            return int(self.ids.shape[0])

        def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    torch.manual_seed(0)
    config = GPT2Config(n_positions=a.seq)
    model = GPT2LMHeadModel(config)
    args = TrainingArguments(
        output_dir="/tmp/record-truth-trainer", per_device_train_batch_size=a.batch,
        max_steps=a.steps, bf16=True, gradient_checkpointing=a.gc, logging_steps=10_000,
        save_strategy="no", report_to=[], disable_tqdm=True, dataloader_num_workers=0, seed=0)
    timer = StepTimer()
    timer.hook_optimizers()
    trainer = Trainer(model=model, args=args,
                      train_dataset=Tokens(a.batch * a.steps, a.seq, config.vocab_size))
    trainer.train()
    timer.print_summary(program="trainer_train", gradient_checkpointing=a.gc, model="gpt2",
                        batch=a.batch, seq=a.seq)


if __name__ == "__main__":
    main()
