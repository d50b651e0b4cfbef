"""Service runs execute in worker processes, not in the API server's process (#13).

A real `assay serve --agent module:attr` in a subprocess: a run's agent calls happen in
a run-worker child; killing that child (SIGKILL), or an agent that ends its interpreter
(`os._exit`), leaves the API answering and the run is resumed by a new worker without
re-running a finished case run; an agent that hogs a core does not slow the API down
to a halt, and cancelling its run kills its worker; an agent that crashes every time
ends the run in ERROR naming how its workers died instead of crashing forever.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_process import ServeProcess, process_gone, stored_results, wait_for

from assay.store import Store

APP = "/v1/apps/shop"

AGENT = """
import asyncio, os, time
from pathlib import Path
from assay.core.cases import Step, ToolCall, ToolResponse, Turn

CALLS = Path(os.environ["FAULT_CALLS"])


def _log(text):
    with CALLS.open("a") as out:
        out.write(f"{os.getpid()} {text}\\n")


def _reply():
    call = ToolCall(id="c1", name="get_weather", args={"city": "Paris"})
    reply = ToolResponse(id="c1", name="get_weather", response={"sky": "sunny"})
    return Turn(steps=[Step(tool_call=call), Step(tool_response=reply)], final_response="Sunny.")


async def slow(text: str) -> Turn:
    _log(text)
    await asyncio.sleep(0.3)
    return _reply()


def _stored() -> int:
    import sqlite3

    with sqlite3.connect(os.environ["FAULT_DB"]) as db:
        return db.execute("select count(*) from case_results").fetchone()[0]


async def crash_once(text: str) -> Turn:
    # Ends its interpreter the first time it sees Q2 (no exception, no cleanup), once
    # the other three cases, running alongside, are stored: they must not run again.
    _log(text)
    marker = CALLS.with_suffix(".crashed")
    if text == "Q2" and not marker.exists():
        for _ in range(600):
            if _stored() >= 3:
                break
            await asyncio.sleep(0.05)
        marker.write_text("yes")
        os._exit(3)
    await asyncio.sleep(0.05)
    return _reply()


async def always_crash(text: str) -> Turn:
    _log(text)
    os._exit(3)


async def hog(text: str) -> Turn:
    # Holds a core (and this interpreter's event loop) until killed.
    _log(text)
    while True:
        sum(range(100_000))
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "fault_agent.py").write_text(AGENT)
    return tmp_path


@pytest.fixture
def servers() -> Iterator[list[ServeProcess]]:
    started: list[ServeProcess] = []
    yield started
    for server in started:
        server.stop()


def _golden(text: str) -> dict[str, Any]:
    call = {"tool": "get_weather", "args": {"city": "Paris"}}
    steps = [
        {"userInput": {"text": text}},
        {"expectation": {"toolCall": call}},
        {"expectation": {"agentResponse": {"chunks": [{"text": "Sunny."}]}}},
    ]
    return {"displayName": text, "golden": {"turns": [{"steps": steps}]}}


def start(servers: list[ServeProcess], store_url: str, folder: Path, agent: str) -> ServeProcess:
    server = ServeProcess(
        store_url,
        folder,
        f"fault_agent:{agent}",
        env={"FAULT_CALLS": str(folder / "calls.log"), "FAULT_DB": store_url.split("///")[1]},
        log=folder / "server.log",
    )
    servers.append(server)
    return server


def start_run(server: ServeProcess, cases: int) -> tuple[str, dict[str, str]]:
    """Create `cases` goldens (Q0..) and run them; the run name and text of each id."""
    texts = {}
    for i in range(cases):
        reply = server.http.post(f"{APP}/evaluations", json=_golden(f"Q{i}"))
        assert reply.status_code == 200, reply.text
        texts[reply.json()["name"].rsplit("/", 1)[-1]] = f"Q{i}"
    reply = server.http.post(f"{APP}/evaluations:run", json={"evaluations": list(texts)})
    assert reply.status_code == 200, reply.text
    return reply.json()["metadata"]["evaluationRun"], texts


def calls(folder: Path) -> list[tuple[int, str]]:
    path = folder / "calls.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(int(pid), text) for pid, text in (line.split(" ", 1) for line in lines)]


