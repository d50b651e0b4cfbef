"""`assay serve`'s /ui in a real Chromium: log in with an API key, a signed session
cookie, CSRF tokens on posted forms, logout, expiry; Bearer keys keep working."""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")
TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "report"), str(TESTS / "cli"), str(Path(__file__).parent)]
from browser import browser, open_page  # noqa: E402
from view_server import eval_run, serving  # noqa: E402

from assay.service.app import create_app  # noqa: E402
from assay.service.ui_session import COOKIE, LOGIN_COOKIE, SessionSigner  # noqa: E402
from assay.store import Store  # noqa: E402

__all__ = ["browser"]


class Served:
    def __init__(self, url: str, key: str, key_id: str, run_id: str, app: Any, db: Store):
        self.url, self.key, self.key_id, self.run_id = url, key, key_id, run_id
        self.app, self.db = app, db

    @property
    def signer(self) -> SessionSigner:
        return self.app.state.ui_signer  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    url = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'runs.db'}"
    run_id = eval_run(url, "examples.home_automation.agent:root_agent")
    with Store.open(url) as db:
        info, key = db.api_keys.create("browser")
        app = create_app(db)
        with serving(app) as base:
            yield Served(base, key, info.id, run_id, app, db)


def _login(page: Any, served: Served, key: str) -> None:
    page.fill("#api-key", key)
    page.click("#login-button")
    page.wait_for_load_state()


