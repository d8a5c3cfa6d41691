"""LatencyPrism import, --seed-compatible reproduction of the seed report, the five scenarios.

Tests on the real incident data skip when ../shared/latencyprism is absent.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.analysis import columns as C
from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.findings import FAMILY_LABELS
from perfdiff.analysis.model import CompareOptions, Comparison, Finding
from perfdiff.analysis.replacements import REPLACED_PREFIX
from perfdiff.analysis.sides import cycle_rows_table
from perfdiff.errors import InputError
from perfdiff.readers.latencyprism import PERF_FILE, read_latencyprism
from tests.door import load_side
from tests.shared_data import missing_reason, shared

LP = shared("latencyprism", "sglang")
SEED = shared("seeds", "strict-comparison-report.md")
needs_lp = pytest.mark.skipif(not LP.is_dir(), reason=missing_reason(LP))

HEADER = (
    "cycle,pid,hostname,beta_pct,function_name,metric_name,device,func_type,mu_pct,sigma_pct,"
    "duration,interpolation_status,anchor_name,anchor_dur_us,cycle_start_ts,instances_count,"
    "simple_name\n"
)


def _write(folder: Path, rows: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PERF_FILE).write_text(HEADER + "".join(r + "\n" for r in rows))
    return folder


def test_import_undoes_mu_x100_and_keeps_pids(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "x_perf_data",
        [
            "1,11,,2.0,gemm,gpu_sm_frequency,GPU 7,gpu_compute,141000.0,0,20000.0,**,run_batch,"
            "1000000.0,0,65,gemm",
            "1,12,,5.0,write,,Host,disk_read_and_write,,,50000.0, ,run_batch,1000000.0,0,3,write",
        ],
    )
    table = cycle_rows_table(read_latencyprism(folder))
    assert list(table[C.METRIC_MEAN].fillna(-1)) == [1410.0, -1]
    assert list(table[C.METRIC]) == ["gpu_sm_frequency", ""]
    assert list(table[C.PID]) == [11, 12]
    assert list(table[C.TIME_MS]) == [20.0, 50.0]
    assert list(table[C.CYCLE_MS]) == [1000.0, 1000.0]
    assert list(table[C.LAUNCHES]) == [65.0, 3.0]


def test_the_csv_itself_can_be_given(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "x_perf_data",
        [
            "1,11,,2.0,gemm,gpu_sm_frequency,GPU 7,gpu_compute,141000.0,0,20000.0,**,run_batch,"
            "1000000.0,0,65,gemm",
        ],
    )
    side = load_side(folder / PERF_FILE)
    assert side.meta.source == str(folder)
    assert len(side.table) == 1


def test_bad_folders_are_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"without result_perf_data\.csv"):
        load_side(tmp_path)
    (tmp_path / PERF_FILE).write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="missing columns"):
        load_side(tmp_path)
    _write(tmp_path, ["x,11,,2.0,gemm,m,GPU 7,gpu_compute,1,0,1,*,a,1,0,1,g"])
    with pytest.raises(InputError, match=r"line 2: column 'cycle' holds .*, not a number; "):
        load_side(tmp_path)


def _lp(scenario: str, options: CompareOptions | None = None) -> Comparison:
    n = load_side(LP / scenario / "normal_perf_data")
    a = load_side(LP / scenario / "abnormal_perf_data")
    return compare_tables(
        n.table,
        a.table,
        options or CompareOptions(bootstrap_resamples=300),
        normal_meta=n.meta,
        abnormal_meta=a.meta,
    )


def _seed_number(text: str) -> float:
    return float(text.replace(",", "").replace("%", "").replace("+", ""))


def _seed_rows() -> list[list[str]]:
    rows = []
    for line in SEED.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 17 and cells[2] in ("GPU 7", "Host"):
            rows.append(cells)
    return rows


@needs_lp
@pytest.mark.skipif(not SEED.is_file(), reason=missing_reason(SEED))
def test_seed_compatible_reproduces_sections_1_and_2() -> None:
    c = _lp("gpu_instability", CompareOptions(seed_compatible=True, bootstrap_resamples=100))
    text = SEED.read_text()
    assert f"| Total Cycles        | {c.normal.n_cycles} " in text
    assert c.abnormal.n_cycles == 10
    assert f"{c.normal.cycle_ms_mean * 1000:,.2f}" == "750,054.29"
    assert f"{c.abnormal.cycle_ms_mean * 1000:,.2f}" == "785,001.80"
    assert f"{c.cycle_time.delta_pct:+.2f}%" == "+4.66%"
    ranks = re.findall(r"^\|\s+(\d+) \|\s+([\d,.]+) \| ([\d,.\-]+)\s", text, flags=re.M)
    assert len(ranks) == 12
    for rank, normal_us, abnormal_us in ranks:
        i = int(rank) - 1
        assert f"{c.normal.cycle_ms_desc[i] * 1000:,.2f}" == normal_us
        if abnormal_us != "-":
            assert c.abnormal.cycle_ms_desc[i] * 1000 == pytest.approx(_seed_number(abnormal_us))


@needs_lp
@pytest.mark.skipif(not SEED.is_file(), reason=missing_reason(SEED))
def test_seed_compatible_reproduces_top_10_detailed_rows() -> None:
    c = _lp("gpu_instability", CompareOptions(seed_compatible=True, bootstrap_resamples=100))
    assert c.test_unit == "cycles"
    seed = _seed_rows()
    assert len(c.rows) == len(seed) == 264
    for ours, theirs in zip(c.rows[:10], seed[:10], strict=True):
        assert ours.function == theirs[0]
        assert ours.metric == theirs[1] or float(theirs[3]) == pytest.approx(
            ours.suspicion, abs=0.01
        )
        assert round(ours.cycle_share_pct_normal, 2) == _seed_number(theirs[4])
        assert round(ours.cycle_share_pct_abnormal, 2) == _seed_number(theirs[5])
        assert round(ours.delta_cycle_share_pp, 2) == _seed_number(theirs[6])
        assert round(ours.z_cycle_share, 2) == _seed_number(theirs[7])
        assert ours.suspicion == pytest.approx(_seed_number(theirs[3]), rel=1e-5)
        assert round(ours.z_log_metric_mean, 2) == _seed_number(theirs[14])


@needs_lp
def test_default_mode_does_not_inflate_z_like_the_seed() -> None:
    c = _lp("gpu_instability")
    gemm = _first_kernel_finding(c)
    assert gemm.function.startswith("ampere_bf16_s16816gemm_bf16_64x64_sliced1x2")
    assert {m.metric for m in gemm.metric_moves[:2]} == {"gpu_frequency", "gpu_sm_frequency"}
    assert max(abs(r.z_cycle_share) for r in c.rows if math.isfinite(r.z_cycle_share)) < 100
    # constant on both sides: exact change, no p-value
    mem = next(r for r in c.rows if r.metric == "gpu_mem_frequency" and r.function == gemm.function)
    assert mem.delta_metric_mean == pytest.approx(0.0) and math.isnan(mem.p_metric_mean)


@needs_lp
@pytest.mark.parametrize(
    ("scenario", "function", "metrics"),
    [
        ("gpu_instability", "ampere_bf16_s16816gemm", {"gpu_sm_frequency"}),
        ("cpu_frequency_reduction", "oncpu", {"cpu_frequency"}),
        ("cpu_compute_squeeze_out", "oncpu", {"host_cpu_usage"}),
        (
            "gpu_memory_squeeze_out_NVLink",
            "void sglang::cross_device_reduce",
            {"gpu_link_receive", "gpu_link_transmit"},
        ),
    ],
)
def test_first_key_finding_names_the_fault(scenario: str, function: str, metrics: set[str]) -> None:
    c = _lp(scenario)
    first = _first_kernel_finding(c)
    assert first.function.startswith(function)
    assert metrics <= {m.metric for m in first.metric_moves}
    # only its own family may come before it (issue 23: a family that moved more leads)
    assert c.findings[0] is first or (c.findings[0].function in FAMILY_LABELS
                                      and c.findings[0].device == first.device)


def _first_kernel_finding(c: Comparison) -> Finding:
    """The first finding about one function (family and replaced rows are sums of them)."""
    return next(f for f in c.findings if f.function not in FAMILY_LABELS
                and not f.function.startswith(REPLACED_PREFIX))


@needs_lp
def test_cycles_cut_at_other_anchors_are_not_compared() -> None:
    c = _lp("cpu_frequency_reduction")
    assert not c.cycle_time.comparable
    assert any("cut differently" in n for n in c.notes)


@needs_lp
def test_two_ranks_are_kept_apart() -> None:
    c = _lp("gpu_memory_squeeze_out_NVLink")
    assert {(d.pid, d.device) for d in c.devices} == {(923228, "GPU 6"), (923229, "GPU 7")}


@needs_lp
def test_aa_halves_of_a_real_normal_run_raise_no_verdict() -> None:
    table = load_side(LP / "gpu_instability" / "normal_perf_data").table
    cycles = sorted(set(table[C.CYCLE]))
    half = cycles[len(cycles) // 2]
    c = compare_tables(
        table[table[C.CYCLE] < half],
        table[table[C.CYCLE] >= half],
        CompareOptions(bootstrap_resamples=300),
    )
    assert not [r for r in c.rows if r.verdict in ("slower", "faster")]
    assert np.isfinite(c.mde_pct)


REPORTS = LP.parent / "reports"


@needs_lp
@pytest.mark.parametrize(
    ("scenario", "pid"),
    [
        ("gpu_memory_squeeze_out_NVLink", 923229),
        ("cpu_compute_squeeze_out", 4013652),
        ("gpu_memory_squeeze_out_PCIe", 90816),
    ],
)
def test_seed_compatible_reproduces_latencyprism_reports_of_other_scenarios(
    scenario: str, pid: int
) -> None:
    """The reverse-engineered aggregation holds beyond the seed: LatencyPrism's own reports."""
    report = REPORTS / f"Processed_SGLang_{scenario}_pid{pid}_strict_comparison.md"
    if not report.is_file():
        pytest.skip(f"{report} not available")
    n = load_side(LP / scenario / "normal_perf_data").table
    a = load_side(LP / scenario / "abnormal_perf_data").table
    c = compare_tables(
        n[n[C.PID] == pid],
        a[a[C.PID] == pid],
        CompareOptions(seed_compatible=True, bootstrap_resamples=50),
    )
    text = report.read_text()
    assert f"{c.normal.cycle_ms_mean * 1000:,.2f}" in text
    assert f"{c.abnormal.cycle_ms_mean * 1000:,.2f}" in text
    theirs = [
        cells
        for line in text.splitlines()
        if len(cells := [x.strip() for x in line.strip().strip("|").split("|")]) == 17
        and cells[2].startswith(("GPU", "Host"))
    ]
    assert len(theirs) == len(c.rows)
    for ours, row in zip(c.rows[:10], theirs[:10], strict=True):
        assert ours.function == row[0]
        assert ours.suspicion == pytest.approx(_seed_number(row[3]), rel=1e-4, abs=0.01)
        assert round(ours.cycle_share_pct_normal, 2) == _seed_number(row[4])
        assert round(ours.delta_cycle_share_pp, 2) == _seed_number(row[6])
        assert round(ours.z_cycle_share, 2) == _seed_number(row[7])


