"""Headless Chromium (Debian's /usr/bin/chromium) through Playwright, for browser tests.

Every page records its console errors, page errors and every request it made, so tests
can assert the page worked offline: nothing but file:, data: and 127.0.0.1 URLs.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
LOCAL_PREFIXES = ("file://", "data:", "about:", "http://127.0.0.1", "ws://127.0.0.1")


@dataclass
class Watched:
    page: Any
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def outside(self) -> list[str]:
        """Requests that left the machine (or went anywhere but loopback and files)."""
        return [u for u in self.requests if not u.startswith(LOCAL_PREFIXES)]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM):
        pytest.skip("Chromium is not installed (.ci/run installs it: apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


def open_page(browser: Any, url: str, *, width: int = 1300, height: int = 900) -> Watched:
    page = browser.new_page(viewport={"width": width, "height": height})
    watched = Watched(page)
    page.on("console", lambda m: watched.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: watched.errors.append(str(e)))
    page.on("request", lambda r: watched.requests.append(r.url))
    page.goto(url)
    return watched
