"""Judge noise end to end, against the stand-in judges over real HTTP: `assay eval
--judge-samples`, `assay judge stability` and `assay judge probe`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.testing import JudgeServer
from assay.testing.standin_judges import fair, first_shown, length_loving, seeded_coin

REPO = Path(__file__).resolve().parents[2]
ITEMS = REPO / "examples" / "judge_calibration" / "final_response_match_v2.jsonl"
METRIC = "final_response_match_v2"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def items(tmp_path: Path) -> Path:
    """The first 20 calibration items (prompt, response, reference) as Vertex rows;
    every third response quotes its reference, so the `fair` stand-in passes those."""
    lines = ITEMS.read_text().splitlines()[:20]
    rows = [
        {k: json.loads(line)[k] for k in ("id", "prompt", "response", "reference")}
        for line in lines
    ]
    for row in rows[::3]:
        row["response"] = f"{row['reference']} (checked)"
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def judge_args(server: JudgeServer, *extra: str) -> list[str]:
    return ["--judge", "openai:standin", "--base-url", server.openai_base_url, *extra]


def judge_command(command: str, data: Path, *extra: str, metric: str = METRIC) -> list[str]:
    """`assay judge COMMAND DATA -m METRIC EXTRA...` (stability or probe)."""
    return ["judge", command, str(data), "-m", metric, *extra]


def eval_args(items: Path, *extra: str) -> list[str]:
    """`assay eval ITEMS` scored by the judged metric with the stand-in judge."""
    return ["eval", str(items), "-m", METRIC, "--judge", "openai:standin", *extra]


# ----------------------------------------------------------------------------- eval


def test_eval_judge_samples_marks_unstable_items_everywhere(items: Path, tmp_path: Path) -> None:
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    with JudgeServer(seeded_coin(3)) as server:
        result = runner.invoke(
            app,
            eval_args(
                items,
                "--judge-samples",
                "3",
                "--store",
                store,
                "--out",
                str(out),
                "--html",
                str(html),
            ),
            env={"OPENAI_BASE_URL": server.openai_base_url, "COLUMNS": "200"},
        )
        calls = len(server.requests)
    assert result.exit_code in (0, 1), result.output
    assert calls == 20 * 3  # the run-wide count, over the metric's own (ADK's 5)
    doc = json.loads(out.read_text())
    unstable = doc["summary"]["judge/unstable/final_response_match_v2"]
    assert doc["summary"]["judge/unstable"] == unstable and 5 <= unstable <= 20
    marked = [
        c
        for c in doc["cases"]
        if c.get("judge_samples", {}).get("final_response_match_v2", {}).get("unstable")
    ]
    assert len(marked) == unstable
    split = marked[0]["judge_samples"]["final_response_match_v2"]
    assert split["pass"] + split["fail"] == 3 and min(split["pass"], split["fail"]) > 0
    row = doc["rows"][0]
    assert len(row["final_response_match_v2/sample_scores"]) == 3
    # The console marks each unstable score and counts them under the table.
    assert f"~ unstable: {unstable} judged items" in result.output
    assert result.output.count(" / 0.80 ~") == unstable
    # The HTML report carries the flag to its case table and case pages.
    assert '"unstable": ["final_response_match_v2"]' in html.read_text()


def test_eval_judge_samples_is_checked(items: Path) -> None:
    result = runner.invoke(
        app,
        ["eval", str(items), "-m", "final_response_match_v2", "--judge-samples", "0", "--no-store"],
    )
    assert result.exit_code == 2
    assert "--judge-samples must be at least 1, got 0" in result.output


def test_one_sample_per_item_adds_no_noise_keys(items: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with JudgeServer(fair) as server:
        result = runner.invoke(
            app,
            eval_args(items, "--judge-samples", "1", "--no-store", "--out", str(out)),
            env={"OPENAI_BASE_URL": server.openai_base_url},
        )
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(out.read_text())
    assert not [k for k in doc["summary"] if k.startswith("judge/unstable")]
    assert all("judge_samples" not in c for c in doc["cases"])
    assert "unstable" not in result.output


# ----------------------------------------------------------------------------- stability


def test_stability_of_a_deterministic_judge(items: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    args = judge_command("stability", items, "--repeats", "4", "--samples", "1",
                         "--store", store, "--json")  # fmt: skip
    with JudgeServer(fair) as server:
        result = runner.invoke(app, [*args, *judge_args(server)])
        first_calls = len(server.requests)
        again = runner.invoke(app, [*args, *judge_args(server)])
        second_calls = len(server.requests) - first_calls
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["flip_rate"] == 0.0 and report["fleiss_kappa"] == pytest.approx(1.0)
    assert report["stable"] is True and report["flipped"] == 0 and report["rated"] == 20
    assert report["flip_rate_ci95"] == [0.0, 0.0]
    # Each repeat really asked the judge: 4 repeats x 20 items x 1 sample ...
    assert first_calls == 4 * 20
    # ... and the same check again is answered from the cache (each repeat's own samples).
    assert second_calls == 0 and json.loads(again.output)["fleiss_kappa"] == pytest.approx(1.0)


def test_a_random_judge_is_reported_unstable(items: Path) -> None:
    repeats = ["--repeats", "5", "--samples", "1", "--no-store"]
    with JudgeServer(seeded_coin(11)) as server:
        result = runner.invoke(
            app,
            judge_command("stability", items, *repeats, *judge_args(server)),
            env={"COLUMNS": "200"},
        )
        calls = len(server.requests)
    assert result.exit_code == 0, result.output
    assert calls == 5 * 20
    assert "unstable:" in result.output and "Items that changed their verdict" in result.output
    as_json = None
    with JudgeServer(seeded_coin(11)) as server:
        as_json = runner.invoke(
            app,
            judge_command(
                "stability",
                items,
                *repeats,
                "--json",
                "--max-flip-rate",
                "0.1",
                *judge_args(server),
            ),
        )
    assert as_json.exit_code == 1  # the flip rate is above --max-flip-rate
    report = json.loads(as_json.output)
    assert report["stable"] is False and report["flipped"] >= 15
    low, high = report["flip_rate_ci95"]
    assert 0.3 < low <= report["flip_rate"] <= high  # coin flips disagree about half the time
    assert abs(report["fleiss_kappa"]) < 0.25


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--repeats", "1"], "--repeats must be at least 2"),
        (["--max-flip-rate", "2"], "--max-flip-rate must be between 0 and 1"),
        (["--samples", "0"], "--samples must be at least 1"),
        (["--criterion", "[1]"], "--criterion must be a JSON object"),
    ],
)
def test_stability_usage_errors(items: Path, extra: list[str], message: str) -> None:
    result = runner.invoke(
        app,
        judge_command(
            "stability",
            items,
            "--judge",
            "openai:standin",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--no-store",
            *extra,
        ),
    )
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_stability_refuses_a_metric_that_is_not_judged(items: Path) -> None:
    result = runner.invoke(
        app,
        judge_command(
            "stability", items, "--judge", "openai:x", "--no-store", metric="response_match_score"
        ),
    )
    assert result.exit_code == 2 and "not judged by an LLM" in result.output


def test_stability_names_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    result = runner.invoke(
        app, judge_command("stability", missing, "--judge", "openai:x", "--no-store")
    )
    assert result.exit_code == 2 and "nope.jsonl" in result.output


# ----------------------------------------------------------------------------- probe


def probe(server: JudgeServer, items: Path, *extra: str) -> tuple[int, list[dict[str, object]]]:
    result = runner.invoke(
        app, judge_command("probe", items, "--no-store", "--json", *judge_args(server), *extra)
    )
    return result.exit_code, json.loads(result.output) if result.exit_code in (
        0,
        1,
    ) else result.output


def test_a_fair_judge_is_not_flagged(items: Path) -> None:
    with JudgeServer(fair) as server:
        code, reports = probe(server, items)
    assert code == 0
    position, verbosity = reports
    assert position["bias"] == "position" and position["flagged"] is False
    assert position["follows_position"] == 0 and position["decided"] == 20
    assert verbosity["bias"] == "verbosity" and verbosity["flagged"] is False
    assert verbosity["rose"] == 0 and verbosity["compared"] == 20


def test_a_position_biased_judge_is_caught(items: Path) -> None:
    with JudgeServer(first_shown) as server:
        code, reports = probe(server, items, "--bias", "position", "--fail-on-bias")
        asked = [r for r in server.requests if "<answer_a>" in r.user]
    assert code == 1  # --fail-on-bias
    [position] = reports
    assert position["flagged"] is True and position["rate"] == 1.0
    assert position["first_shown_share"] == 1.0
    assert position["rate_ci95"][0] > 0.8
    assert len(asked) == 2 * 20  # both orders of each pair


def test_a_length_loving_judge_is_caught_by_the_verbosity_probe(items: Path) -> None:
    with JudgeServer(length_loving) as server:
        code, reports = probe(server, items, "--bias", "verbosity", "--samples", "1")
        padded = [r for r in server.requests if "I hope this helps" in r.user]
    assert code == 0
    [verbosity] = reports
    assert verbosity["flagged"] is True and verbosity["fell"] == 0
    assert verbosity["rose"] >= 5 and verbosity["net_ci95"][0] > 0
    assert len(padded) == 20


def test_the_probe_prints_a_plain_verdict_line(items: Path) -> None:
    with JudgeServer(first_shown) as server:
        result = runner.invoke(
            app,
            judge_command(
                "probe", items, "--no-store", *judge_args(server), metric="pairwise_preference"
            ),
            env={"COLUMNS": "200"},
        )
    assert result.exit_code == 0, result.output
    assert (
        "position bias: the verdict followed the position, not the answer, in 20 of 20 pairs"
        in result.output
    )


@pytest.mark.parametrize(
    ("metric", "bias", "message"),
    [
        ("final_response_match_v2", "length", "--bias must be position, verbosity or both"),
        ("pairwise_preference", "verbosity", "needs a pointwise judged metric"),
        ("response_match_score", "verbosity", "not judged by an LLM"),
    ],
)
def test_probe_usage_errors(items: Path, metric: str, bias: str, message: str) -> None:
    result = runner.invoke(
        app,
        judge_command(
            "probe", items, "--bias", bias, "--judge", "openai:x", "--no-store", metric=metric
        ),
    )
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_the_position_probe_needs_two_different_answers(tmp_path: Path) -> None:
    data = tmp_path / "same.jsonl"
    data.write_text(json.dumps({"prompt": "q", "response": "same", "reference": "same"}) + "\n")
    with JudgeServer(fair) as server:
        result = runner.invoke(
            app,
            judge_command(
                "probe", data, "--no-store", *judge_args(server), metric="pairwise_preference"
            ),
        )
        assert server.requests == []
    assert result.exit_code == 2
    assert "needs cases with a recorded response and a different reference" in result.output


@pytest.mark.parametrize("command", ["stability", "probe"])
def test_an_unreachable_judge_measures_nothing_and_says_why(tmp_path: Path, command: str) -> None:
    few = tmp_path / "few.jsonl"
    few.write_text(json.dumps({"prompt": "q", "response": "a", "reference": "b"}) + "\n")
    result = runner.invoke(
        app,
        judge_command(
            command,
            few,
            "--judge",
            "openai:x",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--samples",
            "1",
            "--judge-timeout",
            "2",
            "--no-store",
            "--json",
        ),
    )
    assert result.exit_code == 1, result.output
    parsed = json.loads(result.output)
    reports = parsed if isinstance(parsed, list) else [parsed]
    for report in reports:
        assert "cannot reach the endpoint" in report["unscored_reason"]
        assert "nothing to measure" in report["verdict"]


def test_the_python_api_takes_judge_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay import evaluate
    from assay.metrics.sample_split import split_of

    rows = [{"prompt": f"q{i}", "response": f"a{i}", "reference": f"r{i}"} for i in range(6)]
    with JudgeServer(seeded_coin(9)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        result = evaluate(
            rows, ["final_response_match_v2"], judge="openai:standin", judge_samples=2
        )
        calls = len(server.requests)
    assert calls == 6 * 2
    splits = [split_of(c.metrics["final_response_match_v2"].details) for c in result.cases]
    assert all(s is not None and sum(s) == 2 for s in splits)
    unstable = sum(1 for s in splits if s is not None and min(s) > 0)
    assert result.summary["judge/unstable/final_response_match_v2"] == unstable