ROW = "1,11,,2.0,gemm,m,GPU 7,gpu_compute,150,0,1,*,a,631190.0000,0,1,g"


def test_a_csv_cut_off_mid_row_is_refused_in_one_line(tmp_path: Path) -> None:
    """pandas filled the cut row with NaN and kept it: "631190.0" became 6311, silently."""
    folder = _write(tmp_path / "x_perf_data", [ROW, ROW.replace("1,11,", "2,11,", 1)])
    full = (folder / PERF_FILE).read_bytes()
    cut = full[: full.rindex(b"631190") + 4]  # inside anchor_dur_us of the last row
    (folder / PERF_FILE).write_bytes(cut)
    with pytest.raises(InputError) as caught:
        read_latencyprism(folder)
    message = str(caught.value)
    assert "\n" not in message
    assert str(folder / PERF_FILE) in message
    assert "last line (3)" in message and "cut off" in message and "again" in message


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=1, max_value=ROW.rindex(",")))
def test_every_cut_before_the_last_field_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                    cut: int) -> None:
    folder = tmp_path_factory.mktemp("cut")
    (folder / PERF_FILE).write_text(HEADER + ROW + "\n" + ROW[:cut])
    with pytest.raises(InputError, match="cut off"):
        read_latencyprism(folder)


