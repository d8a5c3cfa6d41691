"""The Nsight Systems reader on real public exports (fixtures/nsys/, provenance in its README).

Issue 27's acceptance, per export: a report or one clear line; per-kernel totals equal a
direct ``SELECT name, SUM(end - start) ... GROUP BY`` on the same file; the nsys version read
from the export's own metadata table; and a pair of exports of one program under two settings
(Rodinia Gaussian elimination, Fan2 with 4x4 vs 16x16 thread blocks) whose first finding is
the kernel whose setting changed. The damaged-input tests mutate copies of these real files.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from perfdiff.errors import InputError, PerfdiffError, UsageError
from perfdiff.readers.dispatch import load_input
from perfdiff.readers.nsys import is_nsys_input, read_nsys
from perfdiff.readers.nsys.rep import exported
from perfdiff.schema.model import RunFile
from tests.conftest import Runner

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nsys"
SAXPY = FIXTURES / "pipit-saxpy-mpi-cuda-rank0-nsys2022.2.sqlite"
CLOVERLEAF = FIXTURES / "pipit-cloverleaf-cuda-nsys2024.5.sqlite"
MEMSET_ONLY = FIXTURES / "weatherbench2-memset-only-nsys2025.5.sqlite"
NOT_EXPORT = FIXTURES / "pipit-docs-test-not-an-export.sqlite"
GAUSS = {n: FIXTURES / f"rodinia-gaussian-report{n}-nsys2022.4.sqlite" for n in (2, 3, 5)}

# (file, --cycle-range, nsys version its metadata table names)
READABLE = [
    (CLOVERLEAF, None, "2024.5.1.113"),
    (SAXPY, "saxpy", "2022.2.1.31"),
    (GAUSS[2], None, "2022.4.2.1"),
    (GAUSS[3], None, "2022.4.2.1"),
    (GAUSS[5], None, "2022.4.2.1"),
]


def _sql_totals(path: Path) -> dict[str, tuple[int, int]]:
    """Per demangled kernel name: (launches, summed end - start), straight from the file."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT s.value, COUNT(*), SUM(k.end - k.start) "
                          "FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                          "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value")
        return {name: (count, total) for name, count, total in rows}


def _reader_totals(run_file: RunFile) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for run in run_file.runs:
        k = run.kernels
        for name_id in np.unique(k.name_id).tolist():
            mine = k.name_id == name_id
            name = run_file.strings[name_id].demangled
            count, total = out.get(name, (0, 0))
            out[name] = (count + int(mine.sum()),
                         total + int((k.end_ns[mine] - k.start_ns[mine]).sum()))
    return out


@pytest.mark.parametrize(("path", "cycle_range", "version"), READABLE,
                         ids=[p.name for p, _, _ in READABLE])
def test_kernel_totals_equal_direct_sql(path: Path, cycle_range: str | None,
                                        version: str) -> None:
    run_file = read_nsys(path, cycle_range=cycle_range)
    assert _reader_totals(run_file) == _sql_totals(path)
    assert run_file.workload.params["nsys_version"] == version


