"""Start-up cost of the user-program collector in each process (``perfdiff collect -- CMD``).

Why measure it: every process of the program pays it once (the boot ``sitecustomize`` imports
perfdiff, starts tracing, and writes a shard at exit), and a torchrun job pays it once per rank.
Compares an empty Python program started plainly, started with the injection (fake backend,
so the number is perfdiff's own cost, not CUPTI's), and ``import numpy`` alone for scale.

    python bench/inject_startup.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfdiff.collect.inject.config import InjectConfig, child_environment
from tests.support.fake_cupti import FAKE_BACKEND, fake_env


def _time(argv: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.py"
        empty.write_text("pass\n")
        base = fake_env()  # the children import the fake backend from tests/
        injected = child_environment(base, InjectConfig(shard_dir=tmp, backend=FAKE_BACKEND))
        rows = [
            ("empty program", _time([sys.executable, str(empty)], base, args.repeat)),
            ("empty program, collector injected (fake backend)",
             _time([sys.executable, str(empty)], injected, args.repeat)),
            ("python -c 'import numpy' (for scale)",
             _time([sys.executable, "-c", "import numpy"], base, args.repeat)),
        ]
    print("| process | median (s) | min (s) |\n| --- | ---: | ---: |")
    for name, (median, best) in rows:
        print(f"| {name} | {median:.3f} | {best:.3f} |")


if __name__ == "__main__":
    main()
