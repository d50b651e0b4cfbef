"""50 clients creating the same evaluation id at once: one is created, 49 are told so.

Before creates were insert-only, a create checked for the id and then wrote, so
several racing creates all answered "created" and later writes overwrote earlier
ones (acknowledged creates were lost). Runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import threading

import httpx
from service_samples import error_of, golden

CLIENTS = 50
ROUNDS = 3


def _race_creates(
    base_url: str, headers: dict[str, str], evaluation_id: str
) -> list[httpx.Response]:
    barrier = threading.Barrier(CLIENTS)
    replies: list[httpx.Response | None] = [None] * CLIENTS

    def create(i: int) -> None:
        with httpx.Client(base_url=base_url, headers=headers, timeout=60.0) as http:
            barrier.wait()
            replies[i] = http.post(
                "/v1/apps/shop/evaluations",
                params={"evaluationId": evaluation_id},
                json=golden(f"{evaluation_id} by client {i}"),
            )

    threads = [threading.Thread(target=create, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r is not None for r in replies)
    return [r for r in replies if r is not None]


def test_parallel_creates_of_one_id_have_one_winner(client: httpx.Client) -> None:
    headers = dict(client.headers)
    for round_ in range(ROUNDS):
        evaluation_id = f"race-{round_}"
        replies = _race_creates(str(client.base_url), headers, evaluation_id)
        created = [r for r in replies if r.status_code == 200]
        refused = [r for r in replies if r.status_code != 200]
        assert len(created) == 1, [r.status_code for r in replies]
        for reply in refused:
            assert reply.status_code == 409, reply.text
            assert error_of(reply)["status"] == "ALREADY_EXISTS"
            assert evaluation_id in error_of(reply)["message"]
        # The one acknowledged create is what is stored, unchanged by the losers.
        stored = client.get(f"/v1/apps/shop/evaluations/{evaluation_id}").json()
        assert stored["displayName"] == created[0].json()["displayName"]
        assert stored["etag"] == created[0].json()["etag"]
    listed = client.get("/v1/apps/shop/evaluations").json()["evaluations"]
    assert sorted(e["name"].rsplit("/", 1)[-1] for e in listed) == [
        f"race-{i}" for i in range(ROUNDS)
    ]
