"""The map on real Dask clusters: a local cluster and an external ``dask scheduler`` with two
``dask worker`` processes give the in-process report, and a worker killed mid-run is survived.

Small inputs (8 ranks per side, a few thousand launches each) keep this to seconds of work; the
clusters' start-up is most of the time.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfdiff.engine.run import compare_sharded
from perfdiff.engine.settings import EngineSettings
from perfdiff.errors import ClusterError
from perfdiff.report.json_report import render_json
from perfdiff.schema.shards import write_shards
from tests.rank_factories import make_job

pytest.importorskip("distributed")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def job_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("jobs")
    normal = write_shards(make_job(8, n_cycles=60, seed=1), folder / "normal")
    abnormal = write_shards(make_job(8, slower={5: {"gemm_kernel": 1.4}}, n_cycles=60, seed=2),
                            folder / "abnormal")
    return normal, abnormal


@pytest.fixture(scope="module")
def in_process_report(job_pair: tuple[Path, Path]) -> str:
    return render_json(compare_sharded(*job_pair)[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(args: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "dask", *args], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """A real scheduler and two workers on localhost (no nanny: a killed worker stays dead).
    One cluster for the module: the kill test comes last."""
    address = f"tcp://127.0.0.1:{_free_port()}"
    port = address.rsplit(":", 1)[1]
    scheduler = _start(["scheduler", "--host", "127.0.0.1", "--port", port,
                        "--no-dashboard"])
    workers = [_start(["worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                       "--name", f"w{i}"]) for i in range(2)]
    try:
        import distributed

        with distributed.Client(address, timeout="60s") as client:  # type: ignore[no-untyped-call]
            client.wait_for_workers(2, timeout=120)
        yield address, workers
    finally:
        for process in [*workers, scheduler]:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in [*workers, scheduler]:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_local_cluster_gives_the_in_process_report(job_pair: tuple[Path, Path],
                                                   in_process_report: str) -> None:
    settings = EngineSettings(in_process_max_launches=0, workers=2, min_cores=2)
    comparison, _ = compare_sharded(*job_pair, settings=settings)
    assert render_json(comparison) == in_process_report


def test_the_environment_names_the_scheduler(
        job_pair: tuple[Path, Path], in_process_report: str,
        cluster: tuple[str, list[subprocess.Popen[bytes]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster[0])
    seen: list[int] = []
    comparison, _ = compare_sharded(*job_pair, progress=lambda w, d, t: seen.append(d))
    assert render_json(comparison) == in_process_report
    assert len(seen) == 16


def test_external_scheduler_survives_a_worker_killed_mid_run(
        job_pair: tuple[Path, Path], in_process_report: str,
        cluster: tuple[str, list[subprocess.Popen[bytes]]]) -> None:
    address, workers = cluster
    victim = workers[0]
    killed_at: list[int] = []

    def kill_on_first(what: str, done: int, total: int) -> None:
        if not killed_at:
            assert victim.poll() is None  # alive until now: the kill lands mid-run
            victim.send_signal(signal.SIGKILL)
            killed_at.append(done)

    comparison, _ = compare_sharded(*job_pair, settings=EngineSettings(scheduler=address),
                                  progress=kill_on_first)
    assert killed_at == [1]
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert render_json(comparison) == in_process_report


def test_no_scheduler_there_is_one_line(job_pair: tuple[Path, Path]) -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    with pytest.raises(ClusterError, match="cannot start or reach the Dask scheduler") as err:
        compare_sharded(*job_pair, settings=EngineSettings(scheduler=address))
    assert "\n" not in str(err.value)
    assert time.monotonic() - started < 60
