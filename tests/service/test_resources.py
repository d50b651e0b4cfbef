"""Evaluations, datasets and personas over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from service_samples import error_of, golden, persona, scenario

BASE = "/v1/apps/shop"


def _create(client: httpx.Client, kind: str, body: dict[str, Any], **params: str) -> dict[str, Any]:
    reply = client.post(f"{BASE}/{kind}", json=body, params=params)
    assert reply.status_code == 200, reply.text
    created: dict[str, Any] = reply.json()
    return created


def test_evaluation_lifecycle_and_output_only_fields(client: httpx.Client) -> None:
    sent = golden("Paris weather", tags=["smoke"])
    # Output-only fields a client sends are ignored, not stored.
    sent |= {
        "name": "apps/other/evaluations/forged",
        "createTime": "2001-01-01T00:00:00Z",
        "etag": "forged",
        "invalid": True,
        "evaluationRuns": ["apps/shop/evaluationRuns/x"],
        "lastTenResults": [{"name": "r"}],
        "evaluationDatasets": ["apps/shop/evaluationDatasets/x"],
    }
    created = _create(client, "evaluations", sent)
    rid = created["name"].removeprefix("apps/shop/evaluations/")
    assert str(uuid.UUID(rid)) == rid  # server-chosen id
    assert created["createTime"] == created["updateTime"] != "2001-01-01T00:00:00Z"
    assert created["createTime"].endswith("Z")
    assert created["etag"] != "forged"
    assert created["invalid"] is False
    assert created["evaluationDatasets"] == []
    assert "lastTenResults" not in created  # only with view=FULL
    assert created.get("evaluationRuns", []) == []  # the forged run is not kept
    assert created["golden"] == sent["golden"] and created["tags"] == ["smoke"]

    fetched = client.get(f"/v1/{created['name']}")
    assert fetched.status_code == 200 and fetched.json() == created

    listed = client.get(f"{BASE}/evaluations").json()
    assert listed == {"evaluations": [created]}

    assert client.delete(f"/v1/{created['name']}").json() == {}
    gone = client.get(f"/v1/{created['name']}")
    assert error_of(gone)["status"] == "NOT_FOUND" and gone.status_code == 404


def test_client_chosen_id_and_duplicates(client: httpx.Client) -> None:
    created = _create(client, "evaluations", scenario("Booking"), evaluationId="booking-1")
    assert created["name"] == "apps/shop/evaluations/booking-1"
    assert created["scenario"]["task"] == "Book a table for two tonight"
    again = client.post(
        f"{BASE}/evaluations", json=scenario("Other"), params={"evaluationId": "booking-1"}
    )
    assert again.status_code == 409 and error_of(again)["status"] == "ALREADY_EXISTS"
    bad = client.post(f"{BASE}/evaluations", json=scenario("X"), params={"evaluationId": "a/b"})
    assert bad.status_code == 400 and "evaluationId" in error_of(bad)["message"]


def test_display_names_are_unique_per_app_and_kind(client: httpx.Client) -> None:
    first = _create(client, "evaluations", golden("Same"))
    clash = client.post(f"{BASE}/evaluations", json=golden("Same"))
    error = error_of(clash)
    assert clash.status_code == 409 and error["status"] == "ALREADY_EXISTS"
    assert "display name 'Same'" in error["message"]
    # Another app, or another kind, may use the name.
    assert client.post("/v1/apps/other/evaluations", json=golden("Same")).status_code == 200
    assert client.post(f"{BASE}/personas", json=persona("Same")).status_code == 200
    # An update onto a taken name is refused too, and changes nothing.
    second = _create(client, "evaluations", golden("Second"))
    moved = client.patch(
        f"/v1/{second['name']}", params={"updateMask": "displayName"}, json={"displayName": "Same"}
    )
    assert moved.status_code == 409 and error_of(moved)["status"] == "ALREADY_EXISTS"
    assert client.get(f"/v1/{second['name']}").json()["displayName"] == "Second"
    assert client.get(f"/v1/{first['name']}").json()["etag"] == first["etag"]


def first_token(client: httpx.Client, size: int) -> str:
    token: str = client.get(f"{BASE}/evaluations", params={"pageSize": size}).json()[
        "nextPageToken"
    ]
    return token


def test_paging_visits_every_item_once(client: httpx.Client) -> None:
    names = [_create(client, "evaluations", golden(f"E{i}"))["name"] for i in range(7)]
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        params: dict[str, Any] = {"pageSize": 3}
        if token:
            params["pageToken"] = token
        page = client.get(f"{BASE}/evaluations", params=params).json()
        pages += 1
        seen += [e["name"] for e in page["evaluations"]]
        token = page.get("nextPageToken")
        if token is None:
            break
    assert seen == names and pages == 3  # oldest first, no repeats, no gaps
    # A last page that is exactly full has no token after it.
    second = client.get(
        f"{BASE}/evaluations", params={"pageSize": 3, "pageToken": first_token(client, 3)}
    ).json()
    assert len(second["evaluations"]) == 3 and "nextPageToken" in second
    six = client.get(f"{BASE}/evaluations", params={"pageSize": 7}).json()
    assert len(six["evaluations"]) == 7 and "nextPageToken" not in six
    first = client.get(f"{BASE}/evaluations", params={"pageSize": 3}).json()
    # A token is bound to its request: another filter, app or collection refuses it.
    for url, params in [
        (f"{BASE}/evaluations", {"filter": 'tags:"x"'}),
        ("/v1/apps/other/evaluations", {}),
        (f"{BASE}/personas", {}),
    ]:
        reused = client.get(url, params={**params, "pageToken": first["nextPageToken"]})
        assert reused.status_code == 400 and "pageToken" in error_of(reused)["message"]
    garbage = client.get(f"{BASE}/evaluations", params={"pageToken": "not-a-token!"})
    assert error_of(garbage)["status"] == "INVALID_ARGUMENT"
    big = client.get(f"{BASE}/evaluations", params={"pageSize": 5000}).json()
    assert len(big["evaluations"]) == 7 and "nextPageToken" not in big
    negative = client.get(f"{BASE}/evaluations", params={"pageSize": -1})
    assert negative.status_code == 400


def test_filters_by_tag_and_dataset(client: httpx.Client) -> None:
    a = _create(client, "evaluations", golden("A", tags=["smoke", "eu"]))
    b = _create(client, "evaluations", golden("B", tags=["eu"]))
    c = _create(client, "evaluations", scenario("C"))
    ds = _create(
        client,
        "evaluationDatasets",
        {"displayName": "Regression", "evaluations": [a["name"], c["name"]]},
        evaluationDatasetId="regression",
    )
    assert ds["name"] == "apps/shop/evaluationDatasets/regression"

    def names(flt: str) -> list[str]:
        reply = client.get(f"{BASE}/evaluations", params={"filter": flt})
        assert reply.status_code == 200, reply.text
        return [e["displayName"] for e in reply.json()["evaluations"]]

    assert names('tags:"eu"') == ["A", "B"]
    assert names('tags:"smoke"') == ["A"]
    assert names('dataset:"regression"') == ["A", "C"]
    assert names(f'dataset:"{ds["name"]}"') == ["A", "C"]
    assert names('tags:"eu" AND dataset:"regression"') == ["A"]
    assert names('displayName="B"') == ["B"]
    assert client.get(f"/v1/{a['name']}").json()["evaluationDatasets"] == [ds["name"]]
    assert client.get(f"/v1/{b['name']}").json()["evaluationDatasets"] == []
    bad = client.get(f"{BASE}/evaluations", params={"filter": 'owner:"me"'})
    assert bad.status_code == 400 and "tags, dataset, displayName" in error_of(bad)["message"]


def test_update_mask_changes_only_listed_fields(client: httpx.Client) -> None:
    created = _create(client, "evaluations", golden("Masked", tags=["a"]))
    name = created["name"]
    reply = client.patch(
        f"/v1/{name}",
        params={"updateMask": "tags,description"},
        # description is masked but absent: cleared. displayName is not masked: kept.
        json={"tags": ["b", "c"], "displayName": "Ignored", "etag": created["etag"]},
    )
    assert reply.status_code == 200, reply.text
    updated = reply.json()
    assert updated["tags"] == ["b", "c"]
    assert "description" not in updated
    assert updated["displayName"] == "Masked"
    assert updated["etag"] != created["etag"]
    assert updated["createTime"] == created["createTime"]
    assert updated["updateTime"] > created["updateTime"]
    assert updated["golden"] == created["golden"]

    # Output-only paths in a mask are ignored; the write still happens.
    ignored = client.patch(
        f"/v1/{name}", params={"updateMask": "createTime,tags"}, json={"tags": ["d"]}
    )
    assert ignored.status_code == 200 and ignored.json()["tags"] == ["d"]
    assert ignored.json()["createTime"] == created["createTime"]

    for mask, expected in [
        ("", "updateMask"),
        ("owner", "'owner' is not a field of an evaluation"),
        ("tags.x", "has no sub-fields"),
        ("tags,,", "not a field"),
    ]:
        bad = client.patch(f"/v1/{name}", params={"updateMask": mask}, json={"tags": []})
        assert bad.status_code == 400 and expected in error_of(bad)["message"], mask
    unknown_field = client.patch(f"/v1/{name}", params={"updateMask": "tags"}, json={"colour": 1})
    assert "unknown field 'colour'" in error_of(unknown_field)["message"]

    # Switching golden for a scenario: both named in the mask, golden absent.
    switched = client.patch(
        f"/v1/{name}", params={"updateMask": "golden,scenario"}, json=scenario("Masked")
    )
    assert switched.status_code == 200, switched.text
    assert "golden" not in switched.json() and switched.json()["scenario"]["maxTurns"] == 6
    both = client.patch(f"/v1/{name}", params={"updateMask": "golden"}, json=golden("Masked"))
    assert "exactly one of golden or scenario" in error_of(both)["message"]
    # A nested path replaces just that sub-field.
    nested = client.patch(
        f"/v1/{name}",
        params={"updateMask": "scenario.maxTurns"},
        json={"scenario": {"maxTurns": 2}},
    )
    assert nested.json()["scenario"] == {**switched.json()["scenario"], "maxTurns": 2}


def test_stale_etag_is_aborted(client: httpx.Client) -> None:
    created = _create(client, "personas", persona("Hurried"))
    name = created["name"]
    first = client.patch(
        f"/v1/{name}",
        params={"updateMask": "description"},
        json={"description": "one", "etag": created["etag"]},
    )
    assert first.status_code == 200
    stale = client.patch(
        f"/v1/{name}",
        params={"updateMask": "description"},
        json={"description": "two", "etag": created["etag"]},
    )
    error = error_of(stale)
    assert stale.status_code == 409 and error["status"] == "ABORTED"
    assert "etag" in error["message"]
    assert client.get(f"/v1/{name}").json()["description"] == "one"
    stale_delete = client.delete(f"/v1/{name}", params={"etag": created["etag"]})
    assert error_of(stale_delete)["status"] == "ABORTED"
    current = client.delete(f"/v1/{name}", params={"etag": first.json()["etag"]})
    assert current.status_code == 200


def test_delete_of_a_dataset_member_needs_force(client: httpx.Client) -> None:
    member = _create(client, "evaluations", golden("Member"))
    other = _create(client, "evaluations", golden("Other"))
    ds = _create(
        client,
        "evaluationDatasets",
        {"displayName": "Set", "evaluations": [member["name"], other["name"]]},
    )
    refused = client.delete(f"/v1/{member['name']}")
    error = error_of(refused)
    assert refused.status_code == 400 and error["status"] == "FAILED_PRECONDITION"
    assert ds["name"] in error["message"] and "force=true" in error["message"]
    assert error["details"][0]["violations"][0]["subject"] == ds["name"]
    assert client.get(f"/v1/{member['name']}").status_code == 200

    forced = client.delete(f"/v1/{member['name']}", params={"force": "true"})
    assert forced.status_code == 200
    assert client.get(f"/v1/{member['name']}").status_code == 404
    assert client.get(f"/v1/{ds['name']}").json()["evaluations"] == [other["name"]]
    # Not a member any more: a plain delete works.
    assert client.delete(f"/v1/{other['name']}", params={"force": "true"}).status_code == 200
    assert client.delete(f"/v1/{ds['name']}").status_code == 200


def test_datasets_must_name_existing_evaluations_of_the_app(client: httpx.Client) -> None:
    ev = _create(client, "evaluations", golden("Real"))
    cases = [
        (["apps/shop/evaluations/missing"], "evaluations[0]", "no evaluation"),
        (["apps/other/evaluations/x"], "evaluations[0]", "another app"),
        ([ev["name"], ev["name"]], "evaluations[1]", "listed twice"),
        (["apps/shop/personas/p"], "evaluations[0]", "not a name of the evaluations"),
        ("nope", "evaluations", "expected a list"),
    ]
    for members, field, text in cases:
        reply = client.post(
            f"{BASE}/evaluationDatasets", json={"displayName": "D", "evaluations": members}
        )
        error = error_of(reply)
        assert reply.status_code == 400 and error["status"] == "INVALID_ARGUMENT"
        violation = error["details"][0]["fieldViolations"][0]
        assert violation["field"] == field and text in violation["description"], error
    ds = _create(client, "evaluationDatasets", {"displayName": "D", "evaluations": []})
    added = client.patch(
        f"/v1/{ds['name']}",
        params={"updateMask": "evaluations"},
        json={"evaluations": ["apps/shop/evaluations/missing"]},
    )
    assert added.status_code == 400


def test_evaluation_bodies_are_validated_with_field_paths(client: httpx.Client) -> None:
    broken = golden("Broken")
    broken["golden"]["turns"][0]["steps"][1] = {"expectation": {"toolCall": {"args": {}}}}
    reply = client.post(f"{BASE}/evaluations", json=broken)
    error = error_of(reply)
    assert reply.status_code == 400 and error["status"] == "INVALID_ARGUMENT"
    violation = error["details"][0]["fieldViolations"][0]
    assert violation["field"] == "golden.turns[0].steps[1].expectation.toolCall"
    assert "Broken" in error["message"]  # the evaluation is named by its display name

    neither = client.post(f"{BASE}/evaluations", json={"displayName": "Empty"})
    assert "exactly one of golden or scenario" in error_of(neither)["message"]
    both = client.post(f"{BASE}/evaluations", json={**golden("Both"), **scenario("Both")})
    assert "(got golden and scenario)" in error_of(both)["message"]
    nameless = client.post(f"{BASE}/evaluations", json={"golden": golden("x")["golden"]})
    assert "displayName" in error_of(nameless)["message"]
    bad_tags = client.post(f"{BASE}/evaluations", json={**golden("T"), "tags": "smoke"})
    assert "tags" in error_of(bad_tags)["message"]
    bad_turns = client.post(
        f"{BASE}/evaluations", json={**scenario("S"), "scenario": {"task": "t", "maxTurns": "5"}}
    )
    assert error_of(bad_turns)["details"][0]["fieldViolations"][0]["field"] == "scenario.maxTurns"
    assert client.get(f"{BASE}/evaluations").json() == {"evaluations": []}


def test_personas(client: httpx.Client) -> None:
    created = _create(client, "personas", persona("Hurried"), personaId="hurried")
    assert created["name"] == "apps/shop/personas/hurried"
    assert created["personality"] == "Answers in three words or fewer."
    assert set(created) == {
        "name", "displayName", "description", "personality", "speechConfig",
        "createTime", "updateTime", "etag",
    }  # fmt: skip
    listed = client.get(f"{BASE}/personas").json()
    assert [p["name"] for p in listed["personas"]] == [created["name"]]
    missing = client.post(f"{BASE}/personas", json={"displayName": "No personality"})
    assert "personality" in error_of(missing)["message"]
    bad_rate = client.post(
        f"{BASE}/personas", json={**persona("P2"), "speechConfig": {"speakingRate": "fast"}}
    )
    assert error_of(bad_rate)["details"][0]["fieldViolations"][0]["field"] == (
        "speechConfig.speakingRate"
    )
    updated = client.patch(
        f"/v1/{created['name']}",
        params={"updateMask": "speechConfig.voiceId"},
        json={"speechConfig": {"voiceId": "en-GB-Standard-A"}},
    ).json()
    assert updated["speechConfig"] == {"speakingRate": 1.4, "voiceId": "en-GB-Standard-A"}
    assert client.delete(f"/v1/{created['name']}").status_code == 200


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/apps/shop/evaluations/..%2F..%2Fx", 400),
        ("/v1/apps/shop/widgets/x", 400),
        ("/v1/apps/sh op/evaluations/x", 400),
        ("/v1/apps/shop/evaluations", 200),
        ("/v1/apps/shop/evaluations/unknown-id", 404),
        ("/v1/apps/shop/evaluations/x/extra", 400),
        ("/v1/apps/-shop/evaluations/x", 400),
    ],
)
def test_names_are_validated(client: httpx.Client, path: str, status: int) -> None:
    reply = client.get(path)
    assert reply.status_code == status, reply.text
    if status == 400:
        assert "expected one of: apps/{app}/evaluations/{id}" in error_of(reply)["message"]
    bad_app = client.post("/v1/apps/bad app!/evaluations", json=golden("x"))
    assert bad_app.status_code == 400 and "not a valid app id" in error_of(bad_app)["message"]
