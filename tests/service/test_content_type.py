"""A body sent without `Content-Type: application/json` (curl's `-d` sends a form) is
refused with a 400 that says so, on a real server over HTTP; nothing is created."""

from __future__ import annotations

import json

import httpx
import pytest
from service_samples import error_of, golden

URL = "/v1/apps/shop/evaluations"
SAYS = "the request body must be JSON sent with 'Content-Type: application/json'"


@pytest.mark.parametrize(
    ("headers", "got"),
    [
        ({"Content-Type": "application/x-www-form-urlencoded"}, "Content-Type "
         "'application/x-www-form-urlencoded'"),
        ({"Content-Type": "text/plain; charset=utf-8"}, "Content-Type 'text/plain'"),
        ({}, "no Content-Type"),
    ],
)  # fmt: skip
def test_a_json_body_without_its_content_type_is_told_so(
    client: httpx.Client, headers: dict[str, str], got: str
) -> None:
    body = json.dumps(golden("Paris")).encode()
    reply = client.post(URL, content=body, headers=headers, params={"evaluationId": "paris"})
    error = error_of(reply)
    assert reply.status_code == 400 and error["status"] == "INVALID_ARGUMENT"
    assert error["message"] == (
        f"{SAYS}; this request has {got} (with curl, add -H 'Content-Type: application/json')"
    )
    assert error["details"][0]["fieldViolations"][0]["field"] == "body"
    assert client.get(URL).json() == {"evaluations": []}
    # The same body as JSON is taken; a JSON type with a suffix counts as JSON.
    for media in ("application/json", "application/merge-patch+json"):
        taken = client.post(
            URL, content=body, headers={"Content-Type": media}, params={"evaluationId": "paris"}
        )
        assert taken.status_code in (200, 409), taken.text
    assert len(client.get(URL).json()["evaluations"]) == 1


def test_a_json_body_that_is_not_an_object_still_names_the_field(client: httpx.Client) -> None:
    not_object = client.post(URL, json=["a", "list"])
    assert not_object.status_code == 400
    assert error_of(not_object)["message"] == "body: Input should be a valid dictionary"
