"""``.nsys-rep`` reports: converted by ``nsys export --type sqlite`` when nsys is installed.

Why its own module: the report format is private to Nsight Systems; only nsys can read it.
The conversion runs nsys with an argument list (never a shell), into a temporary folder that
is removed afterwards, so nothing is written next to the user's report; without nsys on the
PATH the one line says the exact command to run.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from perfdiff.errors import InputError

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")  # .qdrep: the name before nsys 2021.4


def is_report(path: Path) -> bool:
    return path.name.lower().endswith(REPORT_SUFFIXES)


def export_command(nsys: str, report: Path, output: Path) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
            "--output", str(output), str(report)]


@contextmanager
def exported(report: Path, nsys: str | None = None) -> Iterator[Path]:
    """The SQLite export of ``report`` in a temporary folder (removed on leaving)."""
    nsys = nsys or shutil.which("nsys")
    if nsys is None:
        command = shlex.join(export_command("nsys", report, report.with_suffix(".sqlite")))
        raise InputError(f"{report}: an Nsight Systems report, and nsys is not on the PATH to "
                         f"convert it; run `{command}` and pass the .sqlite file")
    with tempfile.TemporaryDirectory(prefix="perfdiff-nsys-") as folder:
        output = Path(folder) / "export.sqlite"
        try:
            done = subprocess.run(export_command(nsys, report, output), capture_output=True,
                                  text=True, check=False)
        except OSError as exc:
            raise InputError(f"{report}: `{nsys} export` could not be started ({exc}); "
                             "check the nsys installation") from None
        if done.returncode != 0 or not output.is_file():
            said = (done.stderr or done.stdout).strip().splitlines()
            raise InputError(f"{report}: `nsys export --type sqlite` failed (exit "
                             f"{done.returncode}: {said[-1][:200] if said else 'no message'}); "
                             "open the report in Nsight Systems to check it")
        yield output
