"""The PostgreSQL server goes away mid-run (an immediate stop: every connection dropped)
and comes back a few seconds later, under a real `assay serve`.

While it is away the API answers 503 UNAVAILABLE (not a hang, not a 500 with a
traceback) and acknowledges nothing. Once it is back the run finishes — paused and
retried, or marked for resumption and resumed — with every case run stored exactly
once, every evaluation created with a 200 present, and no run left RUNNING.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from faults_common import (
    APP,
    assert_each_result_once,
    create_evaluations,
    golden,
    start_run,
    wait_finished,
)
from restartable_postgres import restartable_postgres
from serve_process import ServeProcess, stored_results, wait_for

from assay.store import Store
from assay.store.schema import RunStatus

AGENT = """
import asyncio
from assay.core.cases import Step, ToolCall, ToolResponse, Turn


async def agent(text: str) -> Turn:
    await asyncio.sleep(0.3)
    call = ToolCall(id="c1", name="get_weather", args={"city": "Paris"})
    reply = ToolResponse(id="c1", name="get_weather", response={"sky": "sunny"})
    return Turn(steps=[Step(tool_call=call), Step(tool_response=reply)], final_response="Sunny.")
"""
CASES = 12
DOWN_S = 4.0


@pytest.mark.slow
def test_the_database_restarted_mid_run_loses_and_doubles_nothing(
    servers: list[ServeProcess], tmp_path: Path
) -> None:
    (tmp_path / "db_agent.py").write_text(AGENT)
    with restartable_postgres() as postgres:
        store_url = postgres.create_database("faults")
        Store.open(store_url).close()  # migrated before the server opens it
        server = ServeProcess(store_url, tmp_path, "db_agent:agent", log=tmp_path / "server.log")
        servers.append(server)
        evaluations = create_evaluations(server, [f"Q{i}" for i in range(CASES)])
        run_id = start_run(server, list(evaluations))
        with Store.open(store_url) as store:
            wait_for(lambda: len(stored_results(store, run_id)) >= 2, "two stored results")
        acknowledged: list[str] = []
        answers: list[int] = []
        stop = threading.Event()

        def create() -> None:
            with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as http:
                n = 0
                while not stop.is_set():
                    n += 1
                    reply = http.post(f"{APP}/evaluations", json=golden(f"extra {n}"))
                    answers.append(reply.status_code)
                    if reply.status_code == 200:
                        acknowledged.append(reply.json()["name"])
                    time.sleep(0.05)

        creator = threading.Thread(target=create, daemon=True)
        creator.start()
        postgres.stop("immediate")
        time.sleep(DOWN_S / 2)
        down = server.http.get(f"{APP}/evaluationRuns/{run_id}", timeout=30)
        time.sleep(DOWN_S / 2)
        postgres.start()
        time.sleep(1.0)
        stop.set()
        creator.join(timeout=60)
        assert down.status_code == 503, down.text
        assert down.json()["error"]["status"] == "UNAVAILABLE"
        assert "Traceback" not in down.text
        assert set(answers) <= {200, 503}, sorted(set(answers))
        assert 503 in answers and 200 in answers, answers
        run = wait_finished(server, run_id, timeout_s=180)
        assert run["state"] == "COMPLETED", run
        with Store.open(store_url) as store:
            assert_each_result_once(store, run_id, {(eid, 0) for eid in evaluations})
            assert not [r.id for r in store.list_runs(100) if r.status == RunStatus.RUNNING.value]
        for name in acknowledged:
            reply = server.http.get(f"/v1/{name}")
            assert reply.status_code == 200, (name, reply.text)
        # The run paused while the store was away and its server resumed it at once when
        # the store came back (no lease had to run out, nothing was marked ERROR).
        assert "the store is back; resuming it" in (tmp_path / "server.log").read_text()
        server.stop()
