"""Run requests name only models the operator configured (issue #31).

Before, a run body's `"judgeModel": "local:/path/outside.gguf"` made the server open
that file (and `/ui/runs/ID` showed its first bytes). Now a model a request names must
be the server's `--judge-model` or one of its `--allow-model`s; any other is 400
naming the field, before a run exists. Against a real `assay serve` in a subprocess.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_process import ServeProcess
from service_samples import golden
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store

AGENT = """
def agent(text):
    return "Sunny."
"""
RUN = "/v1/apps/shop/evaluations:run"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServeProcess]:
    (tmp_path / "plain_agent.py").write_text(AGENT)
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    Store.open(url).close()
    server = ServeProcess(
        url,
        tmp_path,
        "plain_agent:agent",
        extra=("--judge-model", "openai:judge", "--allow-model", "openai:user"),
    )
    yield server
    server.stop()


def _evaluation(server: ServeProcess) -> str:
    reply = server.http.post("/v1/apps/shop/evaluations", json=golden("weather"))
    assert reply.status_code == 200, reply.text
    name: str = reply.json()["name"]
    return name


@pytest.mark.parametrize("field", ["judgeModel", "userModel"])
def test_a_model_path_from_a_request_is_refused_and_never_opened(
    served: ServeProcess, tmp_path: Path, field: str
) -> None:
    evaluation = _evaluation(served)
    # A FIFO: had the server opened it to read a model, the request would never return.
    planted = tmp_path / "outside.gguf"
    os.mkfifo(planted)
    for model in (f"local:{planted}", "openai:gpt-4o", "anthropic:claude"):
        reply = served.http.post(RUN, json={"evaluations": [evaluation], field: model})
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert error["details"][0]["fieldViolations"][0]["field"] == field
        assert "not a model this server allows" in error["message"]
        assert "openai:judge" in error["message"] and "openai:user" in error["message"]
    assert served.http.get("/v1/apps/shop/evaluationRuns").json().get("evaluationRuns", []) == []


def test_the_configured_models_are_accepted(served: ServeProcess) -> None:
    evaluation = _evaluation(served)
    for body in ({"judgeModel": "openai:judge"}, {"userModel": "openai:user"}):
        reply = served.http.post(RUN, json={"evaluations": [evaluation], **body})
        assert reply.status_code == 200, reply.text


def test_a_server_without_models_takes_none_from_requests(tmp_path: Path) -> None:
    (tmp_path / "plain_agent.py").write_text(AGENT)
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    Store.open(url).close()
    server = ServeProcess(url, tmp_path, "plain_agent:agent")
    try:
        evaluation = _evaluation(server)
        reply = server.http.post(RUN, json={"evaluations": [evaluation], "judgeModel": "x:y"})
        assert reply.status_code == 400, reply.text
        assert "--allow-model" in reply.json()["error"]["message"]
        plain = server.http.post(RUN, json={"evaluations": [evaluation]})
        assert plain.status_code == 200, plain.text
    finally:
        server.stop()


def test_a_schedule_naming_a_model_not_allowed_is_refused(served: ServeProcess) -> None:
    evaluation = _evaluation(served)
    schedule = {
        "displayName": "nightly",
        "active": True,
        "schedulingConfig": {"frequency": "DAILY"},
        "request": {"evaluations": [evaluation], "judgeModel": "local:/srv/outside.gguf"},
    }
    url = "/v1/apps/shop/scheduledEvaluationRuns"
    reply = served.http.post(url, json=schedule)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["details"][0]["fieldViolations"][0]["field"] == "request.judgeModel"
    schedule["request"]["judgeModel"] = "openai:judge"
    created = served.http.post(url, json=schedule)
    assert created.status_code == 200, created.text
    name = created.json()["name"]
    patched = served.http.patch(
        f"/v1/{name}",
        params={"updateMask": "request"},
        json={"request": {"evaluations": [evaluation], "userModel": "openai:other"}},
    )
    assert patched.status_code == 400, patched.text
    assert patched.json()["error"]["details"][0]["fieldViolations"][0]["field"] == (
        "request.userModel"
    )


def test_a_mistyped_allowed_model_is_a_usage_error_at_start(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["serve", "--store", f"sqlite:///{tmp_path / 'a.db'}", "--allow-model", "nonsense"],
    )
    assert result.exit_code == 2, result.output
    assert "nonsense" in result.output and "Traceback" not in result.output
