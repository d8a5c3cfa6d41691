"""Open an export read-only and say what it holds: its tables, columns and nsys version.

Why its own module: every question the other modules ask the file ("is there an NVTX table?",
"does this kernel table have mangledName?") is answered here from ``sqlite_master`` and
``pragma_table_info`` once, and every way the file can fail to be an export (not SQLite,
damaged, a SQLite file of something else, a schema missing a column the reader needs) becomes
one line naming the file, the table or column, the nsys version that wrote it and what to do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfdiff.errors import InputError
from perfdiff.readers.nsys.tables import (
    COLUMNS,
    META_TABLES,
    PRODUCT_VERSION_KEY,
    SCHEMA_VERSION_KEY,
    STRINGS_TABLE,
)

SQLITE_MAGIC = b"SQLite format 3\x00"
# Tables only an nsys export has beside StringIds (an export of a run without GPU work has
# no CUPTI_ACTIVITY_KIND_KERNEL, but it is still an export, and is told so).
EXPORT_TABLE_PREFIXES = ("META_DATA_EXPORT", "EXPORT_META_DATA", "TARGET_INFO_",
                         "CUPTI_ACTIVITY_KIND_")
EXPORT_HINT = "export the report with `nsys export --type sqlite REPORT.nsys-rep`"


@dataclass(frozen=True)
class Export:
    """An open export: the connection, its tables with their columns, and who wrote it."""

    path: Path
    connection: sqlite3.Connection
    columns: dict[str, frozenset[str]]  # table -> its columns (tables perfdiff reads only)
    product_version: str  # nsys release, e.g. "2024.5.1.113"; "unknown" when not recorded
    schema_version: str  # export schema, e.g. "3.13.2"

    def has(self, table: str) -> bool:
        return table in self.columns

    def where(self) -> str:
        """"FILE (nsys 2024.5.1.113, export schema 3.13.2)": the prefix of every error."""
        return (f"{self.path} (nsys {self.product_version}, export schema "
                f"{self.schema_version})")

    def require(self, table: str, columns: Sequence[str]) -> None:
        """Raise one line when ``table`` lacks one of ``columns``."""
        missing = [c for c in columns if c not in self.columns.get(table, frozenset())]
        if missing:
            raise InputError(f"{self.where()}: table {table} has no column "
                             f"{', '.join(missing)}; this export schema is not one perfdiff "
                             "reads (nsys 2022.2 to 2025.5 are); re-export it with a recent "
                             "nsys (`nsys export --type sqlite`) or report the version")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of ``sql``; a damaged file becomes one line, not a traceback."""
        try:
            return self.connection.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.where()}: cannot be read ({exc}); the file is damaged "
                             f"or truncated; {EXPORT_HINT} again") from None


def is_sqlite_file(path: Path) -> bool:
    """Whether ``path`` is a regular file that starts with the SQLite header."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


@contextmanager
def open_export(path: Path) -> Iterator[Export]:
    """The export at ``path``, opened read-only (``mode=ro``, ``immutable=1``: nothing is
    written next to it, not even a journal), closed on leaving."""
    uri = path.absolute().as_uri() + "?mode=ro&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"{path}: cannot be opened as SQLite ({exc}); {EXPORT_HINT}") from None
    try:
        yield _describe(path, connection)
    finally:
        connection.close()


def _describe(path: Path, connection: sqlite3.Connection) -> Export:
    try:
        tables = {name for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path}: not a readable SQLite database ({exc}); {EXPORT_HINT}"
                         ) from None
    if STRINGS_TABLE not in tables or not any(t.startswith(EXPORT_TABLE_PREFIXES)
                                              for t in tables):
        found = ", ".join(sorted(tables)[:5]) or "none"
        raise InputError(f"{path}: a SQLite file but not an Nsight Systems export (no "
                         f"{STRINGS_TABLE}, META_DATA_EXPORT or TARGET_INFO_* tables; tables: "
                         f"{found}); {EXPORT_HINT}")
    columns: dict[str, frozenset[str]] = {}
    for table in COLUMNS:
        if table in tables:
            names = connection.execute(
                "SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
            columns[table] = frozenset(name for (name,) in names)
    meta = _metadata(connection, tables)
    return Export(path=path, connection=connection, columns=columns,
                  product_version=meta.get(PRODUCT_VERSION_KEY, "unknown"),
                  schema_version=meta.get(SCHEMA_VERSION_KEY, "unknown"))


def _metadata(connection: sqlite3.Connection, tables: set[str]) -> dict[str, str]:
    for table in META_TABLES:
        if table in tables:
            rows = connection.execute(
                f"SELECT name, value FROM {table} WHERE name IN (?, ?)",
                (PRODUCT_VERSION_KEY, SCHEMA_VERSION_KEY)).fetchall()
            return {str(name): str(value) for name, value in rows}
    return {}
