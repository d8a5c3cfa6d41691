"""The headline on every recorded pair: its parts add up to the cycle-time change, and the
first finding is a change of GPU work when cycles are host-bound under tracing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.report.markdown import render_markdown
from tests.door import compare_inputs
from tests.shared_data import missing_reason, shared

FIXTURES = Path(__file__).parents[2] / "fixtures"
PAIRS = {
    "gpt-infer": ("gpt-infer-normal.json.gz", "gpt-infer-contended.json.gz"),
    "train-step": ("train-step-normal.json.gz", "train-step-adamw-loop.json.gz"),
    "trainer-gc": ("trainer-gpt2.json.gz", "trainer-gpt2-gc.json.gz"),
    "gpt2": ("gpt2/gpt2-generate-eager.json.gz", "gpt2/gpt2-generate-sdpa.json.gz"),
    "timm": ("timm/timm-vit-bf16.json.gz", "timm/timm-vit-fp32.json.gz"),
    "ddp": ("ddp-normal.json.gz", "ddp-contended-gpu1.json.gz"),
    "kineto-train": ("kineto/kineto-train-normal.pt.trace.json.gz",
                     "kineto/kineto-train-abnormal.pt.trace.json.gz"),
    "kineto-timm": ("kineto/timm-vit-bf16.pt.trace.json.gz",
                    "kineto/timm-vit-fp32.pt.trace.json.gz"),
    "kineto-gpt2": ("kineto/gpt2-generate-eager.pt.trace.json.gz",
                    "kineto/gpt2-generate-sdpa.pt.trace.json.gz"),
}
_cache: dict[str, Comparison] = {}


def _compare(pair: str) -> Comparison:
    if pair not in _cache:
        normal, abnormal = (FIXTURES / name for name in PAIRS[pair])
        if not (normal.exists() and abnormal.exists()):
            pytest.skip(f"{pair} fixtures not found")
        _cache[pair] = compare_inputs(normal, abnormal)
    return _cache[pair]


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_the_parts_add_up_to_the_cycle_time_change(pair: str) -> None:
    c = _compare(pair)
    split = c.headline
    assert split is not None
    total = sum(p.delta_ms for p in split.parts)
    assert total == pytest.approx(split.delta_ms, rel=1e-9, abs=1e-9)
    if len({r.pid for r in c.rows}) == 1:  # one process: the report's own cycle change
        assert total == pytest.approx(c.cycle_time.delta_ms, rel=0.01)


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_gpu_idle_never_leads_alone_when_the_gpu_work_moved_more(pair: str) -> None:
    c = _compare(pair)
    split = c.headline
    assert split is not None
    idle = next(p for p in split.parts if p.kind == "idle")
    leads = [f.function for f in c.findings] or [d.function for d in c.described]
    if leads and leads[0] == "[GPU idle]":
        assert abs(idle.delta_ms) > abs(split.gpu_work_delta_ms)
        assert not (split.traced and split.host_bound)


@pytest.mark.parametrize("pair", ["timm", "kineto-timm"])
def test_bf16_to_fp32_leads_with_the_gemm_family_and_its_replaced_pairs(pair: str) -> None:
    c = _compare(pair)
    assert c.findings[0].function == "[GEMM]" and c.findings[0].verdict == "slower"
    gemm = next(p for p in c.headline.parts if p.label == "GEMM") if c.headline else None
    assert gemm is not None
    assert gemm.detail_normal.startswith("bf16, tensor core")
    assert gemm.detail_abnormal.startswith("fp32")
    pairs = {r.function: r for r in c.rows if r.function.startswith("[replaced] GEMM")}
    swap = pairs["[replaced] GEMM (bf16, tensor core) → GEMM (fp32, SIMT)"]
    assert swap.verdict == "slower" and swap.time_delta_ms > 10.0
    if pair == "kineto-timm":  # under torch.profiler the cycles are host-bound: said so
        assert c.headline is not None and c.headline.host_bound
        assert "host-bound under tracing" in render_markdown(c)


def test_a_trace_pair_of_one_step_each_is_described_not_dismissed() -> None:
    c = _compare("kineto-gpt2")
    assert c.findings == ()
    assert c.described and c.described[0].function == "[replaced] GEMM + softmax → attention"
    text = render_markdown(c)
    assert "not tested (1 vs 1 cycles)" in text
    assert "no function needs investigation" not in text
    assert "host-bound under tracing" in text


# every other pair of fixtures that compares (issue 23: "on every fixture pair the headline's
# parts sum to the cycle change within 1 %"); TraceLens' pairs: test_cross_vendor.py
MORE_PAIRS = {
    "kineto-gpt": ("kineto/kineto-gpt-normal.pt.trace.json.gz",
                   "kineto/kineto-gpt-abnormal.pt.trace.json.gz"),
    "kineto-hf": ("kineto/kineto-hf-normal.pt.trace.json.gz",
                  "kineto/kineto-hf-abnormal.pt.trace.json.gz"),
    **{f"kineto-{m}-perfdiff": (f"kineto/kineto-{m}-normal-perfdiff.json.gz",
                                f"kineto/kineto-{m}-abnormal-perfdiff.json.gz")
       for m in ("gpt", "hf", "train")},
    "linalg-rerun": ("linalg-h100-cusolver.json.gz", "linalg-h100-cusolver-rerun.json.gz"),
    "rmsnorm-rerun": ("rmsnorm-h100.json.gz", "rmsnorm-h100-rerun.json.gz"),
    "trainer-gc-ms200": ("trainer-gpt2-ms200.json.gz", "trainer-gpt2-gc-ms200.json.gz"),
    "aa": ("aa/gpt-infer-aa-01.json.gz", "aa/gpt-infer-aa-02.json.gz"),
    "nsys": ("nsys/rodinia-gaussian-report2-nsys2022.4.sqlite",
             "nsys/rodinia-gaussian-report3-nsys2022.4.sqlite"),
}
# pairs whose cycles were cut differently (fixed windows vs steps, another cycle function):
# no cycle-time change is claimed, so no headline splits one
INCOMPARABLE = {
    "linalg-magma": ("linalg-h100-cusolver.json.gz", "linalg-h100-magma.json.gz"),
    "trainer-ms200": ("trainer-gpt2.json.gz", "trainer-gpt2-ms200.json.gz"),
    "generate": ("generate-function.json.gz", "generate-found.json.gz"),
}
INCIDENTS = ("cpu_compute_squeeze_out", "gpu_instability", "gpu_memory_squeeze_out_NVLink",
             "gpu_memory_squeeze_out_PCIe")


def _assert_parts_sum(c: Comparison) -> None:
    split = c.headline
    assert split is not None
    total = sum(p.delta_ms for p in split.parts)
    assert total == pytest.approx(split.delta_ms, rel=1e-9, abs=1e-9)
    assert total == pytest.approx(c.cycle_time.delta_ms, rel=0.01)


@pytest.mark.parametrize("pair", sorted(MORE_PAIRS))
def test_every_fixture_pair_splits_its_whole_change(pair: str) -> None:
    normal, abnormal = (FIXTURES / name for name in MORE_PAIRS[pair])
    _assert_parts_sum(compare_inputs(normal, abnormal, CompareOptions(force=True)))


@pytest.mark.parametrize("pair", sorted(INCOMPARABLE))
def test_pairs_cut_differently_get_no_headline(pair: str) -> None:
    normal, abnormal = (FIXTURES / name for name in INCOMPARABLE[pair])
    c = compare_inputs(normal, abnormal, CompareOptions(force=True))
    assert not c.cycle_time.comparable and c.headline is None


@pytest.mark.parametrize("incident", INCIDENTS)
def test_latencyprism_incidents_split_their_whole_change(incident: str) -> None:
    folder = shared("latencyprism", "sglang", incident)
    if not folder.exists():
        pytest.skip(missing_reason(folder))
    _assert_parts_sum(compare_inputs(folder / "normal_perf_data", folder / "abnormal_perf_data"))


def test_ranks_that_kept_different_cycle_counts_split_the_pooled_change() -> None:
    """DDP shards (fixtures/ddp-shards, 2 x H200): rank 0 kept 19 and 7 measured cycles, rank 1
    23 and 25, so the pooled mean cycle time (+14.809 ms) and rank 1's own (+15.942 ms)
    differ. The headline pools both ranks' cycles as the mean cycle time does, each on its
    GPU, so its parts add up to the reported change, and the report says what it pooled."""
    c = compare_inputs(FIXTURES / "ddp-shards" / "normal", FIXTURES / "ddp-shards" / "slow-rank1")
    split = c.headline
    assert split is not None and split.processes == 2 and split.pid is None
    assert split.delta_ms == pytest.approx(c.cycle_time.delta_ms, rel=1e-9)
    assert sum(p.delta_ms for p in split.parts) == pytest.approx(c.cycle_time.delta_ms, rel=1e-9)
    assert split.cycle_ms_normal == pytest.approx(c.normal.cycle_ms_mean, rel=1e-9)
    headline = render_markdown(c).split("## 1.")[0]
    assert "every cycle of the 2 processes pooled" in headline


def test_one_process_has_no_pooling_sentence() -> None:
    c = compare_inputs(FIXTURES / "timm/timm-vit-bf16.json.gz",
                       FIXTURES / "timm/timm-vit-fp32.json.gz")
    assert c.headline is not None and c.headline.processes == 1
    assert "processes pooled" not in render_markdown(c).split("## 1.")[0]


def _two_ranks(folder: Path, trace: Path) -> Path:
    """The same real torch.profiler trace written as ranks 0 and 1 of one job, rank 1's host
    process renumbered (two ranks are two processes)."""
    data = json.loads(gzip.decompress(trace.read_bytes()))
    host = {e["pid"] for e in data["traceEvents"] if e.get("cat") == "cpu_op"}
    folder.mkdir()
    for rank in (0, 1):
        data["distributedInfo"] = {"rank": rank, "world_size": 2}
        if rank:
            for e in data["traceEvents"]:
                if e.get("pid") in host:
                    e["pid"] = e["pid"] + 1
        (folder / f"rank{rank}.pt.trace.json.gz").write_bytes(
            gzip.compress(json.dumps(data).encode()))
    return folder


def test_host_bound_traces_of_several_ranks_keep_the_note(tmp_path: Path) -> None:
    """The pooled split of several processes still says that tracing inflates host time, as
    the split of one process does (the timm torch.profiler traces are host-bound)."""
    bf16, fp32 = (FIXTURES / f"kineto/timm-vit-{p}.pt.trace.json.gz" for p in ("bf16", "fp32"))
    one = compare_inputs(bf16, fp32)
    two = compare_inputs(_two_ranks(tmp_path / "bf16", bf16), _two_ranks(tmp_path / "fp32", fp32))
    assert one.headline is not None and one.headline.host_bound
    assert two.headline is not None and two.headline.processes == 2 and two.headline.host_bound
    for c in (one, two):
        assert any("host-bound under tracing" in n for n in c.notes)
