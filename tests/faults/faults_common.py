"""What the fault scenarios share: evaluations to run and the invariants they check."""

from __future__ import annotations

from typing import Any

from serve_process import ServeProcess, stored_results, wait_for

from assay.store import Store

APP = "/v1/apps/shop"


def golden(text: str) -> dict[str, Any]:
    """A one-turn golden whose user says `text`, expecting get_weather and "Sunny."."""
    call = {"tool": "get_weather", "args": {"city": "Paris"}}
    steps = [
        {"userInput": {"text": text}},
        {"expectation": {"toolCall": call}},
        {"expectation": {"agentResponse": {"chunks": [{"text": "Sunny."}]}}},
    ]
    return {"displayName": text, "golden": {"turns": [{"steps": steps}]}}


def create_evaluations(server: ServeProcess, texts: list[str]) -> dict[str, str]:
    """Create one golden per text; {evaluation id: text}."""
    made = {}
    for text in texts:
        reply = server.http.post(f"{APP}/evaluations", json=golden(text))
        assert reply.status_code == 200, reply.text
        made[reply.json()["name"].rsplit("/", 1)[-1]] = text
    return made


def start_run(server: ServeProcess, ids: list[str], **request: Any) -> str:
    """Start a run of `ids`; its run id."""
    reply = server.http.post(f"{APP}/evaluations:run", json={"evaluations": ids, **request})
    assert reply.status_code == 200, reply.text
    name: str = reply.json()["metadata"]["evaluationRun"]
    return name.rsplit("/", 1)[-1]


def wait_finished(server: ServeProcess, run_id: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """Poll the API until the run is no longer RUNNING; its final JSON."""
    found: dict[str, Any] = {}

    def done() -> bool:
        reply = server.http.get(f"{APP}/evaluationRuns/{run_id}")
        assert reply.status_code == 200, reply.text
        found.clear()
        found.update(reply.json())
        return bool(found["state"] != "RUNNING")

    wait_for(done, f"run {run_id} to finish", timeout_s)
    return found


def assert_each_result_once(store: Store, run_id: str, expected: set[tuple[str, int]]) -> None:
    """Every case run of the run stored exactly once (none missing, none doubled)."""
    stored = stored_results(store, run_id)
    assert len(stored) == len(set(stored)), f"duplicated results: {sorted(stored)}"
    assert set(stored) == expected, f"stored {sorted(stored)}, expected {sorted(expected)}"


def results_by_text(
    server: ServeProcess, run_id: str, evaluations: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """The run's results read through the API, by the evaluation's user text."""
    out: dict[str, list[dict[str, Any]]] = {}
    for eid, text in evaluations.items():
        reply = server.http.get(
            f"{APP}/evaluations/{eid}/results",
            params={"filter": f'evaluationRun="{APP[4:]}/evaluationRuns/{run_id}"'},
        )
        assert reply.status_code == 200, reply.text
        out[text] = reply.json()["evaluationResults"]
    return out
