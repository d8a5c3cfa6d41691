"""The pieces behind ``perfdiff collect -- CMD``, in-process: merge, NVTX cycles, windows,
the parent/child config and who records."""

from __future__ import annotations

import dataclasses
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from perfdiff.cli.app import _register_commands, app
from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.nvtx_cycles import NvtxCycles
from perfdiff.collect.cycles.window_cycles import fixed_windows
from perfdiff.collect.inject.child import program_name, should_record
from perfdiff.collect.inject.config import OWNER_ENV, InjectConfig, child_environment
from perfdiff.collect.merge import merge_run_files
from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace
from perfdiff.collect.user_program import exit_status, resolve_command
from perfdiff.errors import IncomparableRunsError, InputError
from perfdiff.schema.io import load_run_file, save_run_file
from perfdiff.schema.model import RunFile, Status
from tests.factories import KernelSpec, StepClock, make_run_file

# ------------------------------------------------------------------------------ merge


def _ranked(rf: RunFile, rank: int, pid: int) -> RunFile:
    runs = tuple(dataclasses.replace(r, rank=rank, pid=pid + r.index) for r in rf.runs)
    return dataclasses.replace(rf, runs=runs)


def test_merge_reinterns_names_and_keeps_every_launch() -> None:
    a = make_run_file([KernelSpec("gemm", 1.0), KernelSpec("relu", 0.1)], n_cycles=4, seed=1)
    b = make_run_file([KernelSpec("softmax", 0.3), KernelSpec("gemm", 1.0)], n_cycles=4, seed=2)
    merged = merge_run_files([_ranked(a, 0, 100), _ranked(b, 1, 200)])
    assert sorted(s.mangled for s in merged.strings) == sorted(
        {s.mangled for s in (*a.strings, *b.strings)})
    for source, run in zip((a, b), merged.runs, strict=True):
        names = [merged.strings[i].mangled for i in run.kernels.name_id]
        original = [source.strings[i].mangled for i in source.runs[0].kernels.name_id]
        assert names == original


def test_merge_names_devices_by_rank() -> None:
    shard = make_run_file(n_cycles=3, metrics=("tensor_pct",),
                          kernels=[KernelSpec("gemm", 1.0, {"tensor_pct": 50.0})])
    merged = merge_run_files([_ranked(shard, 1, 11), _ranked(shard, 0, 10)])
    assert [r.rank for r in merged.runs] == [0, 1]
    for run in merged.runs:
        assert set(run.kernels.device.tolist()) == {run.rank}
        assert {m.device for m in run.metrics} == {run.rank}
    assert [d.index for d in merged.environment.devices] == [0, 1]


def test_merge_renumbers_clashing_runs_as_replicates() -> None:
    first, second = make_run_file(n_runs=2, seed=1), make_run_file(n_runs=1, seed=2)
    merged = merge_run_files([first, second])
    assert [r.index for r in merged.runs] == [0, 1, 2]


def test_merge_keeps_incomplete_reasons_and_refuses_other_workloads() -> None:
    ok = make_run_file(seed=1)
    bad = dataclasses.replace(make_run_file(seed=2), status=Status("incomplete", "Ctrl-C"))
    merged = merge_run_files([ok, bad], ["a.json", "b.json"])
    assert merged.status == Status("incomplete", "b.json: Ctrl-C")
    other = make_run_file(workload="other")
    with pytest.raises(IncomparableRunsError,
                       match=r"b\.json and a\.json are different workloads \('other'"):
        merge_run_files([ok, other], ["a.json", "b.json"])
    assert merge_run_files([ok, other], force=True).runs
    with pytest.raises(InputError):
        merge_run_files([])


