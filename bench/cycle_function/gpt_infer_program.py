"""The gpt-infer workload as a user program, for the ``--cycle-function`` overhead bench.

MODE says how a step is marked, the loop is otherwise identical:
  nvtx      ``with torch.cuda.nvtx.range("step"): step()``  (collect with --cycle-range step)
  function  ``step()``   (--cycle-function gpt_infer_program:step)
  found     ``step()``   (no option: detected period)
  cycle     ``with perfdiff.cycle(): step()``                (no option: the program's marks)
  windows   ``step()``   (--cycle-ms 50)
The program times its own measured steps (after --warm) with perf_counter and prints them as
one JSON line; ``step()`` ends with the host copy of the next tokens, as gpt-infer does.
usage: python -c "import gpt_infer_program as g; g.main()" MODE [--steps 300] [--warm 30]
(imported, not run as a script: ``--cycle-function`` names a function of an imported module;
a script's own functions are defined in ``__main__`` only after perfdiff looks for them)
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import perfdiff
from perfdiff.collect.workloads.gpt_infer import GptInfer, GptInferParams

_workload = GptInfer(GptInferParams())


def step() -> object:
    return _workload._step()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["nvtx", "function", "found", "cycle", "windows"])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warm", type=int, default=30)
    a = ap.parse_args()
    _workload.setup("cuda")
    nvtx = a.mode == "nvtx"
    marks = a.mode == "cycle"
    times = []
    for i in range(a.warm + a.steps):
        t0 = time.perf_counter()
        if nvtx:
            with torch.cuda.nvtx.range("step"):
                step()
        elif marks:
            with perfdiff.cycle():
                step()
        else:
            step()
        if i >= a.warm:
            times.append(time.perf_counter() - t0)
    times.sort()
    print("BENCH " + json.dumps({
        "mode": a.mode, "steps": a.steps,
        "mean_ms": round(1e3 * sum(times) / len(times), 4),
        "median_ms": round(1e3 * times[len(times) // 2], 4),
    }), flush=True)


if __name__ == "__main__":
    main()
