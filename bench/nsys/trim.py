"""Trim an nsys SQLite export into a small copy for fixtures/nsys/: same schema, fewer rows.

Why: the public exports are 0.5-3 MB, mostly tables perfdiff never reads (OS runtime calls,
scheduling, every process of the node) and the recording machine's environment (user names,
paths, environment variables, secrets of the batch system). The copy keeps the CREATE
statement of every table perfdiff reads, and of those only the rows that belong to the kept GPU
work: the first --kernels kernels (by start), the memcpy/memset of that time window, the CUDA
API calls with their correlation ids, the NVTX ranges and thread names of the window, the
strings they name, the processes that did the work, the GPUs, and the export's version
rows (not its host, user or paths). Nothing is edited: every kept row is a row of the
export as nsys wrote it.

    python bench/nsys/trim.py SRC.sqlite DST.sqlite [--kernels N]
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
ACTIVITY = (KERNEL, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
META = ("META_DATA_EXPORT", "EXPORT_META_DATA")
META_KEPT = ("EXPORT_PRODUCT_NAME", "EXPORT_PRODUCT_VERSION", "EXPORT_PRODUCT_DATE",
             "EXPORT_SCHEMA_VERSION", "EXPORT_SCHEMA_VERSION_MAJOR",
             "EXPORT_SCHEMA_VERSION_MINOR", "EXPORT_SCHEMA_VERSION_MICRO")
ENV_KEPT = ("Hostname", "NvDriverVersion", "CudaDriverVersion")


def trim(src: Path, dst: Path, kernels: int) -> None:
    if dst.exists():
        dst.unlink()
    # ATTACH takes the source as a read-only URI, which needs a connection opened with uri=True
    out = sqlite3.connect(dst.absolute().as_uri(), uri=True)
    out.execute("ATTACH DATABASE ? AS src", (src.absolute().as_uri() + "?mode=ro",))
    tables = dict(out.execute("SELECT name, sql FROM src.sqlite_master WHERE type = 'table'"))

    def copy(table: str, where: str = "", params: tuple[object, ...] = ()) -> None:
        if table not in tables:
            return
        out.execute(tables[table])
        out.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table} {where}", params)

    copy(KERNEL, f"WHERE rowid IN (SELECT rowid FROM src.{KERNEL} ORDER BY start LIMIT ?)",
         (kernels,))
    low, high = (out.execute(f"SELECT MIN(start), MAX(end) FROM main.{KERNEL}").fetchone()
                 if KERNEL in tables else (None, None))
    window = "WHERE start >= ? AND start <= ?" if low is not None else ""
    bounds: tuple[object, ...] = (low, high) if low is not None else ()
    for table in ACTIVITY[1:]:
        copy(table, window, bounds)
    kept = " UNION ".join(f"SELECT correlationId FROM main.{t}" for t in ACTIVITY
                          if t in tables)
    copy("CUPTI_ACTIVITY_KIND_RUNTIME", f"WHERE correlationId IN ({kept})")
    if "NVTX_EVENTS" in tables:
        copy("NVTX_EVENTS", "WHERE eventType = 39 OR (eventType IN (59, 60) AND end IS NOT "
             "NULL" + (" AND end >= ? AND start <= ?)" if low is not None else ")"), bounds)
    pids = " UNION ".join(f"SELECT globalPid FROM main.{t}" for t in ACTIVITY if t in tables)
    copy("PROCESSES", f"WHERE globalPid IN ({pids})")
    copy("TARGET_INFO_GPU")
    for table in META:
        copy(table, f"WHERE name IN ({', '.join('?' * len(META_KEPT))})", META_KEPT)
    copy("TARGET_INFO_SYSTEM_ENV", f"WHERE name IN ({', '.join('?' * len(ENV_KEPT))})",
         ENV_KEPT)
    if "GPU_METRICS" in tables:
        copy("GPU_METRICS", "WHERE timestamp >= ? AND timestamp <= ?" if low is not None
             else "", bounds)
        copy("TARGET_INFO_GPU_METRICS")
    ids = []
    if KERNEL in tables:
        ids += [f"SELECT {c} FROM main.{KERNEL}" for c in ("demangledName", "shortName",
                                                            "mangledName")]
    if "NVTX_EVENTS" in tables:
        ids.append("SELECT textId FROM main.NVTX_EVENTS")
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        ids.append("SELECT nameId FROM main.CUPTI_ACTIVITY_KIND_RUNTIME")
    copy("StringIds", f"WHERE id IN ({' UNION '.join(ids)})" if ids else "WHERE 0")
    out.commit()
    out.execute("DETACH DATABASE src")
    out.execute("VACUUM")
    out.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--kernels", type=int, default=2000)
    args = parser.parse_args()
    trim(args.src, args.dst, args.kernels)
    print(f"{args.dst}: {args.dst.stat().st_size} bytes")


if __name__ == "__main__":
    main()
