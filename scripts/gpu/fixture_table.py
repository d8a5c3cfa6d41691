"""Print the provenance table of run files (for fixtures/README.md): command, GPU, driver, date.

Usage: python scripts/gpu/fixture_table.py fixtures/*.json.gz fixtures/aa/*.json.gz
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import numpy as np

from perfdiff.schema.io import load_run_file


def row(path: Path) -> str:
    rf = load_run_file(path)
    run = rf.runs[0]
    env = rf.environment
    gpu = env.devices[0].name if env.devices else "?"
    date = (dt.datetime.fromtimestamp(rf.created_unix_s, tz=dt.UTC).strftime("%Y-%m-%d %H:%M")
            if rf.created_unix_s else "?")
    measured = int((~run.cycles.warmup).sum())
    dur = (run.cycles.end_ns - run.cycles.start_ns)[~run.cycles.warmup] / 1e6
    command = rf.workload.params.get("collect_command", "")
    pm = [m for m in run.metrics if m.source == "pm_sampling"]
    samples = pm[0].values.size if pm else 0
    size_kb = path.stat().st_size / 1024
    return (f"| `{path.name}` | `{command}` | {gpu} | {env.driver_version} | {date} UTC | "
            f"{measured} (+{int(run.cycles.warmup.sum())}) | {float(np.median(dur)):.2f} | "
            f"{run.kernels.name_id.size} | {rf.collection.sample_interval_ns // 1000} us / "
            f"{samples} | {size_kb:.0f} KB | {rf.status.state}, {len(rf.collection.warnings)} |")


def main() -> None:
    print("| file | command | GPU | driver | recorded | measured cycles (+warm-up) | "
          "median cycle ms | kernels | PM interval / samples | size | status, warnings |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for arg in sys.argv[1:]:
        print(row(Path(arg)))


if __name__ == "__main__":
    main()
