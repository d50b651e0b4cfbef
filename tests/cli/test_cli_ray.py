"""`assay eval --executor ray`: a real `assay eval` process joining a local Ray cluster
(`ray.init(num_cpus=2)`, one for the module), stopped by Ctrl-C or SIGTERM midway: the
run is INTERRUPTED, and the same command again resumes it without re-running a stored
case. Wrong executor settings are usage errors (exit 2, one line)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from logging_agent import default_sigint
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CASES = 8
ROWS = "examples/recorded/home_rows.jsonl"


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def _setup(tmp_path: Path, address: str) -> tuple[list[str], Path]:
    # The log path is written into the agent: Ray's workers do not get this driver's
    # environment.
    log = tmp_path / "calls.log"
    (tmp_path / "slowbot.py").write_text(
        textwrap.dedent(
            f"""
            import time

            def answer(prompt):
                with open({str(log)!r}, "a") as fh:
                    fh.write(prompt + "\\n")
                time.sleep(0.4)
                return prompt.upper()
            """
        ),
        encoding="utf-8",
    )
    rows = [{"id": f"q{i}", "prompt": f"q{i}", "reference": f"Q{i}"} for i in range(CASES)]
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    db = tmp_path / "assay.db"
    command = [
        sys.executable, "-m", "assay", "eval", str(data), "--agent", "slowbot:answer",
        "--metric", "response_match_score", "--store", f"sqlite:///{db}",
        "--concurrency", "1", "--quiet", "--executor", "ray", "--ray-address", address,
    ]  # fmt: skip
    return command, db


def _stored(db: Path) -> set[str]:
    if not db.exists():
        return set()
    with Store.open(f"sqlite:///{db}") as store:
        runs = store.list_runs()
        return {case for _, case, _ in store.completed_case_keys(runs[-1].id)} if runs else set()


def _calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls.log"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


@pytest.mark.slow  # two `assay eval` processes joining the cluster: 15-20 s each under load
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_ray_run_is_interrupted_and_resumes(
    tmp_path: Path, address: str, signum: signal.Signals
) -> None:
    command, db = _setup(tmp_path, address)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, text=True, preexec_fn=default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(_stored(db)) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no case results stored in time"
            time.sleep(0.05)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "run the same command again to resume" in stderr.replace("\n", " ")
    with Store.open(f"sqlite:///{db}") as store:
        (run,) = store.list_runs()
        assert run.status == "INTERRUPTED"
    done_before = _stored(db)
    assert 2 <= len(done_before) < CASES
    calls_before = len(_calls(tmp_path))
    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=180, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"resuming run {run.id}: {len(done_before)} of {CASES}" in again.stderr.replace(
        "\n", " "
    )
    with Store.open(f"sqlite:///{db}") as store:
        finished = store.get_run(run.id)
        assert (finished.status, finished.passed, finished.total) == ("COMPLETED", CASES, CASES)
        stored = Counter(doc["case_id"] for doc in store.case_results(run.id))
    assert stored == Counter(f"q{i}" for i in range(CASES))  # each case stored once
    resumed = _calls(tmp_path)[calls_before:]
    assert not done_before & set(resumed)  # nothing already stored ran again
    assert set(resumed) == {f"q{i}" for i in range(CASES)} - done_before


runner = CliRunner()


def test_an_unknown_executor_lists_the_choices() -> None:
    result = runner.invoke(app, ["eval", ROWS, "--executor", "spark", "--no-store"])
    assert result.exit_code == 2
    assert "unknown executor 'spark'; use one of local, ray" in result.output
    assert "Traceback" not in result.output


def test_ray_address_without_the_ray_executor_is_refused() -> None:
    result = runner.invoke(app, ["eval", ROWS, "--ray-address", "127.0.0.1:6379", "--no-store"])
    assert result.exit_code == 2
    assert "--ray-address is for --executor ray" in result.output


def test_workers_are_for_the_local_executor() -> None:
    result = runner.invoke(
        app, ["eval", ROWS, "--executor", "ray", "--workers", "2", "--no-store", "-m", "rouge_1"]
    )
    assert result.exit_code == 2
    assert "--workers sets the local processes" in result.output
    assert "drop --workers" in result.output


def test_a_dead_ray_address_fails_fast() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = subprocess.run(
        [sys.executable, "-m", "assay", "eval", ROWS, "--no-store", "--executor", "ray",
         "--ray-address", f"127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"--ray-address 127.0.0.1:{port}: no Ray cluster answers there" in result.stderr
    assert "Traceback" not in result.stderr
