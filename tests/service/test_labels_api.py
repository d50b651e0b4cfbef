"""People's labels through the service (issue #35): the REST routes under
/v1/runs/{run}/cases/{case}/labels and the MCP tools, each caller labelling as its API
key's name, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import mcp_types as types
from label_samples import METRIC, case_id, judged_run
from service_server import RunningServer, create_key
from test_mcp import call, error, mcp_session

from assay.store import Store


def _client(server: RunningServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {key}"},
                        timeout=30.0)  # fmt: skip


def _path(run: str, case: str) -> str:
    return f"/v1/runs/{run}/cases/{case.replace('#', '%23')}/labels"


def test_two_people_label_through_rest(store: Store, server: RunningServer) -> None:
    run = judged_run(store, items=60)
    ann, bob = create_key(store, "ann"), create_key(store, "bob")
    with _client(server, ann) as a, _client(server, bob) as b:
        for k in range(60):
            body = {"metric": METRIC, "label": "pass" if k % 3 else "fail", "note": f"k={k}"}
            got = a.post(_path(run, case_id(k)), json=body)
            assert got.status_code == 200, got.text
            assert got.json()["author"] == "ann" and got.json()["case"] == f"sums/{case_id(k)}"
        # bob labels with a score and by SET/ID; ann's label stays.
        got = b.post(_path(run[:8], f"sums/{case_id(4)}"), json={"metric": METRIC, "label": 0.2})
        assert got.status_code == 200, got.text
        assert (got.json()["author"], got.json()["verdict"]) == ("bob", "fail")
        listed = a.get(_path(run, case_id(4))).json()["labels"]
        assert [(x["author"], x["verdict"]) for x in listed] == [("ann", "pass"), ("bob", "fail")]
        # ann relabels: only her own label changes.
        a.post(_path(run, case_id(4)), json={"metric": METRIC, "label": "fail"})
        listed = b.get(_path(run, case_id(4)), params={"metric": METRIC}).json()["labels"]
        assert [(x["author"], x["label"]) for x in listed] == [("ann", "fail"), ("bob", "0.2")]
        assert len(a.get(f"/v1/runs/{run}/labels").json()["labels"]) == 61
        # bob deletes his own label; deleting it again is a 404.
        gone = b.delete(_path(run, case_id(4)), params={"metric": METRIC})
        assert gone.status_code == 200, gone.text
        again = b.delete(_path(run, case_id(4)), params={"metric": METRIC})
        assert again.status_code == 404 and "bob has no label" in again.json()["error"]["message"]
    assert [x.author for x in store.labels.list_labels([run]) if x.case_id == case_id(4)] == ["ann"]


def test_unknown_targets_are_404_and_bad_values_400(store: Store, server: RunningServer) -> None:
    run = judged_run(store, items=3)
    with _client(server, create_key(store, "ann")) as http:

        def post(path: str, body: Any) -> httpx.Response:
            return http.post(path, content=json.dumps(body),
                             headers={"Content-Type": "application/json"})  # fmt: skip

        missing = [
            (_path("nosuchrun", case_id(1)), {"metric": METRIC, "label": "pass"}, "nosuchrun"),
            (_path(run, "sum-77"), {"metric": METRIC, "label": "pass"}, "sum-77"),
            (_path(run, case_id(1)), {"metric": "coherence", "label": "pass"}, "coherence"),
        ]
        for path, body, named in missing:
            got = post(path, body)
            assert got.status_code == 404, got.text
            assert named in got.json()["error"]["message"]
        bad = [
            ({"metric": METRIC, "label": "perhaps"}, "label"),
            ({"metric": METRIC, "label": 1e309}, "label"),
            ({"metric": METRIC, "label": [1]}, "label"),
            ({"metric": METRIC}, "label"),
            ({"label": "pass"}, "metric"),
            ({"metric": METRIC, "label": "pass", "note": 3}, "note"),
            ({"metric": METRIC, "label": "pass", "note": "x" * 10_001}, "note"),
            ({"metric": METRIC, "label": "pass", "author": "mallory"}, "author"),
            ([1, 2], None),
        ]
        for body, field in bad:
            got = post(_path(run, case_id(1)), body)
            assert got.status_code == 400, (body, got.text)
            if field is not None:
                violations = got.json()["error"]["details"][0]["fieldViolations"]
                assert violations[0]["field"] == field, got.text
        assert http.delete(_path(run, case_id(1))).status_code == 400  # no metric
        assert http.get(_path(run, case_id(1)), params={"metric": "nope"}).status_code == 404
    assert store.labels.list_labels([run]) == []
    # Without a key nothing is read or written.
    assert httpx.get(f"{server.base_url}/v1/runs/{run}/labels").status_code == 401


def test_labels_through_mcp_tools(store: Store, server: RunningServer) -> None:
    run = judged_run(store, items=5)
    ann, bob = create_key(store, "ann"), create_key(store, "bob")

    async def scenario() -> None:
        async with mcp_session(server, ann) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            hints = tools["delete_label"].annotations
            assert isinstance(hints, types.ToolAnnotations) and hints.destructive_hint
            target = {"run": run, "case": case_id(2), "metric": METRIC}
            stored = await call(session, "set_label", {**target, "label": "fail"})
            assert stored["author"] == "ann" and stored["verdict"] == "fail"
            text = await error(session, "set_label", {**target, "case": "sum-404", "label": 1})
            assert text.startswith("NOT_FOUND") and "sum-404" in text
            text = await error(session, "set_label", {**target, "label": "soon"})
            assert text.startswith("INVALID_ARGUMENT") and "label" in text
        async with mcp_session(server, bob) as session:
            await call(session, "set_label", {"run": run, "case": case_id(2), "metric": METRIC,
                                              "label": 0.95, "note": "looks right"})  # fmt: skip
            listed = await call(session, "list_labels", {"run": run, "case": case_id(2)})
            assert [(x["author"], x["verdict"]) for x in listed["labels"]] == [
                ("ann", "fail"), ("bob", "pass"),
            ]  # fmt: skip
            await call(session, "delete_label", {"run": run, "case": case_id(2), "metric": METRIC})
        async with mcp_session(server, ann) as session:
            listed = await call(session, "list_labels", {"run": run})
            assert [x["author"] for x in listed["labels"]] == ["ann"]

    asyncio.run(scenario())


def test_labels_survive_a_server_restart(store: Store, start_server: Any) -> None:
    run = judged_run(store, items=2)
    key = create_key(store, "ann")
    first = start_server(store)
    with _client(first, key) as http:
        assert http.post(
            _path(run, case_id(1)), json={"metric": METRIC, "label": "pass"}
        ).is_success
    first.stop()
    second = start_server(store)
    with _client(second, key) as http:
        labels = http.get(f"/v1/runs/{run}/labels").json()["labels"]
    assert [(x["author"], x["case"], x["label"]) for x in labels] == [
        ("ann", f"sums/{case_id(1)}", "pass")
    ]


def test_hostile_label_bodies_are_refused_by_field(store: Store) -> None:
    from fastapi.testclient import TestClient
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from assay.service.app import create_app

    run = judged_run(store, items=2)
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
        st.text(max_size=40), st.sampled_from(["pass", "FAIL", "0.5", "nan", "-0", "1e999"]),
    )  # fmt: skip
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                          max_leaves=6)  # fmt: skip
    bodies = st.one_of(
        values,
        st.fixed_dictionaries({"metric": st.sampled_from([METRIC, "x"]), "label": values},
                              optional={"note": values, "extra": values}),
    )  # fmt: skip

    with TestClient(create_app(store, auth=False), raise_server_exceptions=False) as http:

        @settings(max_examples=150, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
        @given(body=bodies, case=st.sampled_from([case_id(1), "nope", "sums/sum-00#0", "%23"]))
        def check(body: Any, case: str) -> None:
            got = http.post(_path(run, case), content=json.dumps(body),
                            headers={"Content-Type": "application/json"})  # fmt: skip
            assert got.status_code in (200, 400, 404), (body, got.text)
            if got.status_code == 200:
                stored = got.json()
                assert stored["verdict"] in ("pass", "fail")
                score = stored["score"]
                assert score is None or 0 <= score <= 1
            else:
                assert got.json()["error"]["message"]

        check()
