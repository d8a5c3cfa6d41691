"""Traces recorded by others (fixtures/kineto/foreign, provenance in fixtures/README.md): CUDA/HIP
graph replays of serving engines, an MI300X trace whose kernels sit on a device id that
deviceProperties does not list, a torch 1.8-era trace, and ``--steps`` on every input kind.

Why these: each broke the reader on first contact (issue 24): graph-replayed kernels all got
their launch's time (35 cycles of 0 ns, then exit 70), ``device: 9`` became "unknown GPU",
``cat: "Kernel"`` was read as a CPU-only trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfdiff.errors import InputError, UsageError
from perfdiff.readers.dispatch import ReadOptions, load_input, open_input
from perfdiff.readers.steps import StepRange
from perfdiff.readers.torch_profiler.spellings import (
    CATEGORY_SPELLINGS,
    GPU_KINDS,
    KERNEL,
    LAUNCH,
    TORCH_OF_CATEGORY,
    torch_of,
)
from tests.door import compare_inputs
from tests.shared_data import missing_reason, shared

FOREIGN = Path(__file__).resolve().parents[2] / "fixtures" / "kineto" / "foreign"
SGLANG_DECODE = FOREIGN / "sglang-decode.json.gz"
SGLANG_BOTH = FOREIGN / "sglang-prefilldecode.json.gz"
VLLM_DECODE = FOREIGN / "vllm-decode-full.json.gz"
VLLM_BOTH = FOREIGN / "vllm-prefilldecode-piecewise.json.gz"
TORCH18 = FOREIGN / "hta-torch18-inference_rank_1.json.gz"
LP = shared("latencyprism", "sglang")


@pytest.mark.parametrize("path", [SGLANG_DECODE, VLLM_DECODE])
def test_graph_replays_are_cut_by_gpu_start_and_no_cycle_is_empty(path: Path) -> None:
    run_file = load_input(path)
    run = run_file.runs[0]
    assert run.cycles.index.size >= 10
    assert (run.cycles.end_ns > run.cycles.start_ns).all()
    # each kernel in the cycle whose [start, end) holds its own GPU start
    inside = run.kernels.cycle >= 0
    order = np.searchsorted(run.cycles.start_ns, run.kernels.start_ns[inside], side="right") - 1
    assert (run.cycles.index[order] == run.kernels.cycle[inside]).all()
    params = run_file.workload.params
    assert params["cycles_from"] == ("detected period of the kernel sequence as run on the GPU "
                                     "(CUDA/HIP graph replays)")
    assert any("graph replays" in w for w in run_file.collection.warnings)


@pytest.mark.parametrize("path", [SGLANG_DECODE, SGLANG_BOTH, VLLM_DECODE, VLLM_BOTH])
def test_a_detected_cycle_lasts_at_least_as_long_as_its_gpu_work(path: Path) -> None:
    """SGLang prefill+decode launches eagerly and its CPU runs ahead of the GPU (0.76 ms
    between launch periods, 13.7 ms of GPU work each, 440 ms behind by the end): cut on the
    launches' clock, its cycles held 18 times their length of GPU work. Cut on the GPU's
    clock, no cycle holds more work than it lasts (a kernel may end past its cycle's end)."""
    run = load_input(path).runs[0]
    k, cycles = run.kernels, run.cycles
    length = cycles.end_ns - cycles.start_ns
    busy = np.bincount(k.cycle[k.cycle >= 0], weights=(k.end_ns - k.start_ns)[k.cycle >= 0],
                       minlength=int(cycles.index.max()) + 1)[cycles.index]
    assert (busy <= 1.05 * length).all(), float((busy / length).max())
    assert cycles.index.size >= 10


@pytest.mark.parametrize(("decode", "both"), [(SGLANG_DECODE, SGLANG_BOTH),
                                              (VLLM_DECODE, VLLM_BOTH)])
def test_a_decode_trace_is_quiet_against_itself_and_not_against_prefill(
        decode: Path, both: Path) -> None:
    same = compare_inputs(decode, decode)
    assert same.cycle_time.verdict == "no change"
    assert not [f for f in same.findings if f.verdict in ("slower", "faster")]
    other = compare_inputs(decode, both, _forced())
    assert other.normal.n_cycles > 0 and other.abnormal.n_cycles > 0
    assert other.normal.cycle_ms_mean > 0 and other.abnormal.cycle_ms_mean > 0
    assert other.cycle_time.verdict == "slower"  # prefill+decode steps are longer


def _forced() -> object:
    from perfdiff.analysis.model import CompareOptions

    return CompareOptions(force=True)


def test_an_mi300x_trace_names_its_gpu_though_its_device_id_is_not_listed() -> None:
    run_file = load_input(SGLANG_DECODE)
    assert [d.name for d in run_file.environment.devices] == ["AMD Instinct MI300X"]
    assert any("device 9 of the GPU events is not in deviceProperties" in w
               for w in run_file.collection.warnings)


def test_a_nameless_rocm_device_is_described_by_what_the_trace_says() -> None:
    devices = load_input(VLLM_DECODE).environment.devices
    assert [d.name for d in devices] == ["unnamed GPU (compute 9.4, 304 SMs/CUs, 192 GiB)"]


def test_a_torch_18_trace_is_read_as_gpu_work() -> None:
    """cat "Kernel"/"Runtime": its 4 kernels and launches are found (too few to repeat, so it
    has no cycles: one line that says so, not "a CPU-only trace")."""
    with pytest.raises(InputError) as caught:
        load_input(TORCH18)
    message = str(caught.value)
    assert "only 4 launches" in message and "CPU-only" not in message


def _categories(path: Path) -> set[str]:
    import gzip
    import json

    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return {str(e.get("cat")) for e in events if isinstance(e, dict) and "cat" in e}


def test_the_torch_era_table_holds_for_the_real_traces() -> None:
    """Each era's spellings occur in a real trace of that era, and tell it apart."""
    assert torch_of(_categories(TORCH18)) == "torch 1.8-1.9 by its category spellings"
    for path in (SGLANG_DECODE, VLLM_DECODE):
        assert torch_of(_categories(path)) == "torch >= 1.10 by its category spellings"
    seen = _categories(TORCH18) | _categories(SGLANG_DECODE) | _categories(VLLM_DECODE)
    assert {"Kernel", "Runtime", "kernel", "cuda_runtime"} <= seen & set(TORCH_OF_CATEGORY)
    assert torch_of({"python_function"}) == "an unknown torch version (not recorded)"


@pytest.mark.parametrize(("path", "era", "writer"), [
    (TORCH18, "torch 1.8-1.9", "Kineto schema not given"),
    (SGLANG_DECODE, "torch >= 1.10", "Kineto schema 1, HIP runtime"),
])
def test_a_trace_of_unknown_gpu_spellings_names_what_is_missing_and_its_torch(
        path: Path, era: str, writer: str, tmp_path: Path, run_cli: Any) -> None:
    """Item 6 of issue 24: the real trace with its GPU categories renamed, as a future Kineto
    might write them: one line naming the categories looked for, those found, and the torch
    (and Kineto, CUDA/HIP) that wrote it; exit 3, never a crash."""
    import gzip
    import json

    doc = json.loads(gzip.decompress(path.read_bytes()))
    for event in doc["traceEvents"]:
        if isinstance(event, dict) and CATEGORY_SPELLINGS.get(event.get("cat", "")) in GPU_KINDS:
            event["cat"] = "gpu_" + event["cat"] + "_v2"
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(doc))
    code, out, err = run_cli("kernels", str(renamed))
    assert code == 3 and out == "" and err.count("\n") == 1, err
    assert "no GPU events (no category of 'kernel', 'Kernel'" in err
    assert "_v2 x" in err and f"written by {era} by its category spellings" in err
    assert writer in err