def test_a_browser_logs_in_with_a_key_sees_the_runs_and_logs_out(
    served: Served, browser: Any, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    w = open_page(browser, served.url + f"/ui/runs/{served.run_id}")
    page = w.page
    # No session: the browser is sent to the login page, which will bring it back.
    assert "/ui/login?next=" in page.url and page.locator("#api-key").count() == 1
    page.screenshot(path=str(tmp_path / "login.png"))
    # A wrong key is refused, and never written back into the page.
    wrong = served.key[:-4] + "xxxx"
    _login(page, served, wrong)
    assert "not valid" in page.inner_text("#error")
    assert wrong not in page.content() and page.locator("#api-key").input_value() == ""
    assert not [c for c in page.context.cookies() if c["name"] == COOKIE]
    # The right key: back to the page asked for, the run's report.
    _login(page, served, served.key)
    page.wait_for_selector("#summary")
    assert page.url == served.url + f"/ui/runs/{served.run_id}"
    assert page.inner_text("#summary").startswith("10 passed, 4 failed")
    (cookie,) = [c for c in page.context.cookies() if c["name"] == COOKIE]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    assert 7.9 * 3600 < cookie["expires"] - time.time() <= 8 * 3600 + 5
    secret = served.key.rsplit("_", 1)[1]
    assert secret not in cookie["value"] and served.key_id in cookie["value"]
    # Scripts cannot read it.
    assert COOKIE not in page.evaluate("document.cookie")
    # The runs page lists the run; its links stay under /ui.
    page.goto(served.url + "/ui/")
    assert served.run_id in page.locator("table.runs td.id").all_inner_texts()
    assert served.key not in page.content()
    # Logout: the cookie is gone and /ui asks for the key again.
    page.click("#logout")
    page.wait_for_selector("#api-key")
    assert not [c for c in page.context.cookies() if c["name"] == COOKIE]
    page.goto(served.url + "/ui/")
    assert "/ui/login" in page.url
    # The one error in the console is the refused login's status (401).
    assert len(w.errors) == 1 and "401" in w.errors[0] and w.outside() == []
    assert served.key not in caplog.text and wrong not in caplog.text
    page.context.close()


def test_posting_a_form_without_its_csrf_token_is_refused(served: Served, browser: Any) -> None:
    w = open_page(browser, served.url + "/ui/")
    page = w.page
    # The login form without its token (removed from the page before posting).
    page.evaluate("document.querySelector('input[name=csrf_token]').remove()")
    _login(page, served, served.key)
    assert "CSRF" in page.inner_text("#error")
    assert not [c for c in page.context.cookies() if c["name"] == COOKIE]
    # With it, the login works; then the logout form without its token is refused.
    page.goto(served.url + "/ui/")
    _login(page, served, served.key)
    page.wait_for_selector("#logout")
    page.evaluate("document.querySelector('form.logout input[name=csrf_token]').value = 'x'")
    page.click("#logout")
    assert "CSRF" in page.inner_text("#error")
    page.goto(served.url + "/ui/")
    assert page.locator("#logout").count() == 1  # still logged in
    page.context.close()


def test_an_expired_forged_or_revoked_session_is_refused(served: Served, browser: Any) -> None:
    signer = served.signer
    expired = signer.issue(served.key_id, expires=int(time.time()) - 1)
    valid = signer.issue(served.key_id)
    other_secret = SessionSigner(b"x" * 32).issue(served.key_id)
    tampered = valid.replace(served.key_id, "000000000000", 1)
    later = str(int(time.time()) + 10 * 86_400)
    extended = ".".join([served.key_id, later, *valid.split(".")[2:]])
    context = browser.new_context()
    page = context.new_page()
    for value in (expired, other_secret, tampered, extended, "junk", ""):
        context.clear_cookies()
        context.add_cookies([{"name": COOKIE, "value": value, "url": served.url + "/ui/"}])
        page.goto(served.url + "/ui/")
        assert "/ui/login" in page.url, value
    context.clear_cookies()
    context.add_cookies([{"name": COOKIE, "value": valid, "url": served.url + "/ui/"}])
    page.goto(served.url + "/ui/")
    assert page.url == served.url + "/ui/" and page.locator("#logout").count() == 1
    context.close()
    # Revoking the key ends its sessions.
    info, _key = served.db.api_keys.create("short-lived")
    session = signer.issue(info.id)
    with httpx.Client(base_url=served.url, cookies={COOKIE: session}) as client:
        assert client.get("/ui/", headers={"Accept": "text/html"}).status_code == 200
        served.db.api_keys.revoke(info.id)
        gone = client.get("/ui/", headers={"Accept": "text/html"})
        assert gone.status_code == 303 and gone.headers["location"].startswith("/ui/login")


def test_bearer_keys_keep_working_and_the_cookie_opens_only_ui(served: Served) -> None:
    session = served.signer.issue(served.key_id)
    with httpx.Client(base_url=served.url) as client:
        bearer = client.get("/ui/", headers={"Authorization": f"Bearer {served.key}"})
        assert bearer.status_code == 200 and served.run_id in bearer.text
        assert 'id="logout"' not in bearer.text  # no session, no logout form
        # A tool without a key gets the JSON 401, not the login page.
        tool = client.get("/ui/")
        assert tool.status_code == 401 and tool.json()["error"]["status"] == "UNAUTHENTICATED"
        # The cookie opens /ui, not the API.
        client.cookies.set(COOKIE, session)
        assert client.get("/ui/").status_code == 200
        api = client.get("/v1/projects/p/locations/l/apps/a/evaluations")
        assert api.status_code == 401


def test_login_form_posts_are_checked_over_http(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        form = client.get("/ui/login", params={"next": "//evil.example/x"})
        assert form.status_code == 200
        assert form.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in form.headers["content-security-policy"]
        assert 'name="next" value="/ui/"' in form.text  # no redirect off this server
        token = form.text.split('name="csrf_token" value="')[1].split('"')[0]
        assert client.cookies.get(LOGIN_COOKIE)
        ok = client.post("/ui/login", data={"csrf_token": token, "api_key": served.key,
                                            "next": "https://evil.example/"})  # fmt: skip
        assert ok.status_code == 303 and ok.headers["location"] == "/ui/"
        assert "HttpOnly" in ok.headers["set-cookie"] and "SameSite=strict" in ok.headers[
            "set-cookie"
        ].replace("Strict", "strict")
        assert "secure" not in ok.headers["set-cookie"].lower()  # plain http: not Secure
        # Behind a TLS proxy on loopback (X-Forwarded-Proto, as uvicorn trusts it): Secure.
        proxied = client.get("/ui/login", headers={"X-Forwarded-Proto": "https"})
        token = proxied.text.split('name="csrf_token" value="')[1].split('"')[0]
        assert "; secure" in proxied.headers["set-cookie"].lower()
        nonce = proxied.cookies[LOGIN_COOKIE]  # a Secure cookie: sent by hand over http here
        secure = httpx.post(
            served.url + "/ui/login", data={"csrf_token": token, "api_key": served.key},
            headers={"X-Forwarded-Proto": "https", "Cookie": f"{LOGIN_COOKIE}={nonce}"},
        )  # fmt: skip
        assert secure.status_code == 303
        assert "; secure" in secure.headers["set-cookie"].lower()
        # A token of another login form (another browser's cookie) does not fit.
        client.cookies.set(LOGIN_COOKIE, "someone-else", path="/ui")
        stolen = client.post("/ui/login", data={"csrf_token": token, "api_key": served.key})
        assert stolen.status_code == 403
        form_type = {"Content-Type": "application/x-www-form-urlencoded"}
        huge = client.post("/ui/login", content=b"a=" + b"x" * 20_000, headers=form_type)
        assert huge.status_code == 400
        assert client.put("/ui/login").status_code == 405
        assert client.get("/ui/logout").status_code == 405


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.slow
def test_a_session_holds_across_serve_workers(tmp_path: Path) -> None:
    """`assay serve --workers 2`: a cookie one worker signed opens /ui in the other (they
    share the signing secret), over many fresh connections."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Store.open(url) as db:
        _info, key = db.api_keys.create("workers")
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "serve", "--store", url, "--port", str(port),
         "--workers", "2", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read().decode()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "assay serve --workers 2 did not start"
            try:
                if httpx.get(base + "/openapi.json").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        with httpx.Client(base_url=base) as client:
            form = client.get("/ui/login").text
            token = form.split('name="csrf_token" value="')[1].split('"')[0]
            login = client.post("/ui/login", data={"csrf_token": token, "api_key": key})
            assert login.status_code == 303, login.text
            session = client.cookies[COOKIE]
        statuses = []
        for _ in range(30):  # a new connection each: the kernel spreads them over workers
            with httpx.Client(base_url=base, cookies={COOKIE: session}) as fresh:
                page = fresh.get("/ui/", headers={"Accept": "text/html"})
                statuses.append(page.status_code)
        assert statuses == [200] * 30
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    said = process.stderr.read().decode()  # type: ignore[union-attr]
    assert f"the runs in a browser at {base}/ui" in said  # where a person goes


HOSTILE_COOKIES = [
    "a.b.c.d.e.f",
    "....",
    "x" * 20_000,
    "é.1.n.sig",
    '"quoted"',
    "a;b=c",
    "\\x00",
    "k.99999999999999999999999999.n.s",
    "k.-1.n.s",
    "k.1e9.n.s",
    "k . . s",
]
HOSTILE_NEXT = ["//evil.example", "/ui/\\evil", "https://evil.example/ui/", "/ui//x",
                "javascript:alert(1)", "/other", "/ui/" + "a" * 5000]  # fmt: skip


def test_hostile_cookies_and_next_targets_get_no_500(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        for value in HOSTILE_COOKIES:
            answer = client.get(
                "/ui/", headers={"Accept": "text/html", "Cookie": f"{COOKIE}={value}".encode()}
            )
            assert answer.status_code in (303, 400, 431), (value[:40], answer.status_code)
        for target in HOSTILE_NEXT:
            form = client.get("/ui/login", params={"next": target})
            token = form.text.split('name="csrf_token" value="')[1].split('"')[0]
            done = client.post("/ui/login", data={"csrf_token": token, "api_key": served.key,
                                                  "next": target})  # fmt: skip
            assert done.status_code == 303
            location = done.headers["location"]
            assert location == target if target.startswith("/ui/a") else location == "/ui/"
        # A body that is not UTF-8, and an empty one: refused, not a 500.
        form_type = {"Content-Type": "application/x-www-form-urlencoded"}
        assert client.post("/ui/login", content=b"\xff\xfe", headers=form_type).status_code == 400
        assert client.post("/ui/login", content=b"").status_code == 403
