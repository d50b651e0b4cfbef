"""A run whose server is killed mid-run is finished by another server, each case once.

Before, only a dead process id on the same host (or another host's lease) freed a run,
and only at start-up: when the dead server's process id was reused by another process,
the run stayed RUNNING forever. Now only a heartbeat within the lease proves an owner
alive, and every server looks for orphans on every beat.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_process import ServeProcess
from service_samples import golden

from assay.service._executor import owner_alive
from assay.store import Store
from assay.store.eval_results import SERVICE_KEY

APP = "/v1/apps/shop"
CASES = 4
RUNS_EACH = 2
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


def _serve(store_url: str, folder: Path) -> ServeProcess:
    """`assay serve` of the takeover agent with the short lease, in a subprocess."""
    return ServeProcess(store_url, folder, "takeover_agent:agent", lease_s=LEASE_S)


@pytest.fixture
def servers(store_url: str, tmp_path: Path) -> Iterator[list[ServeProcess]]:
    (tmp_path / "takeover_agent.py").write_text(AGENT)
    started: list[ServeProcess] = []
    yield started
    for server in started:
        server.stop()


def _start_run(server: ServeProcess) -> str:
    ids = []
    for i in range(CASES):
        reply = server.http.post(f"{APP}/evaluations", json=golden(f"Case {i}"))
        assert reply.status_code == 200, reply.text
        ids.append(reply.json()["name"])
    reply = server.http.post(
        f"{APP}/evaluations:run", json={"evaluations": ids, "runCount": RUNS_EACH}
    )
    assert reply.status_code == 200, reply.text
    run: str = reply.json()["metadata"]["evaluationRun"]
    return run


def _stored(store: Store, run_id: str) -> list[tuple[str, int]]:
    return [(d["case_id"], d["run_index"]) for d in store.case_results(run_id)]


@pytest.mark.slow
@pytest.mark.parametrize("pid_reused", [False, True], ids=["restart", "pid-reused"])
def test_a_killed_servers_run_is_taken_over_and_finished_once(
    servers: list[ServeProcess], store_url: str, tmp_path: Path, pid_reused: bool
) -> None:
    first = _serve(store_url, tmp_path)
    servers.append(first)
    run_name = _start_run(first)
    run_id = run_name.rsplit("/", 1)[-1]
    with Store.open(store_url) as store:
        deadline = time.monotonic() + DEADLINE_S
        while len(_stored(store, run_id)) < 2:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
        first.kill()
        before = _stored(store, run_id)
        assert len(before) < CASES * RUNS_EACH, "the run finished before the kill"
        if pid_reused:
            # The dead server's process id now belongs to a live process on this host
            # (this test's parent): only the stale heartbeat can free the run.
            run = store.get_run(run_id)
            config = dict(run.config)
            owner = {**config[SERVICE_KEY]["owner"], "pid": os.getppid()}
            config[SERVICE_KEY] = {**config[SERVICE_KEY], "owner": owner}
            from sqlalchemy import update

            from assay.store.schema import runs

            with store.engine.begin() as conn:
                conn.execute(update(runs).where(runs.c.id == run_id).values(config=config))
        second = _serve(store_url, tmp_path)
        servers.append(second)
        deadline = time.monotonic() + DEADLINE_S
        while True:
            state = second.http.get(f"/v1/{run_name}").json()["state"]
            if state != "RUNNING":
                break
            assert time.monotonic() < deadline, "the run is stuck RUNNING"
            time.sleep(0.2)
        assert state == "COMPLETED"
        stored = _stored(store, run_id)
        # Every case run stored exactly once, the killed server's results kept.
        assert len(stored) == len(set(stored)) == CASES * RUNS_EACH
        assert set(before) <= set(stored)
        final = store.get_run(run_id)
        assert final.config[SERVICE_KEY]["owner"]["pid"] == second.process.pid
        assert final.case_count == CASES * RUNS_EACH


def test_a_stale_heartbeat_frees_a_run_even_when_its_pid_is_alive(store: Store) -> None:
    # A unit view of the rule: same host, a live pid (this process's) that is not the
    # owner's executor, heartbeat older than the lease -> not alive.
    from datetime import timedelta

    from assay.store.types import utcnow

    run_id = store.start_run(
        eval_set_ids=["evaluations"], metrics=[], agent="a", runs=1,
        config={SERVICE_KEY: {"owner": {"host": os.uname().nodename, "pid": os.getppid(),
                                        "instance": "gone"}}},
    )  # fmt: skip
    run = store.get_run(run_id)
    assert owner_alive(run, lease_s=60)
    stale: Any = run
    object.__setattr__(stale, "updated_at", utcnow() - timedelta(seconds=61))
    assert not owner_alive(stale, lease_s=60)
