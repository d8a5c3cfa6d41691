"""Small user programs recorded through the real ``perfdiff collect -- python prog.py`` path,
with the fake CUPTI backend and stand-in modules written beside them.

Why one helper: the found-cycle, found-function and cost-line tests each run programs that
import a stand-in ``torch`` (optimizer step hooks, ``prof.step()``, ``nn.Module.__call__``)
so that perfdiff's hooks meet the names they meet in a real program, and each had its own copy
of the same write-files-run-collect-load steps.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile
from tests.support.fake_cupti import PERFDIFF_FAKE, fake_env

# torch as far as found cycles look at it: CUDA never initialised, an optimizer whose step
# calls the global post-step hooks, a profiler whose step() is wrapped.
TORCH_STEPS: dict[str, str] = {
    "torch/__init__.py": "from torch import cuda, optim, profiler\n",
    "torch/cuda.py": "def is_initialized():\n    return False\n",
    "torch/optim/__init__.py": "from torch.optim.optimizer import Optimizer\n",
    "torch/optim/optimizer.py": textwrap.dedent("""
        _hooks = []
        def register_optimizer_step_post_hook(hook):
            _hooks.append(hook)
        class Optimizer:
            def step(self):
                for hook in list(_hooks):
                    hook(self, (), {})
    """),
    "torch/profiler/__init__.py": "from torch.profiler.profiler import profile\n",
    "torch/profiler/profiler.py": "class profile:\n    def step(self):\n        pass\n",
}


def collect_program(folder: Path, program: str, *options: str,
                    files: Mapping[str, str] = TORCH_STEPS,
                    out_name: str = "run.json.gz", returncode: int = 0) -> RunFile:
    """Write ``files`` and ``prog.py`` (``program``) into ``folder``, record it with
    ``perfdiff collect -o OUT --warmup 2 OPTIONS -- python prog.py`` (fake CUPTI, the folder
    first on the program's path) and return the run file; the program's exit status is
    ``returncode``."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (folder / "prog.py").write_text(program)
    out = folder / out_name
    env = fake_env({**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(folder), os.environ.get("PYTHONPATH", "")])})
    env.pop("PERFDIFF_INJECT_CONFIG", None)
    proc = subprocess.run([*PERFDIFF_FAKE, "collect", "-o", str(out), "--warmup", "2", *options,
                           "--", sys.executable, "prog.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == returncode, proc.stderr
    return load_run_file(out)


__all__ = ["TORCH_STEPS", "collect_program"]
