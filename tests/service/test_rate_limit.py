"""`assay serve --rate-limit`: a token bucket per API key (per address without auth),
answered 429 RESOURCE_EXHAUSTED with Retry-After, checked before a route runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from service_samples import error_of, golden
from service_server import create_key
from typer.testing import CliRunner

from assay.cli import app as cli
from assay.service.app import create_app
from assay.service.ratelimit import RateLimiter
from assay.store import Store

URL = "/v1/apps/shop/evaluations"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_its_burst_then_refills_at_the_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(2.0, burst=3, clock=clock)
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("a") == pytest.approx(0.5)  # one token comes back in 1/rate s
    assert limiter.take("b") == 0.0  # clients do not share a bucket
    clock.now += 0.5
    assert limiter.take("a") == 0.0
    assert limiter.take("a") == pytest.approx(0.5)
    clock.now += 60  # refills up to the burst, not beyond
    assert [limiter.take("a") for _ in range(4)][-1] > 0
    with pytest.raises(ValueError, match="positive"):
        RateLimiter(0)


def test_a_key_over_its_rate_gets_429_and_other_keys_do_not(store: Store) -> None:
    first, second = create_key(store, "first"), create_key(store, "second")
    # One token back every 100 s: the test never sees a refill, however slow it runs.
    app = create_app(store, rate_limit=0.01, rate_burst=2)
    with TestClient(app) as http:
        one = {"Authorization": f"Bearer {first}"}
        assert http.post(URL, json=golden("a"), headers=one).status_code == 200
        assert http.get(URL, headers=one).status_code == 200
        refused = http.post(URL, json=golden("b"), headers=one)
        assert refused.status_code == 429
        error = error_of(refused)
        assert error["status"] == "RESOURCE_EXHAUSTED" and "rate limit" in error["message"]
        assert 1 <= int(refused.headers["retry-after"]) <= 100
        # Refused before the route: "b" was not created.
        other = {"Authorization": f"Bearer {second}"}
        names = [e["displayName"] for e in http.get(URL, headers=other).json()["evaluations"]]
        assert names == ["a"]
        # A request without a valid key is refused 401 first, and does not use a token.
        assert http.get(URL).status_code == 401
        assert http.get(URL, headers=other).status_code == 200  # its second token
        assert http.get(URL, headers=other).status_code == 429
    documented = create_app(store).openapi()["paths"]["/v1/apps/{app}/evaluations"]
    assert "429" in documented["get"]["responses"]


def test_without_auth_the_client_address_is_limited(store: Store) -> None:
    app = create_app(store, auth=False, rate_limit=0.01, rate_burst=1)
    with TestClient(app) as http:
        assert http.get(URL).status_code == 200
        assert http.get(URL).status_code == 429


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate-limit", "0"], "--rate-limit must be above 0"),
        (["--rate-limit", "-3"], "--rate-limit must be above 0"),
        (["--rate-burst", "5"], "--rate-burst needs --rate-limit"),
        (["--rate-limit", "5", "--rate-burst", "0"], "--rate-burst needs --rate-limit"),
        (["--files-root", "/no/such/folder"], "--files-root /no/such/folder: no such folder"),
    ],
)
def test_bad_rate_settings_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    store = ["--store", f"sqlite:///{tmp_path / 'a.db'}"]
    result = CliRunner().invoke(cli, ["serve", "--no-auth", *store, *args])
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " ")
