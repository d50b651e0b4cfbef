"""`assay.redact`: no credential survives, ordinary text does (issue #31)."""

from __future__ import annotations

import base64
import string
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import assay.redact as redact_module
from assay.redact import MASK, redact, redact_query, redact_url, remember, remember_url


@pytest.fixture(autouse=True)
def _forget_afterwards() -> Iterator[None]:
    """What these tests `remember` is forgotten, so no other test sees it masked."""
    kept = set(redact_module._remembered)
    yield
    with redact_module._lock:
        redact_module._remembered.clear()
        redact_module._remembered.update(kept)


_secret = st.text(string.ascii_letters + string.digits + "-_.~!$*", min_size=8, max_size=40)
_word = st.text(string.ascii_lowercase, min_size=1, max_size=10)


@settings(max_examples=300, deadline=None)
@given(user=_word, password=_secret, token=_secret, other=_word)
def test_a_url_loses_its_password_and_secret_parameters(
    user: str, password: str, token: str, other: str
) -> None:
    url = f"http://{user}:{quote(password, safe='')}@127.0.0.1:8080/run?token={token}&q={other}"
    shown = redact_url(url)
    assert shown == f"http://{user}:{MASK}@127.0.0.1:8080/run?token={MASK}&q={other}"
    # Quoted in an endpoint's error, in any form a client sends it, it is masked too.
    remember_url(url)
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    said = f"refused {url}: got Authorization: Basic {basic}; the password was {password}"
    cleaned = redact(said)
    for secret in (password, quote(password, safe=""), token, basic):
        assert secret not in cleaned


@settings(max_examples=200, deadline=None)
@given(key=_secret, before=st.text(max_size=30), after=st.text(max_size=30))
def test_a_remembered_key_is_masked_wherever_it_is_quoted(
    key: str, before: str, after: str
) -> None:
    remember(key)
    assert key not in redact(f"{before}{key}{after}")
    assert quote(key, safe="") not in redact(f"{before}{quote(key, safe='')}{after}")


@pytest.mark.parametrize(
    "text",
    [
        "Token limit exceeded: 4096 tokens",
        "Basic plan has no access to this model",
        "Bearer tokens are required for this endpoint",
        "send Bearer tokens.",
        "Basic auth-only endpoint",
        "the model gpt-4o-mini is not available at http://127.0.0.1:8080/v1?stream=true",
        "rate limited; retry after 2 s",
    ],
)
def test_ordinary_error_texts_are_unchanged(text: str) -> None:
    assert redact(text) == text


def test_credentials_env_variables_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_VENDOR_API_KEY", "vk-0123456789abcdef")
    monkeypatch.setenv("PGPASSWORD", "postgres")  # not sent to endpoints: not masked
    said = "401 for vk-0123456789abcdef at postgresql://db"
    assert redact(said) == "401 for *** at postgresql://db"


def test_log_targets_lose_every_query_value() -> None:
    assert redact_query("/v1/apps?key=abc&pageSize=5&flag") == "/v1/apps?key=***&pageSize=***&flag"
    assert redact_query("/v1/apps") == "/v1/apps"
