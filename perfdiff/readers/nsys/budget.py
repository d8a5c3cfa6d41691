"""How much memory an export will take to read, checked against the input limit first.

Why: an export is read with SQL, never loaded whole, so its file size says little (a 10 GB
export may be mostly OS-runtime and sampling rows perfdiff never selects); what costs memory
is the rows that are selected. They are counted first (``COUNT(*)``, no row leaves SQLite) and
the reading refused in one line when they would need more than the input limit of
:mod:`perfdiff.limits` (``PERFDIFF_MAX_INPUT_GIB``), instead of a MemoryError half-way.

The costs per row are what the reader holds at its peak: a GPU record's integer columns,
their concatenation and per-column copies, its launch time and sort keys, and the run file's
table (about 600 bytes; 512 is counted, the chunk being read adding the rest); a metric sample's
keys, value and sorted copies (about 80 bytes).
"""

from __future__ import annotations

from perfdiff.errors import InputError
from perfdiff.limits import RAISE_LIMIT, max_input_bytes
from perfdiff.readers.nsys.database import Export
from perfdiff.readers.nsys.tables import ACTIVITY_TABLES, METRICS_TABLE

BYTES_PER_RECORD = 512
BYTES_PER_SAMPLE = 96


def check_budget(export: Export) -> None:
    """Raise one line when the rows to be read would not fit the input limit."""
    records = sum(_count(export, table) for table in ACTIVITY_TABLES)
    samples = _count(export, METRICS_TABLE)
    need = records * BYTES_PER_RECORD + samples * BYTES_PER_SAMPLE
    limit = max_input_bytes()
    if need > limit:
        raise InputError(
            f"{export.where()}: {records:,} GPU records and {samples:,} GPU metric samples "
            f"would take about {need / (1 << 30):.3g} GiB to read, above the input limit of "
            f"{limit / (1 << 30):.3g} GiB; if the export is real, {RAISE_LIMIT}")


def _count(export: Export, table: str) -> int:
    if not export.has(table):
        return 0
    (count,) = export.rows(f"SELECT COUNT(*) FROM {table}")[0]
    return int(count)
