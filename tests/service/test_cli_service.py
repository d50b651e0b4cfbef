"""`assay keys ...` and `assay serve` (a real server process on a loopback port)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import typer
from service_samples import error_of, golden
from typer.testing import CliRunner

from assay.cli.serve import keys_app, serve_command
from assay.store import Store

cli = typer.Typer()
cli.add_typer(keys_app, name="keys")
cli.command("serve")(serve_command)

# Mounts the commands as the `assay` CLI does, in a child process.
SERVE = (
    "import typer; from assay.cli.serve import serve_command; "
    "app = typer.Typer(); app.command()(serve_command); app()"
)


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'assay.db'}"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_keys_create_list_revoke(store_url: str) -> None:
    code, out, err = _run("keys", "list", "--store", store_url)
    assert code == 0 and "no API keys yet" in out
    code, out, err = _run("keys", "create", "--name", "ci bot", "--store", store_url)
    assert code == 0, err
    secret = out.strip()
    assert secret.startswith("assay_") and "cannot be shown again" in err
    with Store.open(store_url) as store:
        info = store.api_keys.verify(secret)
    assert info is not None and info.name == "ci bot"
    code, out, _ = _run("keys", "list", "--store", store_url)
    assert code == 0 and info.id in out and "ci bot" in out and "active" in out
    assert secret.split("_", 2)[2] not in out
    code, out, _ = _run("keys", "revoke", info.id, "--store", store_url)
    assert code == 0 and f"revoked API key {info.id}" in out
    code, out, _ = _run("keys", "list", "--store", store_url)
    assert "revoked" in out
    code, _, err = _run("keys", "revoke", "nope", "--store", store_url)
    assert code == 2 and "no API key with id 'nope'" in err


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "192.168.1.10", "example.com", "127.evil.example", "127.0.0.1.nip.io"]
)
def test_serve_refuses_no_auth_off_loopback(store_url: str, host: str) -> None:
    code, _, err = _run("serve", "--no-auth", "--host", host, "--store", store_url)
    assert code == 2
    assert f"--no-auth is refused on --host {host}" in err and "127.0.0.1" in err


def test_serve_names_the_missing_service_extra(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    code, _, err = _run("serve", "--store", store_url)
    assert code == 2
    assert "needs mcp, which is not installed" in err and ".[service]" in err


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _serving(*args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "--port", str(port), "--log-level", "warning", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"assay serve exited: {proc.communicate()[1]}")
            try:
                httpx.get(f"{base}/openapi.json", timeout=1.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    pytest.fail("assay serve did not start within 90 s")
                time.sleep(0.1)
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_with_keys(store_url: str) -> None:
    with _serving("--store", store_url) as (base, proc):
        refused = httpx.get(f"{base}/v1/apps/a/evaluations")
        assert refused.status_code == 401
        code, secret, _ = _run("keys", "create", "--name", "t", "--store", store_url)
        assert code == 0
        auth = {"Authorization": f"Bearer {secret.strip()}"}
        created = httpx.post(f"{base}/v1/apps/a/evaluations", json=golden("Served"), headers=auth)
        assert created.status_code == 200, created.text
        missing = httpx.get(f"{base}/v1/apps/a/evaluations/nope", headers=auth)
        assert error_of(missing)["status"] == "NOT_FOUND"
    _out, err = proc.communicate()
    assert "warning: the store has no active API key" in err
    assert "assay service on http://127.0.0.1:" in err


def test_serve_without_auth_on_loopback(store_url: str) -> None:
    with _serving("--no-auth", "--host", "127.0.0.1", "--store", store_url) as (base, _proc):
        body = {"displayName": "P", "personality": "x"}
        created = httpx.post(f"{base}/v1/apps/a/personas", json=body)
        assert created.status_code == 200, created.text
    with Store.open(store_url) as store:
        assert [r.display_name for r in store.resources.list_resources("a", "personas")] == ["P"]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.evil.example", False),
        ("127.0.0.1.example", False),
        ("1.2.3.4", False),
        ("::", False),
        ("0.0.0.0", False),
        ("", False),
    ],
)
def test_loopback_is_judged_by_the_parsed_address(host: str, loopback: bool) -> None:
    from assay.service.auth import is_loopback

    assert is_loopback(host) is loopback