def test_merge_command_writes_a_loadable_file(tmp_path: Path) -> None:
    _register_commands()
    paths = []
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}.json.gz"
        save_run_file(_ranked(make_run_file(seed=rank), rank, 100 + rank), path)
        paths.append(str(path))
    out = tmp_path / "all.json.gz"
    result = CliRunner().invoke(app, ["merge", *paths, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "devices GPU 0, GPU 1" in result.output
    assert [r.rank for r in load_run_file(out).runs] == [0, 1]


# ------------------------------------------------------------------------------ NVTX


ranges = st.recursive(
    st.sampled_from(["a", "b"]).map(lambda name: (name, [])),
    lambda inner: st.tuples(st.sampled_from(["a", "b"]), st.lists(inner, max_size=3)),
    max_leaves=12,
)


def _calls(tree: tuple[str, list], allow_step: bool, out: list[str]) -> int:
    name, children = tree
    steps = 0
    if allow_step and name == "a":
        name = "step"
        steps = 1
    out.append(name)
    for child in children:
        steps += _calls(child, allow_step and name != "step", out)
    out.append("")
    return steps


@settings(max_examples=60, deadline=None)
@given(st.lists(ranges, max_size=6))
def test_every_step_range_is_one_cycle_whatever_nests_around_it(trees: list) -> None:
    log = CycleLog(clock_ns=StepClock(10))
    cycles = NvtxCycles(log, "step")
    module = types.ModuleType("nvtx")
    module.push_range = lambda message=None, **kw: None  # type: ignore[attr-defined]
    module.pop_range = lambda domain=None: None  # type: ignore[attr-defined]
    cycles.patch_nvtx(module)
    expected = 0
    for tree in trees:
        calls: list[str] = []
        expected += _calls(tree, True, calls)
        for call in calls:
            if call:
                module.push_range(call)  # type: ignore[attr-defined]
            else:
                module.pop_range()  # type: ignore[attr-defined]
    table = log.table()
    assert table.index.size == expected
    assert bool(np.all(table.end_ns > table.start_ns))


def test_torch_nvtx_range_and_start_end_are_wrapped() -> None:
    log = CycleLog(clock_ns=StepClock(10))
    module = types.ModuleType("torch.cuda.nvtx")
    ids = iter(range(100))
    module.range_push = lambda msg: 0  # type: ignore[attr-defined]
    module.range_pop = lambda: 0  # type: ignore[attr-defined]
    module.range_start = lambda msg: next(ids)  # type: ignore[attr-defined]
    ended: list[int] = []
    module.range_end = ended.append  # type: ignore[attr-defined]
    NvtxCycles(log, "step").patch_torch_nvtx(module)
    module.range_push("step")  # type: ignore[attr-defined]
    module.range_pop()  # type: ignore[attr-defined]
    rid = module.range_start("step")  # type: ignore[attr-defined]
    other = module.range_start("load")  # type: ignore[attr-defined]
    module.range_end(other)  # type: ignore[attr-defined]
    module.range_end(rid)  # type: ignore[attr-defined]
    assert log.table().index.size == 2
    assert ended == [1, 0]  # the library got its own ids back


# ------------------------------------------------------------------------------ windows


def _raw(launches_ns: list[int]) -> RawTrace:
    raw = RawTrace()
    for i, t in enumerate(launches_ns, start=1):
        raw.api.append(ApiRecord(i, t))
        raw.kernels.append(KernelRecord("k", 0, 7, t + 5_000_000, t + 6_000_000, i, (1, 1, 1),
                                        (1, 1, 1)))
    return raw


@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=50), st.floats(0.5, 50.0))
def test_windows_are_whole_and_start_at_the_first_launch(times: list[int], ms: float) -> None:
    table = fixed_windows(_raw(times), ms, warmup=2)
    width = round(ms * 1e6)
    n = table.index.size
    assert n == (max(times) - min(times)) // width
    if n:
        assert table.start_ns[0] == min(times)
        assert table.end_ns[-1] <= max(times)
        assert set((table.end_ns - table.start_ns).tolist()) == {width}
        assert table.warmup.tolist() == [i < 2 for i in range(n)]


def test_windows_refuse_a_non_positive_width() -> None:
    with pytest.raises(ValueError, match="--cycle-ms"):
        fixed_windows(_raw([0, 10]), 0.0)


# ------------------------------------------------------------------------------ config


def test_config_round_trips_and_rejects_unknown_keys() -> None:
    config = InjectConfig(shard_dir="/tmp/x", run_index=3, cycle_range="step",
                          metrics=("m1", "m2"), command=("python", "t.py"))
    assert InjectConfig.from_env(config.to_env()) == config
    with pytest.raises(ValueError, match="unknown keys"):
        InjectConfig.from_env('{"shard_dir": "/x", "evil": 1}')
    with pytest.raises(ValueError):
        InjectConfig.from_env("[1, 2]")


def test_child_environment_puts_boot_first_and_clears_the_owner() -> None:
    env = child_environment({"PYTHONPATH": "/mine", OWNER_ENV: "12"}, InjectConfig("/s"))
    first, rest = env["PYTHONPATH"].split(":", 1)
    assert first.endswith("inject/boot") and rest == "/mine"
    assert OWNER_ENV not in env
    assert sorted(p.name for p in Path(first).iterdir() if p.suffix == ".py") == [
        "__init__.py", "sitecustomize.py"]  # nothing else leaks into the program's imports


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["python", "train.py"], {}, True),
        (["/usr/bin/python3", "/usr/local/bin/torchrun", "--nproc-per-node", "2"], {}, False),
        (["python3", "-m", "torch.distributed.run", "x.py"], {}, False),
        (["python", "-u", "x.py"], {"RANK": "1"}, True),
        (["python", "worker.py"], {OWNER_ENV: "123"}, False),
    ],
)
def test_who_records(argv: list[str], env: dict[str, str], expected: bool) -> None:
    assert should_record(env, argv) is expected


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (("python", "train.py", "--lr", "3"), "train.py"),
        (("python3", "-u", "-m", "pkg.serve"), "-m pkg.serve"),
        (("python", "-m", "torch.distributed.run", "--nproc-per-node", "2", "a/ddp.py"),
         "-m torch.distributed.run"),
        (("torchrun", "--nproc-per-node", "2", "ddp.py"), "ddp.py"),
        (("./bench",), "bench"),
    ],
)
def test_program_name(command: tuple[str, ...], name: str) -> None:
    assert program_name(command) == name


