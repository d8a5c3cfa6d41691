"""A progress bar over ranks on stderr, for the commands that map over a sharded run.

Why only on a terminal: a pipe or a CI log gets the report and nothing else; the bar is the
engine's progress callback (``perfdiff.engine.executors.Progress``) drawn with rich.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def rank_progress() -> Iterator[Callable[[str, int, int], None] | None]:
    """A callback drawing "normal: 12/64 ranks" bars on stderr, or None when not a tty."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    bars: dict[str, Any] = {}
    with Progress(console=Console(stderr=True), transient=True) as progress:

        def update(what: str, done: int, total: int) -> None:
            if what not in bars:
                bars[what] = progress.add_task(f"{what}: ranks", total=total)
            progress.update(bars[what], completed=done)

        yield update


__all__ = ["rank_progress"]
