"""A rank of a folder that cannot be read stops the import, or is left out only when asked
(issue 25).

Why: a folder import left out a rank that was unreadable, had a damaged gzip header, or had
``traceEvents`` after 1 MiB of metadata, and exited 0 with half the job.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from perfdiff.errors import ExitCode
from tests.conftest import Runner
from tests.shared_data import missing_reason, shared

HTA = shared("kineto", "hta", "trace_filter")
RANKS = sorted(HTA.glob("sampled_rank-*.json.gz"))
pytestmark = pytest.mark.skipif(len(RANKS) < 2, reason=missing_reason(HTA))


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank, trace in enumerate(RANKS):
        shutil.copy(trace, folder / f"rank{rank}.pt.trace.json.gz")
        (folder / f"rank{rank}.pt.trace.json.gz").chmod(0o644)
    return folder


def _damage_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[3] = 0xFF  # reserved flag bits: zlib refuses the header
    path.write_bytes(bytes(data))


def _dangle(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.parent / "gone.json.gz")


@pytest.mark.parametrize("damage", [_damage_header, _dangle])
def test_an_unreadable_rank_stops_the_import(run_cli: Runner, tmp_path: Path,
                                             damage: object) -> None:
    folder = _folder(tmp_path)
    assert callable(damage)
    damage(folder / "rank1.pt.trace.json.gz")
    out = tmp_path / "run.json.gz"
    code, _, err = run_cli("import", str(folder), "-o", str(out))
    assert code == ExitCode.BAD_INPUT and "1 of 2 rank files cannot be read" in err, err
    assert "rank1.pt.trace.json.gz" in err and "--allow-missing-ranks" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    code, _, err = run_cli("import", str(folder), "-o", str(out), "--allow-missing-ranks")
    assert code == 0 and "1 rank file(s) left out" in err, err
    assert run_cli("kernels", str(out), "--format", "json")[0] == 0


def test_trace_events_after_a_mib_of_metadata_are_found(run_cli: Runner,
                                                        tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    path = folder / "rank1.pt.trace.json.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    events = doc.pop("traceEvents")
    doc = {"padding": "x" * (2 << 20), **doc, "traceEvents": events}  # on-demand layout
    path.write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=1))
    out = tmp_path / "run.json.gz"
    code, stdout, err = run_cli("import", str(folder), "-o", str(out))
    assert code == 0 and "2 trace(s)" in stdout, err
