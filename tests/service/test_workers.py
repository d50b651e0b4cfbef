"""`assay serve --workers N`: N processes behind one port, the store their only shared state.

A real `assay serve --workers 2` in a subprocess (SQLite file and PostgreSQL): both
workers answer; a worker killed with SIGKILL is replaced while the API keeps answering;
a run whose worker is killed mid-run is taken over by the other worker and finishes
with every case run stored exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_samples import golden
from typer.testing import CliRunner

from assay.cli import app as cli
from assay.store import Store
from assay.store.eval_results import SERVICE_KEY

APP = "/v1/apps/shop"
LEASE_S = 2.0
DEADLINE_S = 120.0

AGENT = """
import asyncio
from assay.core.cases import Step, ToolCall, ToolResponse, Turn


async def agent(text: str) -> Turn:
    await asyncio.sleep(0.25)
    call = ToolCall(id="c1", name="get_weather", args={"city": "Paris"})
    reply = ToolResponse(id="c1", name="get_weather", response={"sky": "sunny"})
    return Turn(steps=[Step(tool_call=call), Step(tool_response=reply)], final_response="Sunny.")
"""


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _children(pid: int) -> set[int]:
    """Worker processes of uvicorn's supervisor (multiprocessing's helpers left out)."""
    found = set()
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            found.add(int(child))
    return found


class Workers:
    """`assay serve --workers 2` in a subprocess."""

    def __init__(self, store_url: str, folder: Path) -> None:
        self.port = _free_port()
        env = {
            **os.environ,
            "PYTHONPATH": f"{folder}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "assay", "serve", "--store", store_url, "--no-auth",
             "--port", str(self.port), "--workers", "2", "--agent", "workers_agent:agent",
             "--run-lease", str(LEASE_S), "--log-level", "warning"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)
        deadline = time.monotonic() + DEADLINE_S
        while len(self.workers()) < 2 or not self.answers():
            assert self.process.poll() is None, self.process.stderr.read().decode()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.1)

    def workers(self) -> set[int]:
        return _children(self.process.pid)

    def answers(self) -> bool:
        try:
            return self.http.get(f"{APP}/evaluations").status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.http.close()


@pytest.fixture
def workers(store_url: str, tmp_path: Path) -> Iterator[Workers]:
    (tmp_path / "workers_agent.py").write_text(AGENT)
    started = Workers(store_url, tmp_path)
    yield started
    started.stop()


def _get(http: httpx.Client, path: str) -> httpx.Response:
    """GET, once more on a new connection if a kept-alive one died with its worker (what
    any HTTP client does; the second attempt must succeed)."""
    try:
        return http.get(path)
    except (httpx.ReadError, httpx.RemoteProtocolError):
        return http.get(path)


def _stored(store: Store, run_id: str) -> list[tuple[str, int]]:
    return [(d["case_id"], d["run_index"]) for d in store.case_results(run_id)]


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_the_api_keeps_answering(workers: Workers) -> None:
    names = []
    for i in range(6):  # writes land through whichever worker accepts them
        reply = workers.http.post(f"{APP}/evaluations", json=golden(f"Case {i}"))
        assert reply.status_code == 200, reply.text
        names.append(reply.json()["name"])
    victim = min(workers.workers())
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + DEADLINE_S
    answered = 0
    while victim in workers.workers() or len(workers.workers()) < 2:
        assert time.monotonic() < deadline, "the killed worker was not replaced"
        for name in names:  # every acknowledged write is readable, whoever answers
            reply = _get(workers.http, f"/v1/{name}")
            assert reply.status_code == 200, reply.text
            answered += 1
        time.sleep(0.05)
    assert answered > 0
    listed = workers.http.get(f"{APP}/evaluations").json()["evaluations"]
    assert sorted(e["name"] for e in listed) == sorted(names)


@pytest.mark.slow
def test_a_run_of_a_killed_worker_is_finished_by_another_once(
    workers: Workers, store_url: str
) -> None:
    ids = []
    for i in range(4):
        reply = workers.http.post(f"{APP}/evaluations", json=golden(f"Case {i}"))
        assert reply.status_code == 200, reply.text
        ids.append(reply.json()["name"])
    reply = workers.http.post(f"{APP}/evaluations:run", json={"evaluations": ids, "runCount": 2})
    assert reply.status_code == 200, reply.text
    run_name = reply.json()["metadata"]["evaluationRun"]
    run_id = run_name.rsplit("/", 1)[-1]
    with Store.open(store_url) as store:
        deadline = time.monotonic() + DEADLINE_S
        while len(_stored(store, run_id)) < 2:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
        owner = store.get_run(run_id).config[SERVICE_KEY]["owner"]["pid"]
        assert owner in workers.workers()
        os.kill(owner, signal.SIGKILL)
        before = _stored(store, run_id)
        assert len(before) < 8, "the run finished before the kill"
        deadline = time.monotonic() + DEADLINE_S
        while True:
            reply = _get(workers.http, f"/v1/{run_name}")  # the API answers throughout
            assert reply.status_code == 200, reply.text
            if reply.json()["state"] != "RUNNING":
                break
            assert time.monotonic() < deadline, "the run is stuck RUNNING"
            time.sleep(0.2)
        assert reply.json()["state"] == "COMPLETED"
        stored = _stored(store, run_id)
        assert len(stored) == len(set(stored)) == 8  # each case run once
        assert set(before) <= set(stored)
        assert store.get_run(run_id).config[SERVICE_KEY]["owner"]["pid"] != owner


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "--workers must be from 1 to 64"),
        (["--workers", "65"], "--workers must be from 1 to 64"),
        (["--workers", "2", "--store", "sqlite://"], "not an in-memory database"),
        (["--workers", "2", "--grpc-port", "0"], "--grpc-port 0"),
    ],
)
def test_bad_worker_settings_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    store = ["--store", f"sqlite:///{tmp_path / 'a.db'}"] if "--store" not in args else []
    result = CliRunner().invoke(cli, ["serve", "--no-auth", *store, *args])
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " ")