def test_transfers_keep_every_row_with_its_kind() -> None:
    run_file = read_nsys(CLOVERLEAF)
    with sqlite3.connect(f"file:{CLOVERLEAF}?mode=ro", uri=True) as db:
        kinds = dict(db.execute("SELECT copyKind, COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                                "GROUP BY copyKind"))
    kept = run_file.runs[0].memcpy.kind
    assert {"HtoD": kept.count("HtoD"), "DtoH": kept.count("DtoH")} == {
        "HtoD": kinds.get(1, 0), "DtoH": kinds.get(2, 0)}
    assert len(kept) == sum(kinds.values())


def test_machine_from_the_export() -> None:
    run_file = read_nsys(CLOVERLEAF)
    env = run_file.environment
    assert [d.name for d in env.devices] == ["NVIDIA A100-SXM4-80GB"]
    assert env.devices[0].sm_count == 108 and env.devices[0].compute_capability == "8.0"
    assert (env.driver_version, env.cuda_version, env.host) == ("525.105.17", "12.0",
                                                                 "nid008553")


def test_cycle_range_takes_nvtx_ranges_and_mpi_rank() -> None:
    run_file = read_nsys(SAXPY, cycle_range="sax.y")
    (run,) = run_file.runs
    assert run.rank == 0  # nsys --trace=mpi named the thread "MPI Rank 0"
    assert run.cycles.index.tolist() == [0, 1, 2, 3, 4]
    assert run.kernels.cycle.tolist() == [0, 1, 2, 3, 4]  # one saxpy kernel per range
    assert (run.cycles.end_ns > run.cycles.start_ns).all()


def test_detected_cycles_on_a_loop() -> None:
    run = read_nsys(GAUSS[3]).runs[0]
    # Fan1, Fan2 once per elimination step: the period is 2 launches
    assert run.cycles.index.size >= 900
    per_cycle = np.bincount(run.kernels.cycle[run.kernels.cycle >= 0])
    assert set(per_cycle.tolist()) == {2}


@pytest.mark.parametrize(("path", "cycle_range", "needles"), [
    (NOT_EXPORT, None, ("not an Nsight Systems export", "nsys export --type sqlite")),
    (SAXPY, None, ("nsys 2022.2.1.31", "no cycles found", "--cycle-range")),
    (SAXPY, "step", ("no NVTX range matches --cycle-range 'step'", "'saxpy' x5")),
    (MEMSET_ONLY, None, ("nsys 2025.5.1.121", "only memcpy/memset")),
])
def test_one_clear_line(path: Path, cycle_range: str | None,
                        needles: tuple[str, ...]) -> None:
    with pytest.raises(InputError) as caught:
        read_nsys(path, cycle_range=cycle_range)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    for needle in needles:
        assert needle in message


def test_bad_regex_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not a regular expression"):
        read_nsys(SAXPY, cycle_range="step[")


def _mutated(tmp_path: Path, sql: str) -> Path:
    copy = tmp_path / "export.sqlite"
    shutil.copyfile(CLOVERLEAF, copy)
    with sqlite3.connect(copy) as db:
        db.executescript(sql)
    return copy


@pytest.mark.parametrize(("sql", "needles"), [
    ("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN gridZ;",
     ("CUPTI_ACTIVITY_KIND_KERNEL has no column gridZ", "nsys 2024.5.1.113")),
    ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid = 7;",
     ("ends before it starts",)),
    ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 'late' WHERE rowid = 3;",
     ("row 2 has end = 'late' where a 64-bit integer belongs",)),
    ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 1e30 WHERE rowid = 3;",
     ("row 2 has end = 1e+30 where a 64-bit integer belongs",)),
    ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 1.5 WHERE rowid = 3;",
     ("row 2 has start = 1.5 where a 64-bit integer belongs",)),
    ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 9 WHERE rowid = 3;",
     ("device 9, which TARGET_INFO_GPU does not list",)),
    ("DELETE FROM StringIds WHERE id IN (SELECT demangledName FROM "
     "CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1);", ("is not in StringIds",)),
])
def test_damaged_export_one_line(tmp_path: Path, sql: str, needles: tuple[str, ...]) -> None:
    with pytest.raises(InputError) as caught:
        read_nsys(_mutated(tmp_path, sql))
    message = str(caught.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message


def test_truncated_export_one_line(tmp_path: Path) -> None:
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(CLOVERLEAF.read_bytes()[:40_000])
    with pytest.raises(InputError) as caught:
        read_nsys(cut)
    assert "\n" not in str(caught.value) and str(cut) in str(caught.value)


def test_reading_writes_nothing_beside_the_export(tmp_path: Path) -> None:
    copy = tmp_path / "ro" / "export.sqlite"
    copy.parent.mkdir()
    shutil.copyfile(CLOVERLEAF, copy)
    copy.chmod(0o444)
    copy.parent.chmod(0o555)
    try:
        read_nsys(copy)
        assert [p.name for p in copy.parent.iterdir()] == ["export.sqlite"]
    finally:
        copy.parent.chmod(0o755)


def test_report_without_nsys_names_the_command(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "run 1.nsys-rep"
    report.write_bytes(b"not sqlite")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert is_nsys_input(report)
    with pytest.raises(InputError) as caught:
        read_nsys(report)
    assert ("nsys export --type sqlite --force-overwrite true --output "
            f"'{tmp_path}/run 1.sqlite' '{report}'") in str(caught.value)


def test_report_converted_through_nsys(tmp_path: Path) -> None:
    """A stand-in nsys (a script that copies a real export where --output says) receives
    the argument list, and the reader reads what it wrote."""
    fake = tmp_path / "nsys"
    log = tmp_path / "argv.json"
    fake.write_text("#!/usr/bin/env python3\nimport json, shutil, sys\n"
                    f"json.dump(sys.argv[1:], open({str(log)!r}, 'w'))\n"
                    "out = sys.argv[sys.argv.index('--output') + 1]\n"
                    f"shutil.copyfile({str(CLOVERLEAF)!r}, out)\n")
    fake.chmod(0o755)
    report = tmp_path / "r.nsys-rep"
    report.write_bytes(b"report")
    with exported(report, nsys=str(fake)) as sqlite_path:
        assert read_nsys(sqlite_path).runs[0].kernels.name_id.size == 1312
        folder = sqlite_path.parent
    argv = json.loads(log.read_text())
    assert argv[:4] == ["export", "--type", "sqlite", "--force-overwrite"]
    assert argv[-1] == str(report)
    assert not folder.exists()  # the temporary export is removed


def test_dispatch_reads_exports() -> None:
    assert load_input(CLOVERLEAF).workload.name == "Nsight Systems export"
    assert not is_nsys_input(FIXTURES / "README.md")


def test_pair_first_finding_is_the_changed_kernel(run_cli: Runner, tmp_path: Path) -> None:
    """report3: Fan2 with 16x16 thread blocks; report2: the unoptimised 4x4 blocks."""
    out = tmp_path / "pair.json"
    code, _, err = run_cli("compare", str(GAUSS[3]), str(GAUSS[2]), "--format", "json",
                           "-o", str(out))
    assert code == 0, err
    first = json.loads(out.read_text())["comparison"]["findings"][0]
    assert first["function"].startswith("Fan2(") and first["verdict"] == "slower"


def test_every_fixture_reads_or_says_one_line() -> None:
    for path in sorted(FIXTURES.glob("*.sqlite")):
        try:
            read_nsys(path)
        except PerfdiffError as exc:
            assert "\n" not in str(exc)


def test_nested_ranges_keep_the_outer_one() -> None:
    from perfdiff.readers.nsys.cycles import range_cycles

    warnings: list[str] = []
    cycles = range_cycles(np.array([0, 0, 20, 25]), np.array([5, 10, 30, 28]), "step",
                          warnings)
    assert cycles.start.tolist() == [0, 20] and cycles.end.tolist() == [10, 30]
    assert warnings and "2 NVTX ranges" in warnings[0]


def test_a_name_that_is_not_text_is_refused(tmp_path: Path) -> None:
    copy = _mutated(tmp_path, "UPDATE StringIds SET value = x'00ff' WHERE id IN (SELECT "
                              "demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1);")
    with pytest.raises(InputError, match="where a kernel name belongs"):
        read_nsys(copy)


def test_without_launch_records_says_so(tmp_path: Path) -> None:
    copy = _mutated(tmp_path, "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME;")
    with pytest.raises(InputError, match="has a CUDA API launch record"):
        read_nsys(copy)


def test_some_records_without_launch_are_counted(tmp_path: Path) -> None:
    copy = _mutated(tmp_path, "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN "
                              "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL "
                              "ORDER BY start DESC LIMIT 3);")
    run_file = read_nsys(copy)
    assert any("3 of" in w and "no CUDA API launch record" in w
               for w in run_file.collection.warnings)
    assert int((run_file.runs[0].kernels.cycle == -1).sum()) >= 3


def test_odd_characters_in_the_path(tmp_path: Path) -> None:
    odd = tmp_path / "a?b#c %20.sqlite"
    shutil.copyfile(CLOVERLEAF, odd)
    assert read_nsys(odd).runs[0].kernels.name_id.size == 1312


def _with_synthetic_metric(src: Path, dst: Path, level: int) -> None:
    """SYNTHETIC GPU_METRICS rows (10 us apart, ``level`` + a 7-step pattern) over the
    export's kernels: the tables nsys writes, filled by us (see the test below)."""
    shutil.copyfile(src, dst)
    with sqlite3.connect(dst) as db:
        first, last = db.execute(
            "SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        db.execute("CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER, sourceId INTEGER, "
                   "typeName TEXT, metricId INTEGER, metricName TEXT)")
        db.execute("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (256, 0, 'GPU 0', 1, "
                   "'SMs Active [Throughput %]')")
        db.execute("CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER, "
                   "metricId INTEGER, value INTEGER)")
        db.executemany("INSERT INTO GPU_METRICS VALUES (?, 256, 1, ?)",
                       [(t, level + (t // 10_000) % 7) for t in range(first, last, 10_000)])


def test_gpu_metric_is_a_mu_column(run_cli: Runner, tmp_path: Path) -> None:
    """With (synthetic) GPU metric samples, the report's rows carry the metric by its nsys
    name, μ on both sides, and the key finding lists its move."""
    normal, abnormal = tmp_path / "n.sqlite", tmp_path / "a.sqlite"
    _with_synthetic_metric(GAUSS[3], normal, 50)
    _with_synthetic_metric(GAUSS[2], abnormal, 80)
    out = tmp_path / "cmp.json"
    code, _, err = run_cli("compare", str(normal), str(abnormal), "--format", "json",
                           "-o", str(out))
    assert code == 0, err
    comparison = json.loads(out.read_text())["comparison"]
    row = comparison["rows"][0]
    assert row["function"].startswith("Fan2(") and row["metric"] == "SMs Active [Throughput %]"
    assert 50 <= row["mu_normal"] <= 57 and 80 <= row["mu_abnormal"] <= 87


def test_gpu_metric_arithmetic_on_synthetic_rows(tmp_path: Path) -> None:
    """SYNTHETIC rows (no public export recorded with --gpu-metrics-devices was found, see
    bench/README.md), in the two tables' documented columns, added to a real export to check
    the arithmetic: a sample holds until the next one, so it is stamped with the next
    sample's time; the last is dropped; a value that is not a number is NaN, not 0; another
    GPU's samples are left out; samples far outside the run are clipped."""
    kernels_start, kernels_end = 0, 0
    with sqlite3.connect(CLOVERLEAF) as db:
        kernels_start, kernels_end = db.execute(
            "SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    step = 100_000
    stamps = list(range(kernels_start, kernels_start + 6 * step, step))
    rows = [(t, 0x100, 1, v) for t, v in zip(stamps, [10, 20, "x", 40, 50, 60], strict=True)]
    rows += [(t, 0x101, 1, 99) for t in stamps]  # GPU 1: not used by the run
    rows += [(kernels_end + 10**12, 0x100, 1, 70)]  # 1000 s after the run
    copy = tmp_path / "metrics.sqlite"
    shutil.copyfile(CLOVERLEAF, copy)
    with sqlite3.connect(copy) as db:
        db.execute("CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER, sourceId INTEGER, "
                   "typeName TEXT, metricId INTEGER, metricName TEXT)")
        db.execute("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (256, 0, 'GPU 0', 1, "
                   "'SMs Active [Throughput %]'), (257, 0, 'GPU 1', 1, "
                   "'SMs Active [Throughput %]')")
        db.execute("CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER, "
                   "metricId INTEGER, value INTEGER)")
        db.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?)", rows)
    (series,) = read_nsys(copy).runs[0].metrics
    assert (series.name, series.unit, series.source, series.device) == (
        "SMs Active [Throughput %]", "pct", "imported", 0)
    assert series.interval_ns == step
    assert series.timestamps_ns.tolist() == stamps[1:]
    assert series.values[:2].tolist() == [10.0, 20.0] and np.isnan(series.values[2])
    assert series.values[3:].tolist() == [40.0, 50.0]


def test_every_command_takes_an_export(run_cli: Runner, tmp_path: Path) -> None:
    """kernels, merge, bench, import and compare, each given nsys exports."""
    code, out, err = run_cli("kernels", str(GAUSS[2]), "--by", "name")
    assert code == 0 and "Fan2" in out, err
    code, out, err = run_cli("bench", str(GAUSS[3]))
    assert code == 0 and "detected period" in out, err
    imported = tmp_path / "r2.json.gz"
    code, _, err = run_cli("import", str(SAXPY), "--cycle-range", "saxpy", "-o", str(imported))
    assert code == 0, err
    merged = tmp_path / "optimised.json.gz"
    code, _, err = run_cli("merge", str(GAUSS[3]), str(GAUSS[5]), "-o", str(merged))
    assert code == 0, err  # two runs of one program: their process ids may differ
    out_json = tmp_path / "cmp.json"
    code, _, err = run_cli("compare", str(merged), str(GAUSS[2]), "--format", "json",
                           "-o", str(out_json))
    assert code == 0, err
    comparison = json.loads(out_json.read_text())["comparison"]
    assert comparison["findings"][0]["function"].startswith("Fan2(")


def test_import_takes_one_export_at_a_time(run_cli: Runner, tmp_path: Path) -> None:
    code, out, err = run_cli("import", str(GAUSS[3]), str(GAUSS[5]), "-o",
                             str(tmp_path / "x.json.gz"))
    assert code == 3 and out == "" and len(err.strip().splitlines()) == 1
    assert "import one export at a time" in err


def test_rows_beyond_the_input_limit_are_refused_before_reading(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFDIFF_MAX_INPUT_GIB", "0.0001")  # 107 KB: 1312 kernels need ~0.8 MB
    with pytest.raises(InputError) as caught:
        read_nsys(CLOVERLEAF)
    message = str(caught.value)
    assert "1,586 GPU records" in message  # 1312 kernels + 274 memcpy
    assert "PERFDIFF_MAX_INPUT_GIB=16" in message
    monkeypatch.setenv("PERFDIFF_MAX_INPUT_GIB", "1")
    assert read_nsys(CLOVERLEAF).runs
