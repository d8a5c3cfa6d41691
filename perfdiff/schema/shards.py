"""Sharded run data: a folder with one Parquet file per run (process, i.e. rank) and a manifest.

Why: a 64-rank job at 1,000,000 launches per rank is tens of GB as one run file, and one JSON
document must be parsed whole by one process. Sharded, each rank is read by itself, by whichever
process (or Dask worker) handles that rank, and only its kernels are in memory at a time; the
single-file format stays for small runs.

Layout of ``JOB/`` (the folder is the run)::

    perfdiff-shards.json    manifest: format, version, the shards in run order (file, run
                            index, pid, rank, launches), written last: no manifest, no run
    run-00000.parquet       the kernel table of runs[0], one column per KernelTable field
                            (int64); its Parquet key-value metadata "perfdiff.run_file" holds
                            the run file of that one run with its kernel table left empty
                            (header, strings, cycles, copies, metric samples) as JSON,
                            gzipped and base64-encoded (Parquet does not compress its
                            footer; PM samples made it 6 x the run file's size)

Every shard is validated as a run file of one run (``schema.io`` and ``schema.sense``) when it
is read, so a damaged shard is refused in one line naming it, like a damaged run file. pyarrow
is imported only here and only when shards are read or written.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from perfdiff.errors import InputError
from perfdiff.output import write_atomic
from perfdiff.schema.io import run_file_from_dict, run_file_to_dict
from perfdiff.schema.model import KernelTable, Run, RunFile
from perfdiff.schema.sense import check_run_file

MANIFEST = "perfdiff-shards.json"
SHARDS_FORMAT = "perfdiff.shards"
SHARDS_VERSION = "1.0"
RUN_FILE_KEY = b"perfdiff.run_file.json.gz.b64"
KERNEL_COLUMNS = tuple(f.name for f in fields(KernelTable) if f.default is MISSING)
# later optional columns (the launching op and module): written and read where present
OPTIONAL_KERNEL_COLUMNS = tuple(f.name for f in fields(KernelTable) if f.default is not MISSING)


@dataclass(frozen=True)
class ShardEntry:
    """One shard as the manifest lists it."""

    file: str
    run_index: int
    pid: int
    rank: int | None
    launches: int


@dataclass(frozen=True)
class ShardedRun:
    """A sharded run's manifest: where it is and its shards, in the run file's run order."""

    folder: Path
    entries: tuple[ShardEntry, ...]

    @property
    def launches(self) -> int:
        """Kernel launches of every shard (decides in-process or Dask: ``perfdiff.engine``)."""
        return sum(e.launches for e in self.entries)


def is_sharded_run(path: str | Path) -> bool:
    """Whether ``path`` is a sharded run folder (it holds a manifest)."""
    p = Path(path)
    return p.is_dir() and (p / MANIFEST).is_file()


def read_manifest(folder: str | Path) -> ShardedRun:
    """The manifest of a sharded run (InputError, one line, when it is damaged)."""
    path = Path(folder) / MANIFEST
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read the shard manifest ({exc}); re-write the shards "
                         "with 'perfdiff import' or 'perfdiff merge --shards'") from None
    if not isinstance(raw, dict) or raw.get("format") != SHARDS_FORMAT:
        raise InputError(f"{path}: not a perfdiff shard manifest (format "
                         f"{raw.get('format') if isinstance(raw, dict) else None!r})")
    major = str(raw.get("version", "")).split(".")[0]
    if major != SHARDS_VERSION.split(".")[0]:
        raise InputError(f"{path}: shard format version {raw.get('version')!r} is not supported "
                         f"(this perfdiff reads {SHARDS_VERSION.split('.')[0]}.x); upgrade "
                         "perfdiff or re-write the shards")
    entries = []
    for i, item in enumerate(raw.get("shards") or []):
        try:
            entry = ShardEntry(file=str(item["file"]), run_index=int(item["run_index"]),
                               pid=int(item["pid"]),
                               rank=None if item["rank"] is None else int(item["rank"]),
                               launches=int(item["launches"]))
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{path}: shards[{i}] is malformed; re-write the shards") from None
        if Path(entry.file).name != entry.file or not entry.file.endswith(".parquet"):
            raise InputError(f"{path}: shards[{i}] names {entry.file!r}, not a Parquet file "
                             "in the folder")
        entries.append(entry)
    if not entries:
        raise InputError(f"{path}: lists no shards; re-write the shards")
    return ShardedRun(Path(folder), tuple(entries))


def parquet_modules() -> Any:
    """``(pyarrow, pyarrow.parquet)``; InputError, one line, where pyarrow is missing (the one
    place that says what sharded runs need: reading, writing, and ``collect --shards`` before
    its program starts)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("sharded runs need pyarrow; pip install 'perfdiff[dask]'") from None
    return pa, pq


