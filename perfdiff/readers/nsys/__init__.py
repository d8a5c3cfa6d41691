"""Nsight Systems exports (``nsys export --type sqlite``) and reports -> a validated RunFile.

Why a reader and not a second analysis path: once an export is a run file, ``compare``,
``kernels``, ``merge``, ``bench`` and ``import`` give it the statistics and report of a
perfdiff recording. Nsight Systems is the profiler most NVIDIA users already run; the
report they attach to a ticket can be compared as it is.

Mapping (docs/reference/run-file.md has the table):
- ``CUPTI_ACTIVITY_KIND_KERNEL`` -> kernels, named by ``demangledName`` (StringIds), with
  ``mangledName`` kept as the mangled name; ``_MEMCPY`` (``copyKind`` -> HtoD, DtoH, ...) and
  ``_MEMSET`` -> transfers. Device = ``deviceId`` (``TARGET_INFO_GPU.id``), stream =
  ``streamId``.
- One run per process (``globalPid``) with GPU work; its MPI rank where nsys named the
  thread ``MPI Rank N`` (``--trace=mpi``).
- Cycles: with ``--cycle-range REGEX``, the process's NVTX ranges whose text matches; else
  where the kernel launch sequence repeats. A record belongs to the cycle of its launch (the
  ``CUPTI_ACTIVITY_KIND_RUNTIME`` call with the same correlationId).
- ``GPU_METRICS`` samples (``--gpu-metrics-devices``) -> metric series (source
  ``imported``), named as nsys names them, unit from the bracket ("[Throughput %]" -> pct).
- nsys version and export schema from ``META_DATA_EXPORT`` (``EXPORT_META_DATA`` before
  2022.4), kept in ``workload.params``.

Reading is SQL on the file (read-only, immutable): only the tables and columns used are
selected, in chunks; nothing else is loaded (bench/README.md has the numbers). The rows are
counted first and refused in one line when they would not fit the input limit
(``PERFDIFF_MAX_INPUT_GIB``, :mod:`perfdiff.limits`).

Layout: ``detect`` (is it an export? asked by the door of every input, imports no reader),
``reader`` (entry) -> ``build`` (runs, run file) -> ``cycles`` / ``metrics`` /
``machine`` -> ``budget`` (rows counted against the limit) -> ``activity`` (rows to
columns) -> ``database`` (open, schema, version) -> ``tables`` (the spellings, as data);
``rep`` converts ``.nsys-rep`` through nsys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perfdiff.readers.lazy_names import lazy_names
from perfdiff.readers.nsys.detect import is_nsys_input

if TYPE_CHECKING:
    from perfdiff.readers.nsys.build import SOURCE_NAME, WORKLOAD_NAME
    from perfdiff.readers.nsys.reader import read_nsys

# imported on first use: the door asks every input whether it is an export (``detect``), and
# a run file's compare need not import the reader (bench/README.md, issue 25)
_LAZY = {"SOURCE_NAME": "build", "WORKLOAD_NAME": "build", "read_nsys": "reader"}

__getattr__ = lazy_names(__name__, _LAZY)


__all__ = ["SOURCE_NAME", "WORKLOAD_NAME", "is_nsys_input", "read_nsys"]
