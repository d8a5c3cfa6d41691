"""(f) A program replaying one captured CUDA graph per step, bf16 or fp32.

As vLLM, SGLang, TensorRT-LLM and ``torch.compile(mode="reduce-overhead")`` run their steps: an
MLP stack (8 blocks of LayerNorm -> Linear d->4d -> GELU -> Linear 4d->d, d = 1024, 512 tokens)
is captured once into a ``torch.cuda.CUDAGraph`` and each step is one ``replay()`` and a
synchronize, inside an NVTX range ``step`` (so ``perfdiff collect --cycle-range step`` cuts one
cycle per replay). The program imports no perfdiff and times its own steps (host clock),
printing ``STEPTIMER {json}`` at the end.

Usage: python bench/record_truth/cuda_graph_mlp.py [--dtype bf16|fp32] [--steps 60]
           [--trace OUT.pt.trace.json.gz]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from steptimer import StepTimer, profiled


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--trace", help="torch.profiler trace of 5 steps (after 7) to here")
    args = parser.parse_args()
    import torch
    from torch import nn

    torch.manual_seed(0)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    d = args.width
    model = nn.Sequential(*[nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(),
                                          nn.Linear(4 * d, d)) for _ in range(args.blocks)])
    model = model.to(device="cuda", dtype=dtype).eval()
    x = torch.randn(args.tokens, d, device="cuda", dtype=dtype)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        y = model(x)
    torch.cuda.synchronize()
    timer = StepTimer()
    timer.mark()
    prof = profiled(args.trace, active=5)
    with prof if prof is not None else contextlib.nullcontext():
        for _ in range(args.steps):
            with torch.cuda.nvtx.range("step"):
                graph.replay()
                torch.cuda.synchronize()
            timer.mark()
            if prof is not None:
                prof.step()
    del y
    timer.print_summary(program="cuda_graph_mlp", dtype=args.dtype, width=d,
                        blocks=args.blocks, tokens=args.tokens)


if __name__ == "__main__":
    main()