def load_shard(sharded: ShardedRun, entry: ShardEntry, *, kernels: bool = True) -> RunFile:
    """The run file of one shard: its one run, validated (InputError, one line, naming it).

    ``kernels=False`` reads the Parquet footer only: header, cycles, copies and metrics, with
    an empty kernel table (what the report's header and notes need, at no cost per launch).
    """
    _, pq = parquet_modules()
    path = sharded.folder / entry.file
    source = str(path)
    try:
        schema = pq.read_schema(path)
        meta = schema.metadata or {}
        raw = json.loads(gzip.decompress(base64.b64decode(meta[RUN_FILE_KEY], validate=True)))
        present = [name for name in OPTIONAL_KERNEL_COLUMNS if name in schema.names]
        table = pq.read_table(path, columns=[*KERNEL_COLUMNS, *present]) if kernels else None
    except KeyError:
        raise InputError(f"{source}: a Parquet file without perfdiff's run metadata; "
                         "re-write the shards") from None
    except Exception as exc:  # pyarrow raises its own classes (ArrowInvalid, OSError, ...)
        raise InputError(f"{source}: cannot read the shard ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}); the file is "
                         "damaged: re-copy it or re-write the shards") from None
    skeleton = run_file_from_dict(raw, source=source)
    if len(skeleton.runs) != 1:
        raise InputError(f"{source}: holds {len(skeleton.runs)} runs, a shard holds one")
    run = skeleton.runs[0]
    if (run.index, run.pid, run.rank) != (entry.run_index, entry.pid, entry.rank):
        raise InputError(f"{source}: holds run {run.index} pid {run.pid} rank {run.rank}, the "
                         "manifest says otherwise; re-write the shards")
    if table is None:
        return skeleton
    kernel_table = _kernel_table(table, source, len(skeleton.strings))
    if kernel_table.name_id.shape[0] != entry.launches:
        raise InputError(f"{source}: {kernel_table.name_id.shape[0]} launches, the manifest "
                         f"says {entry.launches}; the shard is truncated or was replaced")
    one = replace(skeleton, runs=(replace(run, kernels=kernel_table),))
    check_run_file(one, source)
    return one


def _kernel_table(table: Any, source: str, n_strings: int) -> KernelTable:
    columns: dict[str, np.ndarray] = {}
    for name in (*KERNEL_COLUMNS, *(n for n in OPTIONAL_KERNEL_COLUMNS
                                   if n in table.column_names)):
        column = table.column(name)
        if column.null_count:
            raise InputError(f"{source}: kernel column {name!r} has missing values; the shard "
                             "is damaged")
        values = column.to_numpy()
        if values.dtype.kind not in "iu":
            raise InputError(f"{source}: kernel column {name!r} is not integer; the shard was "
                             "not written by perfdiff")
        columns[name] = values.astype(np.int64, copy=False)
    kernels = KernelTable(**columns)
    ids = kernels.name_id
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n_strings):
        raise InputError(f"{source}: kernel name ids point outside the string table; the shard "
                         "is damaged")
    return kernels


def skeleton_run_file(sharded: ShardedRun) -> RunFile:
    """The whole run without kernels: every run's header, cycles, copies and metrics."""
    parts = [load_shard(sharded, e, kernels=False) for e in sharded.entries]
    return replace(parts[0], runs=tuple(p.runs[0] for p in parts))


def load_sharded_run(folder: str | Path) -> RunFile:
    """Every shard joined into one run file (for the commands that need the whole run at
    once: ``kernels``, ``merge``); ``compare`` and ``ranks`` read shard by shard instead."""
    return join_shards(read_manifest(folder))


