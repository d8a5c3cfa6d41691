"""torch.profiler (Kineto) chrome traces -> a validated :class:`RunFile`.

Why a reader and not a second analysis path: once a trace is a run file, ``compare``,
``kernels``, ``merge`` and ``bench`` give a trace the same statistics and report as a perfdiff
recording, and ``perfdiff import`` can save the conversion.

Mapping (docs/reference/run-file.md has the table):
- ``ProfilerStep#N`` (``user_annotation`` on the CPU) -> cycle N. A GPU kernel, memcpy or
  memset belongs to the step in which its launch happened: the ``cuda_runtime``/``cuda_driver``
  event (or HIP's, same categories) with the same ``args.correlation``. GPU work runs behind
  the CPU, so cutting by the kernel's own time would split a step. ``--cycle-range REGEX``
  takes the ``user_annotation`` ranges whose whole name matches instead (or
  ``gpu_user_annotation`` ranges, whose kernels are those that start inside them on the same
  device). A trace with neither gets cycles where its kernel launch sequence repeats
  (``perfdiff.schema.periods``); when CUDA/HIP graph replays launched its kernels (several
  kernels share one correlation, so launch times say nothing), where the kernel sequence as
  run on the GPU repeats, each kernel placed by its own GPU start.
- Categories as each torch version spells them: ``spellings.py`` (a table).
- Device = ``args.device`` (else ``pid``), stream = ``args.stream`` (else ``tid``).
- GPU and driver from ``deviceProperties`` and the top-level version keys; rank and world size
  from ``distributedInfo``; ``hardware_counters`` counter samples (``ph: "C"``) -> PM series.
- Times: ``ts``/``dur`` are microseconds, relative to ``baseTimeNanoseconds`` when the file
  has it, absolute otherwise. They are converted from the JSON text, not from a float: an
  absolute microsecond time with nanosecond decimals has 19 significant digits, which a float
  (15.9) cannot hold.

Why msgspec (bench/kineto, bench/README.md): it was the fastest decoder measured, and it can
leave each event a raw slice of the file: only an event's category is decoded, then only GPU,
launch and annotation events are decoded as typed structs (undeclared fields never built), so
CPU-side events (``cpu_op``, ``python_function``, flows) cost one short-lived slice each and
memory follows the GPU events.

Layout (one job per module, imports point down this list):
``reader`` (the entry) -> ``assemble`` (ranks -> one run file) -> ``convert`` (one trace ->
one run) -> ``cycles`` (steps, ranges, detected period) -> ``columns`` (the one pass over the
events) -> ``timestamps`` / ``metadata`` / ``files`` -> ``events`` (msgspec structs, filter)
-> ``spellings`` (category names of every torch version, a data table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perfdiff.readers.lazy_names import lazy_names
from perfdiff.readers.torch_profiler.files import (
    is_torch_profiler_input,
    is_trace_file,
    trace_files_in,
)

if TYPE_CHECKING:
    from perfdiff.readers.torch_profiler.assemble import SOURCE_NAME, WORKLOAD_NAME
    from perfdiff.readers.torch_profiler.reader import read_torch_profiler
    from perfdiff.readers.torch_profiler.timestamps import us_text_to_ns, us_texts_to_ns

# imported on first use: the door asks every input whether it is a trace (``files``), and a
# run file's compare need not import the reader (~40 ms; bench/README.md, issue 25)
_LAZY = {"SOURCE_NAME": "assemble", "WORKLOAD_NAME": "assemble",
         "read_torch_profiler": "reader", "us_text_to_ns": "timestamps",
         "us_texts_to_ns": "timestamps"}

__getattr__ = lazy_names(__name__, _LAZY)

__all__ = [
    "SOURCE_NAME",
    "WORKLOAD_NAME",
    "is_torch_profiler_input",
    "is_trace_file",
    "read_torch_profiler",
    "trace_files_in",
    "us_text_to_ns",
    "us_texts_to_ns",
]
