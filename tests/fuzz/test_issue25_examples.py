"""Each example of issue 25's "Why", as a test: the index, and the few not tested elsewhere.

Where each example is tested (all run in CI):

- Data loss: ``import ranks/ -o ranks/rank1...``, ``compare lp/ lp/ -o lp/result_perf_data.csv``
  and a file a link in an input folder points to: tests/cli/test_outputs_inside_inputs.py and
  the hostile suite's collision cases; ``--plots`` into an unwritable folder keeps the old
  report (test_compare_with_unwritable_plots_keeps_the_old_report, test_files_land_together).
- Impossible data: every event twice, two kernels of one correlation id, kernels overlapping
  on a stream (trace and run file), overlapping ProfilerSteps and run-file cycles, a cycle of
  10^17 ns or 0 ns, utilisation of 5,000 %, 1e14 %, -50 % (run files and hardware_counters):
  tests/schema/test_sense_hostile.py (RUN_CASES, TRACE_CASES, each also through every command
  in the hostile suite, where exit 0 is a failure); LatencyPrism beta_pct 1e300 and negative
  clock readings: tests/readers/test_latencyprism_sense.py.
- Exit 70 on a user's file or option: JSON nested 100,000 deep, ``"dur": 1e1000000``, device
  2**70: tests/test_limits.py (test_hostile_documents_are_data_errors); a non-UTF-8 kernel
  name and ``baseTimeNanoseconds`` 1e30: below; ``--run-cv-pct 1e308``:
  tests/cli/test_option_limits.py; a 40 GiB file and a gzip bomb: tests/test_limits.py.
- Decompression bound (a 6 GiB bomb in < 5 s, < 1 GiB): tests/test_limits.py; the option to
  raise the limit: test_max_input_gib_* there.
- CI gate: ``--noise-floor-pct nan``, ``--min-delta-us nan`` and misspelt ``--baseline`` /
  ``--target``: tests/cli/test_option_limits.py; every numeric option of every command with
  NaN, infinities, negative and absurd values: the hostile suite's option cases.
- Half the data: an unreadable rank, a damaged gzip header, traceEvents after 1 MiB of
  metadata: tests/readers/test_missing_ranks.py; two concatenated gzip members:
  tests/test_limits.py (test_concatenated_members_are_read_whole) and the hostile suite's
  equivalent wrappings; kernels without a correlation id: no kernel with one is refused
  (TRACE_CASES "no kernel has a correlation"), a few are left out of every step with a
  counted note (docs/howto/torch-profiler.md), below.
- Wrong words: ``collect -o r.json.gz -- ./train.sh``: tests/cli/test_outputs_inside_inputs.py;
  usage errors in one line: tests/cli/test_option_limits.py and the hostile suite; trace-event
  errors naming the event and a fix: tests/readers/test_error_records.py; a JSON without
  ``traceEvents`` and a path with a newline: test_error_lines_name_where_and_what_to_do;
  ``merge`` of a trace folder: below; exit codes 2 and 3 as the reference says (never 5 for a
  bad collect option, never 4 for an output over an input): the hostile suite's option and
  collision cases.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from perfdiff.errors import ExitCode
from perfdiff.schema.io import load_run_file
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures" / "kineto" / "kineto-gpt-normal.pt.trace.json.gz"


def test_a_non_utf8_kernel_name_is_kept_with_replacement_characters(run_cli: Runner,
                                                                    tmp_path: Path) -> None:
    raw = gzip.decompress(TRACE.read_bytes())
    doc = json.loads(raw)
    name = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")["name"]
    path = tmp_path / "latin1.pt.trace.json"
    path.write_bytes(raw.replace(json.dumps(name)[1:-1].encode(), b"gemm_\xe9t\xe9", 1))
    code, out, err = run_cli("kernels", str(path), "--format", "json")
    assert code == 0, err
    assert "gemm_\ufffdt\ufffd" in json.dumps(json.loads(out), ensure_ascii=False)


def test_base_time_of_1e30_is_a_data_error(run_cli: Runner, tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress(TRACE.read_bytes()))
    doc["baseTimeNanoseconds"] = 1e30
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps(doc))
    code, _, err = run_cli("kernels", str(path))
    assert code == ExitCode.BAD_INPUT and "baseTimeNanoseconds" in err, err
    assert len(err.strip().splitlines()) == 1


def test_merge_reads_a_folder_of_rank_traces(run_cli: Runner, tmp_path: Path) -> None:
    """A documented input ('Is a directory' before issue 25)."""
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    doc = json.loads(gzip.decompress(TRACE.read_bytes()))
    for rank in (0, 1):
        doc["distributedInfo"] = {"rank": rank, "world_size": 2, "backend": "nccl"}
        (ranks / f"rank{rank}.pt.trace.json.gz").write_bytes(
            gzip.compress(json.dumps(doc).encode(), compresslevel=1))
    code, _, err = run_cli("merge", str(ranks), "-o", str(tmp_path / "merged.json.gz"))
    assert code == 0, err
    code, out, err = run_cli("kernels", str(tmp_path / "merged.json.gz"), "--format", "json")
    assert code == 0 and out, err


def test_a_kernel_without_a_correlation_is_counted_out_of_every_step(
        run_cli: Runner, tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress(TRACE.read_bytes()))
    next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")["args"].pop("correlation")
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps(doc))
    code, _, err = run_cli("import", str(path), "-o", str(tmp_path / "r.json.gz"))
    assert code == 0, err
    warnings = load_run_file(tmp_path / "r.json.gz").collection.warnings
    assert any("1 of 1000 GPU events have no matching launch" in w for w in warnings)