def join_shards(sharded: ShardedRun) -> RunFile:
    """Every shard of a read manifest joined into one run file."""
    parts = [load_shard(sharded, entry) for entry in sharded.entries]
    first = parts[0]
    for entry, part in zip(sharded.entries[1:], parts[1:], strict=True):
        if part.strings != first.strings or part.environment != first.environment:
            raise InputError(f"{sharded.folder / entry.file}: its kernel names or GPUs differ "
                             f"from {sharded.entries[0].file}'s: the shards are not of one "
                             "run; re-write them")
    return replace(first, runs=tuple(p.runs[0] for p in parts))


def write_shards(run_file: RunFile, folder: str | Path, *,
                 inputs: tuple[str | Path, ...] = ()) -> Path:
    """Write ``run_file`` as a sharded run into ``folder`` (one shard per run, manifest last).

    Every file goes through :func:`perfdiff.output.write_atomic`; the manifest is written
    after every shard, so a folder interrupted half-way has no manifest and is not a run.
    """
    writer = ShardWriter(folder, len(run_file.runs), inputs=inputs)
    for run in run_file.runs:
        writer.add(run_file, run)
    return writer.finish()


class ShardWriter:
    """Writes a sharded run one run at a time (a job too large to hold whole is written rank
    by rank: ``bench/ranks/generate.py``), then the manifest."""

    def __init__(self, folder: str | Path, n_runs: int, *,
                 inputs: tuple[str | Path, ...] = ()) -> None:
        self.target = Path(folder)
        if self.target.exists() and (not self.target.is_dir() or any(self.target.iterdir())):
            from perfdiff.errors import OutputError

            # Replacing shards one by one would leave a folder of old and new shards if the
            # write stopped half-way: a sharded run is written into a new (or empty) folder.
            what = "is not empty" if self.target.is_dir() else "is not a folder"
            raise OutputError(f"{self.target}: {what}; a sharded run is written into a new "
                              "folder: pass another path to -o or remove this one")
        self.width = max(5, len(str(n_runs)))
        self.inputs = inputs
        self.entries: list[dict[str, Any]] = []

    def add(self, run_file: RunFile, run: Run) -> None:
        """Write ``run`` (with ``run_file``'s header, strings and environment) as the next
        shard."""
        pa, pq = parquet_modules()
        name = f"run-{len(self.entries):0{self.width}d}.parquet"
        write_atomic(self.target / name, _shard_bytes(pa, pq, run_file, run),
                     inputs=self.inputs, what="a shard")
        self.entries.append({"file": name, "run_index": run.index, "pid": run.pid,
                             "rank": run.rank, "launches": int(run.kernels.name_id.shape[0])})

    def finish(self) -> Path:
        """Write the manifest: from now on the folder is a run."""
        manifest = {"format": SHARDS_FORMAT, "version": SHARDS_VERSION, "shards": self.entries}
        write_atomic(self.target / MANIFEST, json.dumps(manifest, indent=1) + "\n",
                     inputs=self.inputs, what="the shard manifest")
        return self.target


def _shard_bytes(pa: Any, pq: Any, run_file: RunFile, run: Run) -> bytes:
    empty = KernelTable(**{name: np.zeros(0, dtype=np.int64) for name in KERNEL_COLUMNS})
    skeleton = replace(run_file, runs=(replace(run, kernels=empty),))
    meta = json.dumps(run_file_to_dict(skeleton), separators=(",", ":"), allow_nan=False)
    table = pa.table({name: getattr(run.kernels, name)
                      for name in (*KERNEL_COLUMNS, *OPTIONAL_KERNEL_COLUMNS)
                      if getattr(run.kernels, name) is not None})
    packed = base64.b64encode(gzip.compress(meta.encode("utf-8"), compresslevel=6))
    table = table.replace_schema_metadata({RUN_FILE_KEY: packed})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())




__all__ = ["MANIFEST", "ShardEntry", "ShardWriter", "ShardedRun", "is_sharded_run", "join_shards",
           "load_shard", "load_sharded_run", "parquet_modules", "read_manifest",
           "skeleton_run_file", "write_shards"]
