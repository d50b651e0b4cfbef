"""Agents that fail, hang, answer garbage or die mid-call, under a real `assay serve`.

Each evaluation's user text picks the fault (see fault_server.py and AGENT below). The
run must end COMPLETED with every case run stored exactly once: the healthy case
PASSes, each broken one is an ERROR result whose message says what went wrong — never
a run stuck RUNNING, a lost result or an API that stops answering.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_server import FaultServer
from faults_common import (
    APP,
    assert_each_result_once,
    create_evaluations,
    results_by_text,
    start_run,
    wait_finished,
)
from serve_process import ServeProcess

from assay.store import Store

AGENT = """
import asyncio
from assay.core.cases import Step, ToolCall, ToolResponse, Turn


async def agent(text: str):
    if "raise" in text:
        raise RuntimeError("the agent exploded")
    if "wrongtype" in text:
        return 42
    if "hang" in text:
        await asyncio.sleep(3600)
    call = ToolCall(id="c1", name="get_weather", args={"city": "Paris"})
    reply = ToolResponse(id="c1", name="get_weather", response={"sky": "sunny"})
    return Turn(steps=[Step(tool_call=call), Step(tool_response=reply)], final_response="Sunny.")
"""

# fault -> what the ERROR result's message must say
HTTP_FAULTS = {
    "http500": "500",
    "hang": "timed out",
    "garbage": "JSON",
    "wrongtype": "events",
    "drop": "dropped the connection before a complete reply",
}
PYTHON_FAULTS = {"raise": "the agent exploded", "wrongtype": "int", "hang": "timed out"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["http", "python"])
def test_broken_agents_give_error_results_and_the_run_completes(
    kind: str, fault_server: FaultServer, servers: list[ServeProcess], tmp_path: Path
) -> None:
    (tmp_path / "broken_agent.py").write_text(AGENT)
    store_url = f"sqlite:///{tmp_path / 'assay.db'}"
    faults = HTTP_FAULTS if kind == "http" else PYTHON_FAULTS
    spec = f"{fault_server.url}/agent" if kind == "http" else "broken_agent:agent"
    server = ServeProcess(
        store_url, tmp_path, spec, log=tmp_path / "server.log", extra=("--case-timeout", "2")
    )
    servers.append(server)
    evaluations = create_evaluations(server, ["ok", *faults])
    run_id = start_run(server, list(evaluations))
    run = wait_finished(server, run_id)
    assert run["state"] == "COMPLETED", run
    with Store.open(store_url) as store:
        assert_each_result_once(store, run_id, {(eid, 0) for eid in evaluations})
    results = results_by_text(server, run_id, evaluations)
    assert all(len(found) == 1 for found in results.values()), results
    ok = results["ok"][0]
    assert ok["executionState"] == "COMPLETED" and ok["evaluationStatus"] == "PASS", ok
    for fault, says in faults.items():
        result = results[fault][0]
        assert result["executionState"] == "ERROR", (fault, result)
        message = result["errorInfo"]["errorMessage"]
        assert says in message and "Traceback" not in message, (fault, message)
    progress = run["progress"]
    assert progress["errorCount"] == len(faults) and progress["passedCount"] == 1, progress
    assert server.http.get(f"{APP}/evaluations").status_code == 200
