"""Secrets on a real `assay serve` (issue #31): nothing a client or an endpoint could
use to authenticate shows up in the server's log or in what it answers.

- A key sent as `?key=` (valid or not) is not in the access log: query values are
  masked there.
- The server's judge (`--judge-model`) answers 401 quoting the key it got: the
  `evaluateInstances` 503 names the failure without the key.
- A run stored with such an error (by `assay eval`) shows on `/ui/runs/ID` without it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_serve import CliServe

sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))
from test_cli_secrets import Endpoint, _quoting_judge

VERTEX = "/v1beta1/projects/p/locations/us-central1:evaluateInstances"


@pytest.fixture
def judge() -> Iterator[Endpoint]:
    endpoint = Endpoint(_quoting_judge)
    yield endpoint
    endpoint.close()


def _assay(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "assay", *args], cwd=cwd, env={**os.environ, **(env or {})},
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip


def test_a_key_in_the_query_string_is_not_logged(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    key = _assay(tmp_path, "keys", "create", "--name", "ci", "--store", store).stdout.strip()
    log = tmp_path / "serve.log"
    server = CliServe(store, log, "--log-level", "info", cwd=tmp_path)
    try:
        bearer = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url) as client:
            assert client.get(f"/v1/apps/a/evaluations?key={key}").status_code == 401
            got = client.get(f"/v1/apps/a/evaluations?pageSize=5&key={key}", headers=bearer)
            assert got.status_code == 200, got.text
            assert client.get(f"/ui/?token={key}x").status_code == 401
    finally:
        server.stop()
    logged = log.read_text()
    assert "GET /v1/apps/a/evaluations?key=*** HTTP/1.1" in logged, logged
    assert "?pageSize=***&key=*** HTTP/1.1" in logged, logged
    assert key not in logged and key[:12] not in logged


def test_the_server_judge_quoting_its_key_is_a_503_without_it(
    tmp_path: Path, judge: Endpoint
) -> None:
    key = f"sk-live-{uuid.uuid4().hex}"
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{judge.port}/v1", "OPENAI_API_KEY": key}
    os.environ.update(env)  # the server inherits the test's environment
    try:
        server = CliServe(
            f"sqlite:///{tmp_path / 'assay.db'}", tmp_path / "serve.log", "--no-auth",
            "--judge-model", "openai:judge-1", cwd=tmp_path,
        )  # fmt: skip
    finally:
        for name in env:
            del os.environ[name]
    try:
        body = {
            "pointwiseMetricInput": {
                "metricSpec": {"metricPromptTemplate": "Rate this: {response}"},
                "instance": {"jsonInstance": json.dumps({"response": "Paris"})},
            }
        }
        answer = httpx.post(server.base_url + VERTEX, json=body, timeout=120)
    finally:
        server.stop()
    assert judge.seen and judge.seen[0][1]["authorization"] == f"Bearer {key}"
    assert answer.status_code == 503, answer.text
    assert "Incorrect API key provided: Bearer ***" in answer.text, answer.text
    assert key not in answer.text
    assert key not in (tmp_path / "serve.log").read_text()


def test_a_stored_judge_error_shows_on_the_run_page_without_the_key(
    tmp_path: Path, judge: Endpoint
) -> None:
    key = f"sk-live-{uuid.uuid4().hex}"
    rows = [{"request": "What is 2 + 2?", "response": "4", "expected_response": "4"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{judge.port}/v1", "OPENAI_API_KEY": key}
    done = subprocess.run(
        [sys.executable, "-m", "assay", "eval", "rows.jsonl", "--from", "mlflow", "-m",
         "correctness", "--judge", "openai:judge-1", "--store", store],
        cwd=tmp_path, env={**os.environ, **env}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert judge.seen, done.stderr
    with sqlite3.connect(tmp_path / "assay.db") as db:
        ((run_id,),) = db.execute("SELECT id FROM runs").fetchall()
    server = CliServe(store, tmp_path / "serve.log", "--no-auth", cwd=tmp_path)
    try:
        with httpx.Client(base_url=server.base_url) as client:
            runs = client.get("/ui/").text
            page = client.get(f"/ui/runs/{run_id}")
            assert page.status_code == 200
    finally:
        server.stop()
    assert "Bearer ***" in page.text, page.text[:2000]
    assert key not in page.text and key not in runs


def test_no_docs_serves_no_cdn_pages(tmp_path: Path) -> None:
    """`/docs` and `/redoc` load their scripts from a CDN without integrity hashes (for
    development, docs/security.md); `--no-docs` turns them off, the schema stays."""
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    server = CliServe(store, tmp_path / "serve.log", "--no-auth", cwd=tmp_path)
    try:
        assert "cdn.jsdelivr.net" in httpx.get(server.base_url + "/docs").text
    finally:
        server.stop()
    server = CliServe(store, tmp_path / "serve.log", "--no-auth", "--no-docs", cwd=tmp_path)
    try:
        assert httpx.get(server.base_url + "/docs").status_code == 404
        assert httpx.get(server.base_url + "/redoc").status_code == 404
        assert httpx.get(server.base_url + "/openapi.json").status_code == 200
    finally:
        server.stop()