def test_a_short_row_inside_the_file_is_refused(tmp_path: Path) -> None:
    short = ROW.rsplit(",", 3)[0]  # three fields missing, line end present
    folder = _write(tmp_path / "x_perf_data", [ROW, short, ROW])
    with pytest.raises(InputError, match=r"line 3 has 14 fields but the header has 17"):
        read_latencyprism(folder)


def test_a_complete_file_without_a_final_line_end_loads(tmp_path: Path) -> None:
    folder = tmp_path / "x_perf_data"
    folder.mkdir()
    (folder / PERF_FILE).write_text(HEADER + ROW + "\n\n" + ROW)
    assert len(read_latencyprism(folder)) == 2


def test_an_unclosed_quote_at_the_end_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "x_perf_data"
    folder.mkdir()
    (folder / PERF_FILE).write_text(HEADER + ROW + "\n" + ROW.replace(",gemm,", ',"gemm<a, b'))
    with pytest.raises(InputError, match="cut off"):
        read_latencyprism(folder)


@needs_lp
def test_a_truncated_copy_of_real_data_is_refused(tmp_path: Path) -> None:
    source = LP / "gpu_instability" / "normal_perf_data" / PERF_FILE
    data = source.read_bytes()
    folder = tmp_path / "normal_perf_data"
    folder.mkdir()
    (folder / PERF_FILE).write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cut off") as caught:
        load_side(folder)
    assert "\n" not in str(caught.value)
    (folder / PERF_FILE).write_bytes(data)
    assert len(load_side(folder).table) > 0