def finished_state(server: ServeProcess, run_name: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def done() -> bool:
        found.update(server.http.get(f"/v1/{run_name}").json())
        return bool(found["state"] != "RUNNING")

    wait_for(done, f"{run_name} to finish")
    return found


@pytest.mark.slow
def test_killing_the_run_worker_resumes_the_run_and_the_api_keeps_answering(
    servers: list[ServeProcess], folder: Path, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path / 'assay.db'}"
    server = start(servers, store_url, folder, "slow")
    run_name, texts = start_run(server, cases=6)
    run_id = run_name.rsplit("/", 1)[-1]
    with Store.open(store_url) as store:
        wait_for(lambda: len(stored_results(store, run_id)) >= 2, "two stored results")
        workers = server.run_workers()
        assert len(workers) == 1, workers
        # The agent runs in the worker, never in the API process.
        assert {pid for pid, _ in calls(folder)} == {workers[0]}
        import os
        import signal

        os.kill(workers[0], signal.SIGKILL)
        wait_for(lambda: process_gone(workers[0]), "the worker to die")
        before = {case for case, _ in stored_results(store, run_id)}
        # The API process did not go down with its run.
        reply = server.http.get(f"/v1/{run_name}")
        assert reply.status_code == 200 and reply.json()["state"] == "RUNNING", reply.text
        assert server.process.poll() is None
        state = finished_state(server, run_name)
        assert state["state"] == "COMPLETED", state
        stored = stored_results(store, run_id)
        assert sorted(stored) == sorted((case, 0) for case in texts)  # each exactly once
        assert state["progress"]["completedCount"] == len(texts)
        # A case run finished before the kill was not run again by the new worker.
        made = [text for _pid, text in calls(folder)]
        for case in before:
            assert made.count(texts[case]) == 1, (texts[case], made)
        assert len({pid for pid, _ in calls(folder)}) == 2  # the killed worker and its heir
        wait_for(lambda: server.run_workers() == [], "the last worker to exit")


@pytest.mark.slow
def test_an_agent_that_ends_its_interpreter_is_resumed_once(
    servers: list[ServeProcess], folder: Path, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path / 'assay.db'}"
    server = start(servers, store_url, folder, "crash_once")
    run_name, texts = start_run(server, cases=4)
    state = finished_state(server, run_name)
    assert state["state"] == "COMPLETED", state
    with Store.open(store_url) as store:
        stored = stored_results(store, run_name.rsplit("/", 1)[-1])
    assert sorted(stored) == sorted((case, 0) for case in texts)
    made = [text for _pid, text in calls(folder)]
    # Q2 was in flight when its worker died: it runs again; no other case does.
    assert made.count("Q2") == 2 and len(made) == len(texts) + 1, made
    assert "worker process died (exit status 3); resuming it" in (folder / "server.log").read_text()


@pytest.mark.slow
def test_an_agent_that_always_crashes_ends_the_run_in_error(
    servers: list[ServeProcess], folder: Path, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path / 'assay.db'}"
    server = start(servers, store_url, folder, "always_crash")
    run_name, _texts = start_run(server, cases=1)
    state = finished_state(server, run_name)
    assert state["state"] == "ERROR", state
    assert "worker process died 5 times (last: exit status 3)" in state["errorInfo"]["errorMessage"]
    assert server.http.get("/v1/apps/shop/evaluations").status_code == 200


@pytest.mark.slow
def test_a_run_hogging_a_core_leaves_the_api_answering_and_cancel_kills_it(
    servers: list[ServeProcess], folder: Path, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path / 'assay.db'}"
    server = start(servers, store_url, folder, "hog")
    run_name, _texts = start_run(server, cases=2)
    wait_for(lambda: len(calls(folder)) >= 1, "the agent to start hogging")
    workers = server.run_workers()
    assert len(workers) == 1
    # Were the agent in the API's process, its busy loop would hold the event loop and
    # these would time out.
    for _ in range(5):
        reply = server.http.get(f"/v1/{run_name}", timeout=10)
        assert reply.status_code == 200 and reply.json()["state"] == "RUNNING"
    # CES's CancelOperation over its REST binding (what google-cloud-ces sends).
    run_id = run_name.rsplit("/", 1)[-1]
    operation = f"projects/default/locations/global/operations/run-{run_id}"
    reply = server.http.post(f"/v1beta/{operation}:cancel", json={}, timeout=10)
    assert reply.status_code == 200, reply.text
    wait_for(lambda: process_gone(workers[0]), "the cancelled run's worker to be killed")
    assert server.http.get(f"/v1/{run_name}").json()["state"] == "CANCELLED"


@pytest.mark.slow
def test_a_stopped_server_hands_its_run_back_and_a_restarted_one_finishes_it(
    servers: list[ServeProcess], folder: Path, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path / 'assay.db'}"
    server = start(servers, store_url, folder, "slow")
    run_name, texts = start_run(server, cases=8)
    run_id = run_name.rsplit("/", 1)[-1]
    with Store.open(store_url) as store:
        wait_for(lambda: len(stored_results(store, run_id)) >= 1, "a stored result")
        workers = server.run_workers()
        # SIGTERM: uvicorn shuts down gracefully (then re-raises the signal, so the exit
        # status is -15), stopping the run worker, which marks its run INTERRUPTED.
        server.stop()
        assert all(process_gone(pid) for pid in workers)
        assert store.get_run(run_id).status == "INTERRUPTED"
        before = {case for case, _ in stored_results(store, run_id)}
        assert len(before) < len(texts), "the run finished before the stop"
        restarted = start(servers, store_url, folder, "slow")
        state = finished_state(restarted, run_name)
        assert state["state"] == "COMPLETED", state
        assert sorted(stored_results(store, run_id)) == sorted((case, 0) for case in texts)
        made = [text for _pid, text in calls(folder)]
        for case in before:
            assert made.count(texts[case]) == 1, (texts[case], made)
