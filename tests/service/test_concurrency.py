"""20 clients updating one evaluation at once: one winner per etag, no lost write."""

from __future__ import annotations

import threading
from typing import Any

import httpx
from service_samples import error_of, golden

CLIENTS = 20
ROUNDS = 4


def _race(
    base_url: str, headers: dict[str, str], calls: list[dict[str, Any]]
) -> list[httpx.Response]:
    """Send one PATCH per entry of `calls`, all released at the same moment."""
    barrier = threading.Barrier(len(calls))
    replies: list[httpx.Response | None] = [None] * len(calls)

    def patch(i: int) -> None:
        with httpx.Client(base_url=base_url, headers=headers, timeout=60.0) as http:
            barrier.wait()
            call = calls[i]
            replies[i] = http.patch(call["url"], params=call["params"], json=call["json"])

    threads = [threading.Thread(target=patch, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r is not None for r in replies)
    return [r for r in replies if r is not None]


def test_one_winner_per_etag_and_nothing_lost(client: httpx.Client) -> None:
    created = client.post("/v1/apps/shop/evaluations", json=golden("Contended")).json()
    url = f"/v1/{created['name']}"
    headers = dict(client.headers)
    winners: list[str] = []
    current = created
    for round_ in range(ROUNDS):
        # Every client appends its own tag to what it read, under the same etag.
        calls = [
            {
                "url": url,
                "params": {"updateMask": "tags"},
                "json": {"tags": [*current["tags"], f"r{round_}-c{i}"], "etag": current["etag"]},
            }
            for i in range(CLIENTS)
        ]
        replies = _race(str(client.base_url), headers, calls)
        won = [r for r in replies if r.status_code == 200]
        lost = [r for r in replies if r.status_code != 200]
        assert len(won) == 1, [r.text for r in replies]
        assert len(lost) == CLIENTS - 1
        for reply in lost:
            assert reply.status_code == 409 and error_of(reply)["status"] == "ABORTED"
        current = won[0].json()
        winners.append(current["tags"][-1])
        assert current["etag"] != calls[0]["json"]["etag"]
    final = client.get(url).json()
    # Each round's winning write is there, in order, on top of the previous ones.
    assert final["tags"] == winners
    assert [w.split("-")[0] for w in winners] == [f"r{i}" for i in range(ROUNDS)]
    assert final["golden"] == created["golden"] and final["etag"] == current["etag"]


def test_updates_without_etag_all_apply(client: httpx.Client) -> None:
    # Without an etag each update re-reads and retries, so none fails and every masked
    # field written by a distinct client survives.
    created = client.post(
        "/v1/apps/shop/personas",
        json={"displayName": "Busy", "personality": "calm", "speechConfig": {}},
    ).json()
    url = f"/v1/{created['name']}"
    calls = [
        {"url": url, "params": {"updateMask": "description"}, "json": {"description": f"d{i}"}}
        for i in range(CLIENTS - 2)
    ]
    calls.append(
        {"url": url, "params": {"updateMask": "speechConfig.voiceId"},
         "json": {"speechConfig": {"voiceId": "v"}}}
    )  # fmt: skip
    calls.append(
        {"url": url, "params": {"updateMask": "speechConfig.speakingRate"},
         "json": {"speechConfig": {"speakingRate": 0.8}}}
    )  # fmt: skip
    replies = _race(str(client.base_url), dict(client.headers), calls)
    assert [r.status_code for r in replies] == [200] * CLIENTS, [r.text for r in replies]
    final = client.get(url).json()
    assert final["speechConfig"] == {"voiceId": "v", "speakingRate": 0.8}
    assert final["description"] in {f"d{i}" for i in range(CLIENTS - 2)}
    assert len({r.json()["etag"] for r in replies}) == CLIENTS  # every write was its own
