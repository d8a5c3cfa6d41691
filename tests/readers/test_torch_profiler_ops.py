"""The launching op and module of each kernel of a torch.profiler trace (readers/torch_profiler/
ops.py), on real traces: the programs of fixtures/kineto and TraceLens' H100 / MI300X traces."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.families import family_of
from perfdiff.readers.torch_profiler import read_torch_profiler
from perfdiff.readers.torch_profiler.ops import op_label
from perfdiff.schema.io import run_file_from_dict, run_file_to_dict
from perfdiff.schema.model import RunFile

KINETO = Path(__file__).parents[2] / "fixtures" / "kineto"


def _op_time(run_file: RunFile, column: str = "op_id") -> Counter[str]:
    """Kernel time (ns) by op (or module) label; "?" for unknown."""
    out: Counter[str] = Counter()
    for run in run_file.runs:
        k = run.kernels
        ids = getattr(k, column)
        assert ids is not None
        for i, ns in zip(ids.tolist(), (k.end_ns - k.start_ns).tolist(), strict=True):
            out[run_file.ops[i] if i >= 0 else "?"] += ns
    return out


def _gemm_ops(run_file: RunFile) -> set[str]:
    run = run_file.runs[0]
    k = run.kernels
    assert k.op_id is not None
    return {run_file.ops[o] for n, o in zip(k.name_id.tolist(), k.op_id.tolist(), strict=True)
            if family_of(run_file.strings[n].demangled) == "GEMM" and o >= 0}


def test_the_timm_gemms_are_launched_by_linear_addmm_and_its_backward_mm() -> None:
    for precision in ("bf16", "fp32"):
        rf = read_torch_profiler([KINETO / f"timm-vit-{precision}.pt.trace.json.gz"],
                                 ops=True)
        ops = _gemm_ops(rf)
        assert "aten::linear > aten::addmm" in ops, precision
        assert "AddmmBackward0 > aten::mm" in ops, precision
        assert _op_time(rf)["?"] == 0  # every kernel's launch ran under an op
        # no with_modules in these traces: no module column, rather than an empty one
        assert rf.runs[0].kernels.module_id is None


def test_gpt2_sdpa_and_eager_attention_ops() -> None:
    sdpa, eager = (_op_time(read_torch_profiler([KINETO / f"gpt2-generate-{v}.pt.trace.json.gz"],
                                                ops=True)) for v in ("sdpa", "eager"))
    attention = [op for op in sdpa if op.startswith("aten::scaled_dot_product_attention > ")]
    assert attention and sdpa[attention[0]] > 0
    assert not any(op.startswith("aten::scaled_dot_product_attention") for op in eager)
    assert eager["aten::softmax > aten::_softmax"] > 0
    assert eager["aten::matmul > aten::bmm"] > 0
    assert "aten::softmax > aten::_softmax" not in sdpa


@pytest.mark.parametrize("gpu", ["h100", "mi300"])
def test_tracelens_traces_have_ops_and_module_paths(gpu: str) -> None:
    """with_stack traces: every frame is a python_function; only nn.Module ones are modules."""
    rf = read_torch_profiler([KINETO / "tracelens" / f"{gpu}-bert-small.json.gz"], ops=True)
    ops, modules = _op_time(rf), _op_time(rf, "module_id")
    assert ops["aten::linear > aten::addmm"] == max(ops.values())
    assert any(op.startswith("aten::scaled_dot_product_attention > ") for op in ops)
    linear = [m for m in modules if m.endswith("/BertSdpaSelfAttention_0/Linear_0")]
    assert linear and linear[0].startswith("BertLMHeadModel_0/BertModel_0/")
    assert all("(" not in m for m in modules)  # file:line frames are not modules


def test_ops_survive_save_and_load() -> None:
    rf = read_torch_profiler([KINETO / "timm-vit-bf16.pt.trace.json.gz"], ops=True)
    back = run_file_from_dict(run_file_to_dict(rf), source="<memory>")
    assert back.ops == rf.ops
    k, k2 = rf.runs[0].kernels, back.runs[0].kernels
    assert k.op_id is not None and k2.op_id is not None
    assert np.array_equal(k.op_id, k2.op_id) and k2.module_id is None


def test_graph_replayed_kernels_have_no_op() -> None:
    """vLLM's full-graph decode: one hipGraphLaunch runs 421 of 425 kernels; the launch ran
    under no cpu_op, so those kernels are unknown (-1) rather than given a guessed op."""
    rf = read_torch_profiler([KINETO / "foreign" / "vllm-decode-full.json.gz"], ops=True)
    ops = _op_time(rf)
    assert ops["?"] > 0.9 * sum(ops.values())
    assert "vllm::rocm_unquantized_gemm > aten::mm" in ops


def test_ops_are_linked_only_when_asked() -> None:
    rf = read_torch_profiler([KINETO / "timm-vit-bf16.pt.trace.json.gz"])
    assert rf.runs[0].kernels.op_id is None and rf.ops == ()


@pytest.mark.parametrize(("outer", "inner", "label"), [
    ("aten::linear", "aten::addmm", "aten::linear > aten::addmm"),
    ("aten::add", "aten::add", "aten::add"),
    ("autograd::engine::evaluate_function: AddmmBackward0", "aten::mm",
     "AddmmBackward0 > aten::mm"),
])
def test_op_label(outer: str, inner: str, label: str) -> None:
    assert op_label(outer, inner) == label


def test_merged_traces_keep_each_kernels_op() -> None:
    """perfdiff merge of two imported traces: one ops table, every kernel's op as it was."""
    from perfdiff.collect.merge import merge_run_files
    from perfdiff.schema.sense import check_run_file

    parts = [read_torch_profiler([KINETO / f"gpt2-generate-{v}.pt.trace.json.gz"], ops=True)
             for v in ("eager", "sdpa")]
    merged = merge_run_files(parts, force=True)
    check_run_file(merged, "merged")
    before = [_op_time(p) for p in parts]
    assert _op_time(merged) == before[0] + before[1]