def test_the_spelling_table_covers_the_real_categories() -> None:
    assert CATEGORY_SPELLINGS["Kernel"] == CATEGORY_SPELLINGS["kernel"] == KERNEL
    assert CATEGORY_SPELLINGS["Runtime"] == CATEGORY_SPELLINGS["cuda_runtime"] == LAUNCH
    import gzip
    import json

    for path in (TORCH18, SGLANG_DECODE, VLLM_DECODE):
        events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
        gpu_cats = {e["cat"] for e in events if isinstance(e, dict) and e.get("ph") == "X"
                    and str(e.get("cat", "")).lower() in ("kernel", "memcpy", "gpu_memcpy")}
        assert gpu_cats and all(cat in CATEGORY_SPELLINGS for cat in gpu_cats), path


def test_steps_keep_a_slice_of_each_sides_cycles() -> None:
    whole = load_input(SGLANG_DECODE).runs[0]
    part = load_input(SGLANG_DECODE, ReadOptions(steps=StepRange.parse("2:10"))).runs[0]
    assert part.cycles.index.tolist() == whole.cycles.index[2:10].tolist()
    assert set(part.kernels.cycle[part.kernels.cycle >= 0].tolist()) <= set(
        part.cycles.index.tolist())
    last = load_input(SGLANG_DECODE, ReadOptions(steps=StepRange.parse("-3:"))).runs[0]
    assert last.cycles.index.tolist() == whole.cycles.index[-3:].tolist()


