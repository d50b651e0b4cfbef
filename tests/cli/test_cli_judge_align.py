"""`assay judge align` / `list` / `show` and `--judge aligned:NAME` end to end (issue #35).

Every judge call goes through the real openai SDK to a `FollowingJudge` stand-in on
127.0.0.1: a judge that calls every response containing "definitely" valid unless its
prompt's guidelines or examples correct it (a systematic error alignment can fix), or
one that flips verdicts by coin (random errors it cannot). The store is a SQLite file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from typer.testing import CliRunner

from align_helpers import BIAS_WORD, labelled_rows, truth_of, write_labels
from assay.cli import app
from assay.errors import ConfigError
from assay.testing import JudgeServer, StandinRequest
from assay.testing.standin_aligning import FollowingJudge

runner = CliRunner()
METRIC = "final_response_match_v2"
#: `assay judge align` of a labels file ({labels}: filled in by the test) by a base judge
ALIGNING = ["judge", "align", "{labels}", "--metric", METRIC, "--judge", "openai:x"]
_EXAMPLE_RESPONSE = re.compile(r"<response>\s*(.*?)\s*</response>", re.S)
_AGENT_RESPONSE = re.compile(r"<agent_response>\s*(.*?)\s*</agent_response>", re.S)


class Labelled(NamedTuple):
    rows: list[dict[str, Any]]
    labels: Path
    store: str


@pytest.fixture
def labelled(tmp_path: Path) -> Labelled:
    """The 60 labelled items, written as a labels file, and a SQLite store beside them."""
    rows = labelled_rows()
    return Labelled(
        rows, write_labels(tmp_path / "labels.jsonl", rows), f"sqlite:///{tmp_path / 'assay.db'}"
    )


@pytest.fixture(autouse=True)
def _openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _align(server: JudgeServer, labels: Path, store: str, *extra: str) -> Any:
    return runner.invoke(
        app,
        [
            "judge",
            "align",
            str(labels),
            "--metric",
            METRIC,
            "--judge",
            "openai:stand-in",
            "--base-url",
            server.openai_base_url,
            "--store",
            store,
            "--judge-concurrency",
            "16",
            *extra,
        ],
        env={"COLUMNS": "200"},
    )


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _aligned_requests(server: JudgeServer, since: int = 0) -> list[StandinRequest]:
    return [
        r
        for r in server.requests[since:]
        if "<agent_response>" in r.user and "Guidelines from human reviewers" in r.system
    ]


def test_align_fixes_a_systematic_error_on_held_out_labels_and_stores_the_judge(
    tmp_path: Path,
    labelled: Labelled,
) -> None:
    rows, labels, store = labelled
    with JudgeServer(FollowingJudge(truth_of(rows), bias_word=BIAS_WORD)) as server:
        report = _json(_align(server, labels, store, "--name", "frm", "--json"))
        assert not server.errors
        # Each fold: built from 48 items, scored on the 12 others.
        assert [(f["train"], f["test"]) for f in report["folds"]] == [(48, 12)] * 5
        # The base judge calls the 15 invalid responses with the word valid: kappa 0.5;
        # aligned on the other folds, it judges every held-out item right.
        assert report["kappa_before"] == pytest.approx(0.5)
        assert report["kappa_after"] == pytest.approx(1.0)
        assert report["verdict"] == "gain"
        low, high = report["gain_interval"]
        assert 0 < low <= report["gain"] <= high
        low, high = report["kappa_before_interval"]
        assert low < 0.5 < high
        assert report["kappa_after_interval"] == [1.0, 1.0]
        judge = report["aligned_judge"]
        assert (report["stored"], judge["version"]) == ("frm@1", 1)
        assert any(BIAS_WORD in g for g in judge["guidelines"])
        assert 0 < len(judge["examples"]) <= 6
        assert judge["kappa_before"] == pytest.approx(0.5)
        assert judge["report"]["verdict"] == "gain"

        # Never scored on what it was built from: no held-out item is among the
        # examples its fold's prompt shows.
        held_out = _aligned_requests(server)
        assert len(held_out) == 60 * 5  # 60 items, 5 samples each
        for request in held_out:
            shown = set(_EXAMPLE_RESPONSE.findall(request.system))
            (judged,) = _AGENT_RESPONSE.findall(request.user)
            assert judged not in shown

    listed = _json(runner.invoke(app, ["judge", "list", "--store", store, "--json"]))
    assert [(j["name"], j["version"], j["metric"]) for j in listed] == [("frm", 1, METRIC)]
    shown = _json(runner.invoke(app, ["judge", "show", "frm@1", "--store", store, "--json"]))
    assert shown["guidelines"] == judge["guidelines"]
    table = runner.invoke(app, ["judge", "show", "frm", "--store", store])
    assert table.exit_code == 0 and "aligned:frm@1" in table.stdout


def test_align_claims_no_gain_where_the_errors_are_random(
    tmp_path: Path, labelled: Labelled
) -> None:
    rows, labels, store = labelled
    stand_in = FollowingJudge(truth_of(rows), flip_rate=0.3, seed=1)
    with JudgeServer(stand_in) as server:
        result = _align(server, labels, store, "--name", "coin", "--out", str(tmp_path / "r.json"))
        assert result.exit_code == 0, result.output
        assert "no reliable gain" in result.stdout
        report = json.loads((tmp_path / "r.json").read_text())
        low, high = report["gain_interval"]
        assert low <= 0 <= high
        assert report["verdict"] == "no reliable gain"
        # Its guidelines name no pattern that is not there: only the generic one.
        assert stand_in.corrected == 0


def _eval(rows_file: Path, store: str, judge: str, out: Path, base_url: str) -> Any:
    result = runner.invoke(
        app,
        [
            "eval",
            str(rows_file),
            "-m",
            METRIC,
            "--judge",
            judge,
            "--store",
            store,
            "--out",
            str(out),
        ],
        env={"OPENAI_BASE_URL": base_url, "COLUMNS": "200"},
    )
    assert result.exit_code in (0, 1), result.output
    return json.loads(out.read_text())


def test_eval_uses_an_aligned_judge_and_its_version_keys_the_cache(
    tmp_path: Path, labelled: Labelled
) -> None:
    rows, labels, store = labelled
    with JudgeServer(FollowingJudge(truth_of(rows), bias_word=BIAS_WORD)) as server:
        _json(_align(server, labels, store, "--name", "frm", "--json", "--folds", "3"))

        plain = _eval(labels, store, "openai:stand-in", tmp_path / "plain.json", server.base_url)
        before = len(server.requests)
        aligned = _eval(labels, store, "aligned:frm", tmp_path / "a.json", server.base_url)
        calls = server.requests[before:]
        assert len(calls) == 60 * 5
        # The metric's prompt gained the guidelines and the examples.
        assert all(r.model == "stand-in" for r in calls)
        assert all("Guidelines from human reviewers" in r.system for r in calls)
        assert all(BIAS_WORD in r.system for r in calls)

        def verdicts(doc: dict[str, Any]) -> dict[str, str]:
            return {c["eval_id"]: c["status"] for c in doc["cases"]}

        right = {r["id"]: "PASSED" if r["label"] == "valid" else "FAILED" for r in rows}
        assert verdicts(aligned) == right
        assert sum(verdicts(plain)[k] != v for k, v in right.items()) == 15

        # The same version again: every reply from the cache.
        before = len(server.requests)
        _eval(labels, store, "aligned:frm@1", tmp_path / "again.json", server.base_url)
        assert len(server.requests) == before

        # A new version of the same judge (the same prompt, as nothing changed) is a
        # new judge: its replies are asked, not read from version 1's.
        _json(_align(server, labels, store, "--name", "frm", "--json", "--folds", "3"))
        before = len(server.requests)
        _eval(labels, store, "aligned:frm", tmp_path / "v2.json", server.base_url)
        new_calls = server.requests[before:]
        assert len(new_calls) == 60 * 5
        assert {r.system for r in new_calls} <= {r.system for r in calls}


def test_a_criterion_names_an_aligned_judge(tmp_path: Path, labelled: Labelled) -> None:
    rows, labels, store = labelled
    config = tmp_path / "test_config.json"
    config.write_text(
        json.dumps(
            {
                "criteria": {
                    METRIC: {
                        "threshold": 0.5,
                        "judge_model_options": {"judge_model": "aligned:frm"},
                    }
                }
            }
        )
    )
    with JudgeServer(FollowingJudge(truth_of(rows), bias_word=BIAS_WORD)) as server:
        _json(_align(server, labels, store, "--name", "frm", "--json", "--folds", "3"))
        before = len(server.requests)
        result = runner.invoke(
            app,
            [
                "eval",
                str(labels),
                "--config",
                str(config),
                "--store",
                store,
                "--out",
                str(tmp_path / "o.json"),
            ],
            env={"OPENAI_BASE_URL": server.base_url, "COLUMNS": "200"},
        )
        assert result.exit_code in (0, 1), result.output
        calls = server.requests[before:]
        assert calls and all("Guidelines from human reviewers" in r.system for r in calls)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["eval", "{labels}", "-m", METRIC, "--judge", "aligned:nope"],
            "no aligned judge named 'nope'",
        ),
        (["eval", "{labels}", "-m", METRIC, "--judge", "aligned:frm@x"], "version after '@'"),
        (["eval", "{labels}", "-m", METRIC, "--judge", "aligned:"], "aligned judge name ''"),
        (["judge", "show", "nope"], "no aligned judge named 'nope'"),
        (["judge", "show", "bad name"], "aligned judge name 'bad name'"),
        (
            ["judge", "align", "--metric", METRIC, "--judge", "openai:x"],
            "a labels file or --from-store",
        ),
        ([*ALIGNING, "--from-store"], "a labels file or --from-store"),
        ([*ALIGNING, "--run", "r1"], "--run"),
        (
            ["judge", "align", "{labels}", "--metric", METRIC, "--judge", "aligned:frm"],
            "base judge",
        ),
        ([*ALIGNING, "--folds", "1"], "--folds"),
        (
            ["judge", "align", "{labels}", "--metric", "rouge_1", "--judge", "openai:x"],
            "not judged",
        ),
        ([*ALIGNING, "--name", "a/b"], "'a/b'"),
        (["judge", "align", "{few}", "--metric", METRIC, "--judge", "openai:x"], "too few"),
    ],
)
def test_usage_errors_exit_2_naming_the_field(
    tmp_path: Path, args: list[str], message: str
) -> None:
    labels = write_labels(tmp_path / "labels.jsonl", labelled_rows())
    few = write_labels(tmp_path / "few.jsonl", labelled_rows()[:6])
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    filled = [a.format(labels=labels, few=few) for a in args]
    result = runner.invoke(app, [*filled, "--store", store], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_the_python_api_runs_with_an_aligned_judge(
    tmp_path: Path, labelled: Labelled, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assay

    rows, labels, store = labelled
    with JudgeServer(FollowingJudge(truth_of(rows), bias_word=BIAS_WORD)) as server:
        _json(_align(server, labels, store, "--name", "frm", "--json", "--folds", "3"))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        before = len(server.requests)
        result = assay.evaluate(str(labels), metrics=[METRIC], judge="aligned:frm@1", store=store)
        calls = server.requests[before:]
    assert len(calls) == 60 * 5
    assert all("Guidelines from human reviewers" in r.system for r in calls)
    right = {r["id"]: r["label"] == "valid" for r in rows}
    assert {c.case_id: c.status.value == "PASSED" for c in result.cases} == right
    with pytest.raises(ConfigError, match="no aligned judge named 'other'"):
        assay.evaluate(str(labels), metrics=[METRIC], judge="aligned:other", store=store)


def test_serve_refuses_a_mistyped_aligned_judge(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["serve", "--judge-model", "aligned:a b", "--store", f"sqlite:///{tmp_path}/s.db"]
    )
    assert result.exit_code == 2
    assert "aligned judge name 'a b'" in " ".join(result.output.split())


def test_a_judge_that_never_answers_usably_exits_1_saying_why(tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "labels.jsonl", labelled_rows())
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    with JudgeServer("I would rather not say.") as server:
        result = _align(server, labels, store, "--samples", "1")
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "the judge scored 0 of 60 labelled items" in said
    assert "I would rather not say" in said
    listed = _json(runner.invoke(app, ["judge", "list", "--store", store, "--json"]))
    assert listed == []


def test_from_store_aligns_on_the_labels_people_gave(tmp_path: Path, labelled: Labelled) -> None:
    """`--from-store` on labels people stored (`assay.store.labels`): a real judged run
    of the 60 items in a SQLite store, two people labelling each item as the truth
    has it and a third disagreeing once (the majority wins)."""
    from assay.store import Store

    rows, labels, store = labelled
    with JudgeServer(FollowingJudge(truth_of(rows), bias_word=BIAS_WORD)) as server:
        ran = runner.invoke(
            app,
            ["eval", str(labels), "-m", METRIC, "--judge", "openai:stand-in", "--store", store],
            env={"COLUMNS": "200", "OPENAI_BASE_URL": server.openai_base_url},
        )  # fmt: skip
        assert ran.exit_code in (0, 1), ran.output
        with Store.open(store) as db:
            run_id = db.find_run("latest").id
            for i, row in enumerate(rows):
                verdict = "pass" if row["label"] == "valid" else "fail"
                for author in ("ann", "bob"):
                    db.labels.set_label(run_id, row["id"], metric=METRIC, label=verdict,
                                        author=author)  # fmt: skip
                if i == 0:
                    other = "fail" if verdict == "pass" else "pass"
                    db.labels.set_label(run_id, row["id"], metric=METRIC, label=other,
                                        author="cy")  # fmt: skip
        result = runner.invoke(
            app,
            [
                "judge", "align", "--from-store", "--run", run_id[:8], "--metric", METRIC,
                "--judge", "openai:stand-in", "--base-url", server.openai_base_url,
                "--store", store, "--json",
            ],
        )  # fmt: skip
    report = _json(result)
    assert report["items"] == 60 and report["left_out"] == []
    assert report["verdict"] == "gain" and report["stored"] == f"{METRIC}@1"
    missing = runner.invoke(
        app,
        ["judge", "align", "--from-store", "--run", "nope", "--metric", METRIC,
         "--judge", "openai:x", "--store", store],
    )  # fmt: skip
    assert missing.exit_code == 2 and "nope" in missing.output


def test_an_aligned_judge_needs_a_store_and_a_labels_file_is_checked(tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "labels.jsonl", labelled_rows())
    result = runner.invoke(
        app,
        ["eval", str(labels), "-m", METRIC, "--judge", "aligned:frm", "--no-store"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 2, result.output
    assert "needs a store" in " ".join(result.output.split())
    broken = tmp_path / "broken.jsonl"
    broken.write_text(labels.read_text().replace('"label": "valid"', '"label": "maybe"', 1))
    for bad, where in ((broken, "line 1"), (tmp_path / "missing.jsonl", "missing.jsonl")):
        result = runner.invoke(
            app,
            ["judge", "align", str(bad), "--metric", METRIC, "--judge", "openai:x",
             "--store", f"sqlite:///{tmp_path / 'assay.db'}"],
            env={"COLUMNS": "200"},
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        assert where in " ".join(result.output.split())
