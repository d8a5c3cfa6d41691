"""Run one compare and measure it: wall time and the peak RSS of every process it starts.

Usage (from the repository root)::

    python -m bench.ranks.measure engine NORMAL ABNORMAL [--local WORKERS] [-o REPORT]
    python -m bench.ranks.measure cli NORMAL ABNORMAL [-o REPORT]     # perfdiff compare ...
    python -m bench.ranks.measure ranks JOB [-o REPORT]                # perfdiff ranks JOB
    python -m bench.ranks.measure cmd --timeout S --max-gib G -- PROGRAM ARGS...  # any command

``engine``: the sharded map in this process (default) or on a LocalCluster of WORKERS
processes (``--local``), whatever the size; ``cli``: the ``perfdiff compare`` command line as a
user types it (single run files go the usual in-process path). The command runs in a child
process; its process tree (Dask's workers and nannies included) is polled every 0.1 s with
psutil, and the largest RSS seen for each process is reported. ``cmd`` runs any command (HTA's
child in its own venv, ``bench/ranks/run_hta_scale.sh``) the same way, with a wall-clock cap
(``--timeout``: the tree is killed, exit 124) and an address-space cap per process
(``--max-gib``: ``RLIMIT_AS``, inherited by the processes it forks).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import subprocess
import sys
import time

import psutil

ENGINE = """
import sys
from perfdiff.engine.run import compare_sharded
from perfdiff.engine.settings import EngineSettings
from perfdiff.output import write_atomic
from perfdiff.report.markdown import render_markdown
normal, abnormal, out, workers = sys.argv[1:5]
settings = (EngineSettings(in_process_max_launches=0, workers=int(workers), min_cores=1)
            if int(workers)
            else EngineSettings(in_process_max_launches=10**12))
comparison, _ = compare_sharded(normal, abnormal, settings=settings)
write_atomic(out, render_markdown(comparison), inputs=[normal, abnormal])
"""
CLI = "from perfdiff.cli.entry import main; main()"


def watch(argv: list[str], timeout: float = 0.0, max_bytes: int = 0,
          ) -> tuple[int, float, dict[int, tuple[str, int]]]:
    """Run ``argv``; (exit code, wall s, pid -> (name, peak RSS bytes)) of its process tree.

    ``timeout`` (s, 0: none): past it the whole tree is killed and the exit code is 124;
    ``max_bytes`` (0: none): the address-space limit of the child and what it forks.
    """

    def cap() -> None:
        if max_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))

    peak: dict[int, tuple[str, int]] = {}
    started = time.monotonic()
    child = subprocess.Popen(argv, env={**os.environ, "PYTHONPATH": os.getcwd()},
                             preexec_fn=cap)
    root = psutil.Process(child.pid)
    while child.poll() is None:
        if timeout and time.monotonic() - started > timeout:
            for process in [*root.children(recursive=True), root]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
            child.wait()
            return 124, time.monotonic() - started, peak
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for process in tree:
            try:
                rss = process.memory_info().rss
                name = " ".join(process.cmdline()[1:4]).replace("\n", " ")[:60]
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            if rss > peak.get(process.pid, ("", 0))[1]:
                peak[process.pid] = (name, rss)
        time.sleep(0.1)
    return child.wait(), time.monotonic() - started, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("engine", "cli", "ranks", "cmd"))
    parser.add_argument("normal", help="NORMAL, JOB, or (cmd) the program")
    parser.add_argument("abnormal", nargs="?", default="")
    parser.add_argument("--local", type=int, default=0, help="LocalCluster workers (engine)")
    parser.add_argument("-o", "--output", default="/tmp/bench-ranks-report.md")
    parser.add_argument("--timeout", type=float, default=0.0, help="wall-clock cap, s")
    parser.add_argument("--max-gib", type=float, default=0.0, help="address space per process")
    args, rest = parser.parse_known_args()
    if args.mode == "cmd":
        argv = [args.normal, *([args.abnormal] if args.abnormal else []), *rest]
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    elif args.mode == "engine":
        argv = [sys.executable, "-c", ENGINE, args.normal, args.abnormal, args.output,
                str(args.local)]
    elif args.mode == "ranks":
        argv = [sys.executable, "-c", CLI, "ranks", args.normal, "-o", args.output]
    else:
        argv = [sys.executable, "-c", CLI, "compare", args.normal, args.abnormal, "-o",
                args.output]
    code, wall, peak = watch(argv, args.timeout, int(args.max_gib * 2**30))
    largest = max((rss for _, rss in peak.values()), default=0)
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"exit {code}{' (wall-clock cap)' if code == 124 else ''}, wall {wall:.1f} s, "
          f"{len(peak)} processes, peak RSS of the largest {largest / 2**20:,.0f} MiB, "
          f"CPU {cpu.ru_utime + cpu.ru_stime:.1f} s (user+sys of the reaped tree)")
    for pid, (name, rss) in sorted(peak.items(), key=lambda item: -item[1][1])[:6]:
        print(f"  {pid:>8} {rss / 2**20:>8,.0f} MiB  {name}")


if __name__ == "__main__":
    main()
