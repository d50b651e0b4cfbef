"""Page tokens are opaque, signed with the store's secret and bound to their query.

Before, a page token was unsigned base64 JSON (a client could forge one holding any
offset), runs were paged by a bare run id and results by a bare row number, so
`pageToken=%C2%B2` or a 30-digit token answered 500. Ids that overflow likewise.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from service_samples import error_of, golden

from assay.service.app import create_app
from assay.store import Store

BASE = "/v1/apps/shop"
LISTS = [
    f"{BASE}/evaluations",
    f"{BASE}/evaluationDatasets",
    f"{BASE}/personas",
    f"{BASE}/evaluationRuns",
    f"{BASE}/evaluations/e1/results",
]
BAD_TOKENS = ["\u00b2", "1" * 30, "not-a-token!", "a.b", "." * 2000, "eyJvIjozfQ", "x" * 5000]


@pytest.fixture
def http(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store, auth=False), raise_server_exceptions=False) as client:
        yield client


def _fill(http: TestClient, n: int) -> None:
    for i in range(n):
        reply = http.post(
            f"{BASE}/evaluations", params={"evaluationId": f"e{i}"}, json=golden(f"E{i}")
        )
        assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("url", LISTS)
@pytest.mark.parametrize("token", BAD_TOKENS)
def test_bad_tokens_are_400_naming_page_token(http: TestClient, url: str, token: str) -> None:
    reply = http.get(url, params={"pageToken": token})
    error = error_of(reply)
    assert reply.status_code == 400 and error["status"] == "INVALID_ARGUMENT", reply.text
    assert error["message"].startswith("pageToken:")


def test_a_forged_offset_is_refused(http: TestClient) -> None:
    _fill(http, 4)
    token = http.get(f"{BASE}/evaluations", params={"pageSize": 1}).json()["nextPageToken"]
    payload, _, signature = token.partition(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert data["o"] == 1
    # The same query hash, another offset, the old signature: refused.
    forged_payload = json.dumps({**data, "o": 3}, separators=(",", ":")).encode()
    forged = base64.urlsafe_b64encode(forged_payload).decode().rstrip("=") + "." + signature
    reply = http.get(f"{BASE}/evaluations", params={"pageSize": 1, "pageToken": forged})
    assert reply.status_code == 400 and "pageToken" in error_of(reply)["message"]
    # The genuine token pages on.
    page = http.get(f"{BASE}/evaluations", params={"pageSize": 1, "pageToken": token}).json()
    assert [e["name"] for e in page["evaluations"]] == ["apps/shop/evaluations/e1"]


def test_a_token_is_bound_to_its_query_and_store(
    http: TestClient, store: Store, tmp_path: Path
) -> None:
    _fill(http, 3)
    token = http.get(f"{BASE}/evaluations", params={"pageSize": 1}).json()["nextPageToken"]
    for url, params in [
        (f"{BASE}/personas", {}),
        ("/v1/apps/other/evaluations", {}),
        (f"{BASE}/evaluations", {"filter": 'displayName:"E1"'}),
        (f"{BASE}/evaluationRuns", {}),
    ]:
        reply = http.get(url, params={**params, "pageToken": token})
        assert reply.status_code == 400, (url, reply.text)
        assert "different list request" in error_of(reply)["message"]
    # Another store has another key: the token means nothing there.
    with (
        Store.open(f"sqlite:///{tmp_path / 'other.db'}") as other,
        TestClient(create_app(other, auth=False)) as elsewhere,
    ):
        reply = elsewhere.get(f"{BASE}/evaluations", params={"pageToken": token})
        assert reply.status_code == 400 and "not a page token" in error_of(reply)["message"]
    # A second server over the same store (another worker, a restart) accepts it.
    with TestClient(create_app(store, auth=False)) as again:
        page = again.get(f"{BASE}/evaluations", params={"pageSize": 1, "pageToken": token})
        assert page.status_code == 200
        assert [e["name"] for e in page.json()["evaluations"]] == ["apps/shop/evaluations/e1"]


def test_ids_that_overflow_are_404_not_500(http: TestClient) -> None:
    _fill(http, 1)
    for url in [
        f"{BASE}/evaluations/e0/results/run1-{'9' * 30}",
        f"{BASE}/evaluations/e0/results/run1-2147483648",
        f"{BASE}/evaluationRuns/{'9' * 30}",
        f"{BASE}/evaluations/{'9' * 200}",
    ]:
        reply = http.get(url)
        assert reply.status_code == 404 and error_of(reply)["status"] == "NOT_FOUND", url
    reply = http.get(f"{BASE}/evaluations/e0/results/run1-\u00b2")
    assert reply.status_code == 400 and error_of(reply)["status"] == "INVALID_ARGUMENT"
