"""`assay labels` and `assay judge calibrate --from-store` end to end (issue #35).

A real `assay eval` judges 60 items through the openai SDK against the stand-in judge
server; two people label them with `assay labels set`; `calibrate --from-store` judges
them again and reports the kappa scikit-learn computes on the same (person, judge)
pairs, and the same numbers as `assay judge calibrate` on the exported labels file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from assay.cli import app
from assay.testing import JudgeServer, StandinReply, StandinRequest

runner = CliRunner()
METRIC = "final_response_match_v2"
ITEMS = 60


def correct(k: int) -> bool:
    return k % 3 != 0


def judge_says(k: int) -> str:
    """The stand-in's verdict: right, except on every fifth item (a systematic error)."""
    return "pass" if correct(k) != (k % 5 == 0) else "fail"


def bob_says(k: int) -> str | None:
    """A second person labels every third item, disagreeing with ann on every ninth."""
    if k % 3:
        return None
    truth = "pass" if correct(k) else "fail"
    return truth if k % 9 else {"pass": "fail", "fail": "pass"}[truth]


def _grade(request: StandinRequest) -> StandinReply:
    found = re.search(r"What is (\d+) plus", request.user)
    assert found is not None, request.user
    ok = judge_says(int(found.group(1))) == "pass"
    body = {"rationale": "compared the sums", "rating": "yes" if ok else "no"}
    return StandinReply(json.dumps(body), input_tokens=20, output_tokens=5)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, JudgeServer]]:
    """A store with a run of 60 judged items; the store URL, run id and judge server."""
    folder = tmp_path_factory.mktemp("labels")
    rows = folder / "sums.jsonl"
    lines = []
    for k in range(ITEMS):
        answer = str(2 * k) if correct(k) else str(2 * k + 1)
        row = {"id": f"sum-{k:02d}", "prompt": f"What is {k} plus {k}?", "response": answer,
               "reference": str(2 * k)}  # fmt: skip
        lines.append(json.dumps(row))
    rows.write_text("\n".join(lines) + "\n", encoding="utf-8")
    url = f"sqlite:///{folder / 'assay.db'}"
    with JudgeServer(_grade) as server:
        saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
        os.environ["OPENAI_BASE_URL"] = server.openai_base_url
        os.environ["OPENAI_API_KEY"] = "test-key"
        try:
            done = runner.invoke(app, ["eval", str(rows), "--from", "vertex", "-m", METRIC,
                                       "--judge", "openai:judge-1", "--store", url])  # fmt: skip
            assert done.exit_code == 1, done.output  # the wrong sums fail
            run = re.search(r"run (\w+) stored", done.output)
            assert run is not None, done.output
            yield url, run.group(1), server
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _labels(url: str, *args: str) -> Any:
    return runner.invoke(app, ["labels", *args, "--store", url])


def _label_everything(url: str, run: str) -> None:
    for k in range(ITEMS):
        truth = "pass" if correct(k) else "fail"
        done = _labels(url, "set", run, f"sum-{k:02d}", "-m", METRIC, "-l", truth,
                       "--author", "ann", "--note", f"item {k}")  # fmt: skip
        assert done.exit_code == 0, done.output
        second = bob_says(k)
        if second is not None:
            # bob gives a score; 0.9 and 0.1 are pass and fail against the threshold 0.8.
            score = "0.9" if second == "pass" else "0.1"
            done = _labels(url, "set", run, f"sums/sum-{k:02d}", "-m", METRIC, "-l", score,
                           "--author", "bob")  # fmt: skip
            assert done.exit_code == 0, done.output


def _expected_pairs() -> tuple[list[str], list[str]]:
    humans, judges = [], []
    for k in range(ITEMS):
        people = ["pass" if correct(k) else "fail"]
        if bob_says(k) is not None:
            people.append(str(bob_says(k)))
        for verdict in people:
            humans.append(verdict)
            judges.append(judge_says(k))
    return humans, judges