def test_scripts_run_under_this_python(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text("")
    assert resolve_command([str(script), "1"]) == [sys.executable, str(script), "1"]
    assert exit_status(-9) == 137 and exit_status(3) == 3


# ------------------------------------------------------------------------------ collectives


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", True),
        ("ncclKernel_AllGather_RING_LL_Sum_int8_t", True),
        ("void vllm::cross_device_reduce_1stage<float, 2>(...)", False),
        ("one_shot_all_reduce_kernel", True),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", False),
        ("void at::native::reduce_kernel<512, 1>(...)", False),
    ],
)
def test_collective_names(name: str, expected: bool) -> None:
    from perfdiff.analysis.collectives import is_collective

    assert is_collective(name) is expected


def _ddp_job(factor: float, seed: int) -> RunFile:
    """Two ranks; rank 1's compute slowed by ``factor``; rank 0's all-reduce waits for it."""
    delay = (factor - 1.0) * 9.0
    rank0 = [KernelSpec("gemm_fwd", 3.0), KernelSpec("gemm_bwd", 6.0),
             KernelSpec("ncclDevKernel_AllReduce", 0.5 + delay)]
    rank1 = [KernelSpec("gemm_fwd", 3.0 * factor), KernelSpec("gemm_bwd", 6.0 * factor),
             KernelSpec("ncclDevKernel_AllReduce", 0.5)]
    return merge_run_files([_ranked(make_run_file(rank0, n_cycles=40, seed=seed), 0, 100),
                            _ranked(make_run_file(rank1, n_cycles=40, seed=seed + 1), 1, 101)])


def test_a_straggler_is_singled_out_not_the_ranks_that_wait_for_it() -> None:
    from perfdiff.analysis.comparison import compare_tables
    from perfdiff.analysis.model import CompareOptions
    from perfdiff.analysis.sides import side_from_run_file

    normal = side_from_run_file(_ddp_job(1.0, 1), source="n")
    slow = side_from_run_file(_ddp_job(1.8, 3), source="a")
    c = compare_tables(normal.table, slow.table, CompareOptions(bootstrap_resamples=200),
                       normal_meta=normal.meta, abnormal_meta=slow.meta)
    assert {d.device: d.verdict for d in c.devices} == {"GPU 0": "no change", "GPU 1": "slower"}
    from perfdiff.analysis.findings import FAMILY_LABELS

    assert c.findings[0].device == "GPU 1"  # gemm_bwd, or the GEMM family it makes slower
    kernel = next(f for f in c.findings if f.function not in FAMILY_LABELS)
    assert kernel.device == "GPU 1" and kernel.function == "gemm_bwd"
    assert c.rows[0].device == "GPU 1"


def test_ranks_line_up_by_device_whatever_their_pids() -> None:
    from perfdiff.analysis.comparison import compare_tables
    from perfdiff.analysis.model import CompareOptions
    from perfdiff.analysis.sides import side_from_run_file

    kernels = [KernelSpec("gemm", 1.0)]
    normal = merge_run_files([_ranked(make_run_file(kernels, seed=1), 0, 100),
                              _ranked(make_run_file(kernels, seed=2), 1, 101)])
    # rank 1 happened to get the lower pid this time
    other = merge_run_files([_ranked(make_run_file(kernels, seed=3), 0, 201),
                             _ranked(make_run_file(kernels, seed=4), 1, 200)])
    sides = side_from_run_file(normal, source="n"), side_from_run_file(other, source="a")
    c = compare_tables(sides[0].table, sides[1].table, CompareOptions(bootstrap_resamples=100),
                       normal_meta=sides[0].meta, abnormal_meta=sides[1].meta)
    assert not c.inventory  # nothing "appeared" or "vanished"
    assert {(r.device, r.pid) for r in c.rows if r.function == "gemm"} == {
        ("GPU 0", 100), ("GPU 1", 101)}
    assert any("matched to normal by device" in note for note in c.notes)
