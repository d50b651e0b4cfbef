"""Credentials stay out of every output (issue #31), with the real CLI in a subprocess.

A judge endpoint on loopback whose 401 quotes the `Authorization` header it got, and
an HTTP agent called as `http://user:PW@127.0.0.1:PORT/run?token=TOK` whose errors
quote the URL and headers it received: the key, the password, the token (and the
Basic credentials made of them) appear in no output: stdout, stderr, `--out`, `--csv`,
`--html`, `--junit`, and no byte of the store's files.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

Answer = Callable[[str, dict[str, str], dict[str, Any]], tuple[int, dict[str, Any]]]


class Endpoint:
    """An HTTP server on 127.0.0.1 answering `answer(path, headers, body)`."""

    def __init__(self, answer: Answer) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                owner.seen.append((self.path, headers))
                status, payload = answer(self.path, headers, json.loads(raw or b"{}"))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoints() -> Iterator[list[Endpoint]]:
    made: list[Endpoint] = []
    yield made
    for endpoint in made:
        endpoint.close()


def _quoting_judge(path: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    """OpenAI's 401, quoting what it was sent (some proxies do)."""
    said = f"Incorrect API key provided: {headers.get('authorization')} (path {path})"
    return 401, {"error": {"message": said, "type": "invalid_request_error"}}


def _assay(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=tmp_path, env={**os.environ, **(env or {})}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def _outputs(tmp_path: Path) -> list[str]:
    return ["--out", "o.json", "--csv", "o.csv", "--html", "o.html", "--junit", "o.xml",
            "--store", f"sqlite:///{tmp_path / 'assay.db'}"]  # fmt: skip


def _no_trace(tmp_path: Path, texts: list[str], secrets: list[str]) -> None:
    """No secret in `texts` nor in any file under tmp_path (the store's included)."""
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("assay.db") for p in files)
    for secret in secrets:
        for text in texts:
            assert secret not in text
        for path in files:
            assert secret.encode() not in path.read_bytes(), f"{secret} in {path.name}"


def _rows(tmp_path: Path) -> None:
    rows = [{"request": "What is 2 + 2?", "response": "4", "expected_response": "4"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_judge_quoting_its_key_leaves_no_trace(tmp_path: Path, endpoints: list[Endpoint]) -> None:
    judge = Endpoint(_quoting_judge)
    endpoints.append(judge)
    key = f"sk-live-{uuid.uuid4().hex}"
    _rows(tmp_path)
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{judge.port}/v1", "OPENAI_API_KEY": key}
    done = _assay(tmp_path, "eval", "rows.jsonl", "--from", "mlflow", "-m", "correctness",
                  "--judge", "openai:judge-1", *_outputs(tmp_path), env=env)  # fmt: skip
    assert judge.seen and judge.seen[0][1]["authorization"] == f"Bearer {key}"
    shown = done.stdout + done.stderr
    # The failure is shown (with what the endpoint said), the key is not.
    report = (tmp_path / "o.json").read_text()
    assert "401" in report and "Incorrect API key provided: Bearer ***" in report, report
    _no_trace(tmp_path, [shown], [key])


def test_an_explicit_key_is_masked_without_its_environment_variable() -> None:
    """A key handed to a backend (`judge_api_key`, not from the environment) is masked
    in whatever the endpoint answers, quoted bare (without `Bearer`)."""
    from assay.models.backends import api_key_or_placeholder
    from assay.models.types import ModelCallError

    key = f"k{uuid.uuid4().hex}"
    api_key_or_placeholder(key, own_endpoint=False, missing="")
    error = ModelCallError(f"HTTP 403: the key {key} is not allowed", retryable=False)
    assert key not in str(error) and "the key *** is not allowed" in str(error)


def _agent(path: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    """An agent that fails, quoting the URL and the Authorization header it got."""
    said = f"cannot serve {path}; you sent Authorization: {headers.get('authorization')}"
    return 500, {"error": said}


def test_agent_url_password_and_token_are_shown_and_stored_without_them(
    tmp_path: Path, endpoints: list[Endpoint]
) -> None:
    agent = Endpoint(_agent)
    endpoints.append(agent)
    password, token = f"PW{uuid.uuid4().hex[:12]}", f"TOK{uuid.uuid4().hex[:12]}"
    url = f"http://user:{password}@127.0.0.1:{agent.port}/run?token={token}&mode=chat"
    _rows(tmp_path)
    done = _assay(tmp_path, "eval", "rows.jsonl", "--from", "mlflow", "-m",
                  "response_match_score", "--agent", url, *_outputs(tmp_path))  # fmt: skip
    assert agent.seen, done.stdout + done.stderr
    path, headers = agent.seen[0]
    assert token in path and headers["authorization"].startswith("Basic ")
    basic = headers["authorization"].removeprefix("Basic ")
    shown = f"http://user:***@127.0.0.1:{agent.port}/run?token=***&mode=chat"
    with sqlite3.connect(tmp_path / "assay.db") as db:
        assert db.execute("SELECT agent FROM runs").fetchall() == [(shown,)]
    # Shown without them: the agent's label in the reports, its error in every output.
    for name in ("o.json", "o.html", "o.csv"):
        assert shown in (tmp_path / name).read_text(), name
    assert "you sent Authorization: Basic ***" in (tmp_path / "o.json").read_text()
    _no_trace(tmp_path, [done.stdout + done.stderr], [password, token, basic])