def test_label_sixty_items_and_calibrate_from_the_store(
    judged: tuple[str, str, JudgeServer], tmp_path: Path
) -> None:
    url, run, server = judged
    _label_everything(url, run)

    listed = _labels(url, "list", run, "--json")
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert len(rows) == ITEMS + ITEMS // 3
    assert {r["author"] for r in rows} == {"ann", "bob"}
    table = _labels(url, "list", run)
    assert "sums/sum-07" in table.output and "item 7" in table.output

    # A new process reads the same labels from the same file.
    fresh = subprocess.run(
        [sys.executable, "-m", "assay", "labels", "list", run, "--json", "--store", url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    assert len(fresh.stdout.splitlines()) == len(rows)

    calls_before = len(server.requests)
    done = runner.invoke(app, ["judge", "calibrate", "--from-store", "--run", run, "-m", METRIC,
                               "--judge", "openai:judge-1", "--json", "--store", url])  # fmt: skip
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    humans, judges = _expected_pairs()
    assert report["compared"] == len(humans) == ITEMS + ITEMS // 3
    assert report["items"] == ITEMS and report["items_labelled_by_several"] == ITEMS // 3
    assert report["kappa"]["value"] == pytest.approx(cohen_kappa_score(humans, judges))
    assert report["kappa"]["low"] <= report["kappa"]["value"] <= report["kappa"]["high"]
    agree = sum(h == j for h, j in zip(humans, judges, strict=True))
    assert report["accuracy"]["value"] == pytest.approx(agree / len(humans))
    assert report["base_rate"]["value"] == pytest.approx(humans.count("pass") / len(humans))
    assert report["krippendorff_alpha_people"]["value"] is not None
    matrix = report["confusion_matrix"]["counts"]
    assert matrix["pass"]["fail"] == sum(
        h == "pass" and j == "fail" for h, j in zip(humans, judges, strict=True)
    )
    # Every item was judged once more (or answered from the cache of the eval run).
    assert report["judge_stats"]["judge/calls"] + report["judge_stats"]["judge/cache_hits"] > 0
    assert len(server.requests) - calls_before == report["judge_stats"]["judge/calls"]

    # The tables name the numbers and the disagreements.
    shown = runner.invoke(app, ["judge", "calibrate", "--from-store", "-m", METRIC, "--judge",
                                "openai:judge-1", "--store", url])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "Cohen's kappa" in shown.output and "Krippendorff's alpha, people" in shown.output
    assert "sums/sum-05" in shown.output  # the judge is wrong on item 5

    # The exported labels file gives the same kappa through `calibrate FILE`.
    out = tmp_path / "labels.jsonl"
    exported = _labels(url, "export", run, "--out", str(out))
    assert exported.exit_code == 0, exported.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == len(humans)
    from_file = runner.invoke(app, ["judge", "calibrate", str(out), "-m", METRIC, "--judge",
                                    "openai:judge-1", "--json", "--store", url])  # fmt: skip
    assert from_file.exit_code == 0, from_file.output
    assert json.loads(from_file.output)["kappa"] == pytest.approx(report["kappa"]["value"])


def test_unknown_run_case_metric_and_bad_labels_exit_2(
    judged: tuple[str, str, JudgeServer],
) -> None:
    url, run, _ = judged
    cases = [
        (["set", "zzzz", "sum-01", "-m", METRIC, "-l", "pass"], "zzzz"),
        (["set", run, "sum-99", "-m", METRIC, "-l", "pass"], "no case 'sum-99'"),
        (["set", run, "sum-01", "-m", "coherence", "-l", "pass"], "metric 'coherence'"),
        (["set", run, "sum-01", "-m", METRIC, "-l", "perhaps"], "label: 'perhaps'"),
        (["set", run, "sum-01", "-m", METRIC, "-l", "2.5"], "outside the metric's scale"),
        (["export", run, "-m", "coherence", "--out", "x.jsonl"], "no labels on metric"),
    ]
    before = _labels(url, "list", run, "--json").output
    for args, named in cases:
        done = _labels(url, *args)
        assert done.exit_code == 2, (args, done.output)
        assert named in " ".join(done.output.split()), (args, done.output)
    assert _labels(url, "list", run, "--json").output == before


def test_import_checks_every_line_first(
    judged: tuple[str, str, JudgeServer], tmp_path: Path
) -> None:
    url, run, _ = judged
    good = {"run_id": run, "case": "sum-10", "metric": METRIC, "label": "fail", "note": "x"}
    bad = {"run_id": run, "case": "sum-404", "metric": METRIC, "label": "pass"}
    file = tmp_path / "in.jsonl"
    file.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    done = _labels(url, "import", str(file), "--author", "carol")
    assert done.exit_code == 2 and "line 2" in done.output and "sum-404" in done.output
    assert '"carol"' not in _labels(url, "list", run, "--json").output
    file.write_text(json.dumps(good) + "\n" + "{not json\n", encoding="utf-8")
    done = _labels(url, "import", str(file), "--author", "carol")
    assert done.exit_code == 2 and "line 2" in done.output
    file.write_text(json.dumps(good) + "\n", encoding="utf-8")
    done = _labels(url, "import", str(file), "--author", "carol")
    assert done.exit_code == 0, done.output
    mine = [json.loads(x) for x in _labels(url, "list", run, "--json").output.splitlines()]
    assert [(r["case"], r["verdict"]) for r in mine if r["author"] == "carol"] == [
        ("sums/sum-10", "fail")
    ]
    gone = _labels(url, "delete", run, "sum-10", "-m", METRIC, "--author", "carol")
    assert gone.exit_code == 0, gone.output
    again = _labels(url, "delete", run, "sum-10", "-m", METRIC, "--author", "carol")
    assert again.exit_code == 2 and "carol has no label" in again.output
    history = _labels(url, "list", run, "--history")
    carol = [json.loads(x) for x in history.output.splitlines() if '"carol"' in x]
    assert [(e["action"], e["label"]) for e in carol] == [("set", "fail"), ("delete", None)]


def test_calibrate_usage_errors(judged: tuple[str, str, JudgeServer], tmp_path: Path) -> None:
    url, run, _ = judged
    assert _labels(url, "set", run, "sum-01", "-m", METRIC, "-l", "pass").exit_code == 0
    base = ["judge", "calibrate", "-m", METRIC, "--judge", "openai:judge-1", "--store", url]
    neither = runner.invoke(app, base)
    assert neither.exit_code == 2 and "--from-store" in neither.output
    both = runner.invoke(app, [*base, "--from-store", str(tmp_path / "x.jsonl")])
    assert both.exit_code == 2 and "not both" in both.output
    nothing = runner.invoke(app, [*base[:3], "correctness", *base[4:], "--from-store"])
    assert nothing.exit_code == 2, nothing.output
    assert "no labels on metric 'correctness'" in nothing.output
    assert METRIC in nothing.output  # the metrics that are labelled


def test_commands_that_read_a_store_refuse_a_missing_one_and_create_nothing(
    tmp_path: Path,
) -> None:
    """Every command that opens an existing store (`store.reading.open_existing`) names
    a mistyped SQLite path in one line, exit 2, and leaves no empty store behind."""
    missing = f"sqlite:///{tmp_path / 'nope' / 'absent.db'}"
    labels = tmp_path / "labels.jsonl"
    row = {"run_id": "r1", "case": "c1", "metric": METRIC, "label": "pass"}
    labels.write_text(json.dumps(row) + "\n", encoding="utf-8")
    commands = [
        ["labels", "set", "latest", "c1", "--metric", METRIC, "--label", "pass"],
        ["labels", "delete", "latest", "c1", "--metric", METRIC],
        ["labels", "list", "latest"],
        ["labels", "export", "--out", str(tmp_path / "out.jsonl")],
        ["labels", "import", str(labels)],
        ["judge", "calibrate", "--from-store", "--judge", "openai:x", "--metric", METRIC],
        ["report", "latest", "--html", str(tmp_path / "r.html")],
        ["cache", "stats"],
        ["cache", "clear"],
    ]
    for args in commands:
        result = runner.invoke(app, [*args, "--store", missing])
        assert result.exit_code == 2, (args, result.output)
        said = " ".join(result.output.split())
        assert "does not exist" in said and "absent.db" in said, (args, result.output)
        assert "Traceback" not in result.output
    assert not (tmp_path / "nope").exists()
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "r.html").exists()
