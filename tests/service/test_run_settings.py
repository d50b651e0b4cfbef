"""Service run settings are a versioned pydantic model stored with the run; the runs
side's state lives on each app's context, and runs go through the one RunSession."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from service_samples import golden
from service_server import RunningServer, create_key

from assay.agents.callable import CallableAgent
from assay.core.cases import Turn
from assay.errors import AssayError
from assay.service.context import ServiceContext
from assay.service.runs import state_of
from assay.service.settings import SETTINGS_VERSION, ServiceRunSettings
from assay.store import Store
from assay.store.eval_results import SERVICE_KEY

APP = "/v1/apps/shop"


async def _agent(text: str) -> Turn:
    return Turn(final_response="Sunny.")


def _stored(store: Store, settings: dict[str, Any], status: str = "INTERRUPTED") -> str:
    run_id = store.start_run(
        eval_set_ids=["evaluations"],
        metrics=["tool_invocation_score"],
        config={SERVICE_KEY: settings},
        agent="a",
        runs=1,
        app="shop",
    )
    store.finish_run(run_id, summary=None, status=status)
    return run_id


def _until_finished(store: Store, run_id: str) -> Any:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = store.get_run(run_id)
        if run.status not in ("RUNNING", "INTERRUPTED"):
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never finished")


def test_a_started_run_stores_versioned_settings_that_read_back(
    store: Store, start_server: Callable[..., RunningServer]
) -> None:
    server = start_server(store, agent=CallableAgent(_agent))
    http = httpx.Client(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {create_key(server.store)}"},
        timeout=30,
    )
    with http:
        made = http.post(f"{APP}/evaluations", json=golden("paris"))
        assert made.status_code == 200, made.text
        reply = http.post(
            f"{APP}/evaluations:run", json={"evaluations": [made.json()["name"]], "runCount": 2}
        )
        assert reply.status_code == 200, reply.text
    evaluation_id = made.json()["name"].rsplit("/", 1)[1]
    run_id = reply.json()["metadata"]["evaluationRun"].rsplit("/", 1)[1]
    run = _until_finished(store, run_id)
    assert run.status == "COMPLETED" and run.case_count == 2
    doc = run.config[SERVICE_KEY]
    assert doc["version"] == SETTINGS_VERSION
    settings = ServiceRunSettings.of_run(run)
    assert settings.run_count == 2 and settings.total_count == 2
    assert settings.evaluation_ids == [evaluation_id] and evaluation_id in settings.evaluations
    assert settings.owner is not None and settings.owner.instance


def test_settings_stored_before_versioning_still_read() -> None:
    old = {"evaluationIds": ["e"], "evaluations": {}, "metrics": ["m"], "runCount": None}
    settings = ServiceRunSettings.model_validate(old)
    assert settings.version == 1 and settings.run_count is None
    assert "runCount" not in settings.document()  # unset fields stay out, as before
    assert settings.document()["evaluationIds"] == ["e"]


def test_a_run_of_newer_or_broken_settings_ends_in_error_naming_why(
    store: Store, start_server: Callable[..., RunningServer]
) -> None:
    newer = _stored(store, {"version": SETTINGS_VERSION + 1, "evaluations": {}})
    broken = _stored(store, {"evaluations": {}, "runCount": "two"})
    with pytest.raises(AssayError, match="newer assay"):
        ServiceRunSettings.of_run(store.get_run(newer))
    # A server starting on the store adopts both (their owner stopped) and refuses them
    # with a message instead of guessing.
    start_server(store, agent=CallableAgent(_agent))
    first, second = _until_finished(store, newer), _until_finished(store, broken)
    assert first.status == "ERROR" and "newer assay" in (first.error or "")
    assert second.status == "ERROR" and "runCount" in (second.error or "")


def test_each_app_keeps_its_own_runs_state(store: Store) -> None:
    one, two = ServiceContext(store=store), ServiceContext(store=store)
    assert state_of(one) is state_of(one)
    assert state_of(one) is not state_of(two)
    assert state_of(one).executor.ctx is one and state_of(two).executor.ctx is two