def test_steps_on_a_run_file() -> None:
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "gpt-infer-normal.json.gz"
    whole = load_input(fixture)
    part = load_input(fixture, ReadOptions(steps=StepRange.parse("1:3")))
    for run, chosen in zip(whole.runs, part.runs, strict=True):
        measured = run.cycles.index[~run.cycles.warmup]
        assert chosen.cycles.index.tolist() == measured[1:3].tolist()
    assert any("(--steps 1:3)" in w for w in part.collection.warnings)


@pytest.mark.skipif(not LP.is_dir(), reason=missing_reason(LP))
def test_steps_on_a_latencyprism_folder() -> None:
    folder = LP / "gpu_instability" / "normal_perf_data"
    whole = open_input(folder).cycle_rows
    part = open_input(folder, ReadOptions(steps=StepRange.parse(":2"))).cycle_rows
    assert whole is not None and part is not None
    for pid in np.unique(whole.pid):
        first_two = np.unique(whole.cycle[whole.pid == pid])[:2]
        assert np.unique(part.cycle[part.pid == pid]).tolist() == first_two.tolist()


def test_bad_steps_are_one_line() -> None:
    with pytest.raises(UsageError, match="expected A:B"):
        StepRange.parse("two:five")
    with pytest.raises(InputError, match="keeps no cycle"):
        load_input(SGLANG_DECODE, ReadOptions(steps=StepRange.parse("500:")))


def test_compare_takes_steps_on_both_doors(run_cli: Any) -> None:
    """The plain line (fast parser) and the typer command (a value starting with '-')."""
    code, out, _ = run_cli("compare", str(SGLANG_DECODE), str(SGLANG_DECODE), "--steps", "2:10")
    assert code == 0 and "8 measured cycles" in out
    code, out, _ = run_cli("compare", str(SGLANG_DECODE), str(SGLANG_DECODE), "--steps=-3:")
    assert code == 0 and "3 measured cycles" in out
    code, _, err = run_cli("compare", str(SGLANG_DECODE), str(SGLANG_DECODE), "--steps", "x")
    assert code == 2 and err.count("\n") == 1 and "expected A:B" in err


def test_cycle_range_is_refused_for_inputs_that_have_their_cycles() -> None:
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "gpt-infer-normal.json.gz"
    with pytest.raises(InputError, match="--steps A:B chooses among them"):
        load_input(fixture, ReadOptions(cycle_range="x"))
