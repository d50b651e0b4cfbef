"""Judge calibration: statistics, the labels file, and `assay judge calibrate` end to end."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli.judge import judge_app
from assay.core.results import CaseResult, EvalResult
from assay.engine.calibrate import (
    ConfusionMatrix,
    accuracy,
    build_judged_metric,
    cohen_kappa,
    confusion_matrix,
    load_labels,
    outcome_names,
)
from assay.errors import InputError
from assay.judges.client import JudgePool
from assay.judges.types import BackendReply, GenerationSettings
from assay.session.calibrate import acalibrate
from assay.session.run_session import RunSession
from assay.store import Store
from assay.testing import JudgeServer, StandinRequest

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()
LABELS = REPO / "examples" / "judge_calibration" / "final_response_match_v2.jsonl"


def matrix(
    counts: list[list[int]], labels: tuple[str, ...] = ("valid", "invalid")
) -> ConfusionMatrix:
    return ConfusionMatrix(labels, tuple(tuple(row) for row in counts))


# ----------------------------------------------------------------------------- statistics


def test_perfect_agreement_has_accuracy_and_kappa_one() -> None:
    m = matrix([[20, 0], [0, 30]])
    assert accuracy(m) == 1.0
    assert cohen_kappa(m) == pytest.approx(1.0)


def test_agreement_no_better_than_chance_has_kappa_zero() -> None:
    # Humans say valid 40% of the time, the judge 30%, independently: each cell is
    # n x row share x column share, so the observed agreement (12 + 42) / 100 equals the
    # chance agreement 0.4 x 0.3 + 0.6 x 0.7 = 0.54.
    m = matrix([[12, 28], [18, 42]])
    assert accuracy(m) == pytest.approx(0.54)
    assert cohen_kappa(m) == pytest.approx(0.0, abs=1e-12)
    # A judge that always says "valid" agrees half the time on a balanced set, by chance.
    always = matrix([[25, 0], [25, 0]])
    assert accuracy(always) == 0.5
    assert cohen_kappa(always) == pytest.approx(0.0, abs=1e-12)


def test_worked_example() -> None:
    # 50 items: 20 both valid, 5 humans valid / judge invalid, 10 humans invalid / judge
    # valid, 15 both invalid. p_o = 35/50 = 0.7; humans 25/25, judge 30/20, so
    # p_e = 0.5 x 0.6 + 0.5 x 0.4 = 0.5 and kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    m = matrix([[20, 5], [10, 15]])
    assert m.total == 50
    assert m.row_totals() == [25, 25]
    assert m.column_totals() == [30, 20]
    assert m.count("invalid", "valid") == 10
    assert accuracy(m) == pytest.approx(0.7)
    assert cohen_kappa(m) == pytest.approx(0.4)


def test_three_labels() -> None:
    # p_o = 23/30; rows 12, 10, 8; columns 11, 13, 6; p_e = (132 + 130 + 48) / 900;
    # kappa = (690 - 310) / (900 - 310) = 380 / 590.
    m = matrix([[10, 2, 0], [1, 8, 1], [0, 3, 5]], ("4", "3", "2"))
    assert accuracy(m) == pytest.approx(23 / 30)
    assert cohen_kappa(m) == pytest.approx(380 / 590)


def test_systematic_disagreement_has_kappa_minus_one() -> None:
    m = matrix([[0, 10], [10, 0]])
    assert accuracy(m) == 0.0
    assert cohen_kappa(m) == pytest.approx(-1.0)


def test_kappa_is_undefined_when_both_raters_use_one_label() -> None:
    assert cohen_kappa(matrix([[10, 0], [0, 0]])) is None
    empty = matrix([[0, 0], [0, 0]])
    assert accuracy(empty) is None
    assert cohen_kappa(empty) is None


def test_confusion_matrix_counts_pairs() -> None:
    pairs = [("valid", "valid")] * 3 + [("valid", "invalid")] * 2 + [("invalid", "valid")]
    m = confusion_matrix(pairs, ("valid", "invalid"))
    assert m.counts == ((3, 2), (1, 0))
    assert m.agreed == 3
    assert m.to_dict() == {
        "labels": ["valid", "invalid"],
        "counts": {"valid": {"valid": 3, "invalid": 2}, "invalid": {"valid": 1, "invalid": 0}},
    }
    with pytest.raises(ValueError, match="'maybe' is not one of"):
        confusion_matrix([("valid", "maybe")], ("valid", "invalid"))
    with pytest.raises(ValueError, match="distinct"):
        confusion_matrix([], ("yes", "yes"))


# ----------------------------------------------------------------------------- labels file


def write_lines(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_shipped_labelled_set_is_balanced_and_loads() -> None:
    labelled = load_labels(LABELS)
    verdicts = list(labelled.labels.values())
    assert len(verdicts) >= 50
    assert verdicts.count(True) == verdicts.count(False)
    assert labelled.format == "vertex"
    cases = labelled.evalset.cases
    assert [c.id for c in cases] == list(labelled.labels)
    for case in cases:
        # Every item has what final_response_match_v2 reads: prompt, response, reference.
        assert case.actual is not None and case.actual[0].final_response
        assert case.reference is not None and case.reference[0].final_response
        assert case.actual[0].user_input.text == case.reference[0].user_input.text
        assert case.metadata["domain"] in {"travel", "home_automation", "support", "math", "facts"}
    kinds = {c.metadata["kind"] for c in cases}
    assert {"off_by_one", "negation", "swapped_entity", "wrong_extra_claim"} <= kinds
    assert {"paraphrase", "extra_correct_detail", "format"} <= kinds
    assert labelled.lines["travel-01"] == 1


def test_label_words_map_to_positive_and_negative(tmp_path: Path) -> None:
    rows = [
        {"prompt": "q", "response": "a", "reference": "a", "label": label}
        for label in ["valid", "Invalid", "yes", "NO", True, False, 1, 0, " pass ", "fail"]
    ]
    labelled = load_labels(write_lines(tmp_path / "l.jsonl", rows))
    assert list(labelled.labels.values()) == [True, False] * 5
    # Without ids the row format numbers the cases.
    assert next(iter(labelled.labels)) == "row-0"


def test_databricks_rows_are_read_as_mlflow(tmp_path: Path) -> None:
    rows = [
        {
            "request_id": "r1",
            "request": "What is the capital of France?",
            "response": "Paris.",
            "expected_response": "Paris",
            "label": "yes",
        }
    ]
    labelled = load_labels(write_lines(tmp_path / "db.jsonl", rows))
    assert labelled.format == "mlflow"
    case = labelled.evalset.cases[0]
    assert case.id == "r1" and case.expected_response == "Paris"
    assert labelled.labels == {"r1": True}


def test_missing_label_names_file_line_and_key(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "l.jsonl",
        [{"id": "a", "prompt": "q", "response": "r", "label": "valid"}, {"id": "b", "prompt": "q"}],
    )
    with pytest.raises(InputError) as info:
        load_labels(path)
    err = info.value
    assert err.file == str(path) and err.case_id == "b" and err.path == "line 2 $.label"
    assert "missing the human label" in str(err)


def test_unknown_label_lists_the_accepted_words(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "l.jsonl", [{"id": "a", "prompt": "q", "label": "maybe"}])
    with pytest.raises(InputError, match="unknown label 'maybe'") as info:
        load_labels(path)
    assert info.value.expected is not None and "invalid" in info.value.expected
    assert info.value.path == "line 1 $.label"


def test_bad_lines_are_located(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text('{"prompt": "q", "label": "yes"}\n\n{"prompt": \n', encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON") as info:
        load_labels(path)
    assert info.value.path == "line 3"
    write_lines(path, [["not", "an", "object"]])
    with pytest.raises(InputError, match="got list") as info:
        load_labels(path)
    assert info.value.expected == "a JSON object"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no labelled items"):
        load_labels(path)


def test_inputs_that_are_not_a_row_format_are_rejected(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "l.jsonl", [{"question": "q", "answer": "a", "label": "yes"}])
    with pytest.raises(InputError) as info:
        load_labels(path)
    assert info.value.file == str(path)


# ----------------------------------------------------------------------------- end to end

# How the scripted judge answers (every other item: the human label).
FLIPPED_TO_INVALID = {"travel-03", "home-06", "math-05", "facts-10"}  # humans: valid
FLIPPED_TO_VALID = {"support-10", "math-06"}  # humans: invalid
UNPARSEABLE = {"facts-12", "home-11"}  # one valid, one invalid: never a verdict
SPLIT = "travel-01"  # humans: valid; the three samples say valid, invalid, valid


class LabelledJudge:
    """A stand-in server script answering each labelled item from a lookup table."""

    def __init__(self, path: Path) -> None:
        self.items = [json.loads(line) for line in path.read_text().splitlines()]
        self.seen: dict[str, int] = {}

    def item_for(self, request: StandinRequest) -> dict[str, str]:
        text = request.user
        found = [
            item
            for item in self.items
            if item["response"] in text and item["reference"] in text and item["prompt"] in text
        ]
        assert len(found) == 1, f"the prompt matches {len(found)} labelled items"
        return found[0]

    def __call__(self, request: StandinRequest) -> str:
        item = self.item_for(request)
        ident = item["id"]
        count = self.seen[ident] = self.seen.get(ident, 0) + 1
        if ident in UNPARSEABLE:
            return "Hard to say; both readings seem possible."
        verdict = item["label"]
        if ident in FLIPPED_TO_INVALID:
            verdict = "invalid"
        elif ident in FLIPPED_TO_VALID:
            verdict = "valid"
        elif ident == SPLIT and count % 3 == 2:
            verdict = "invalid"
        return json.dumps({"reasoning": f"scripted verdict for {ident}", "verdict": verdict})


@pytest.fixture
def openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def calibrate_args(server: JudgeServer, store: str, *extra: str) -> list[str]:
    return [
        "calibrate",
        str(LABELS),
        "--judge",
        "openai:stand-in",
        "--metric",
        "final_response_match_v2",
        "--samples",
        "3",
        "--base-url",
        server.openai_base_url,
        "--store",
        store,
        "--judge-concurrency",
        "32",
        *extra,
    ]


@pytest.mark.usefixtures("openai_key")
def test_calibrate_end_to_end_against_the_stand_in_server(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    out = tmp_path / "report.json"
    with JudgeServer(LabelledJudge(LABELS)) as server:
        result = runner.invoke(
            judge_app, calibrate_args(server, store, "--out", str(out)), env={"COLUMNS": "200"}
        )
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 60 * 3
        assert not server.errors
        # The judge was asked with final_response_match_v2's prompt, item inputs inside.
        assert all(r.model == "stand-in" for r in server.requests)

        report = json.loads(out.read_text())
        # 58 scored items: 29 valid (4 judged invalid), 29 invalid (2 judged valid).
        assert (report["items"], report["scored"], report["unscored"]) == (60, 58, 2)
        assert report["confusion_matrix"]["counts"] == {
            "valid": {"valid": 25, "invalid": 4},
            "invalid": {"valid": 2, "invalid": 27},
        }
        assert report["accuracy"] == pytest.approx(52 / 58)
        # p_o = 52/58; both raters' marginals give p_e = 0.5: kappa = 2 p_o - 1 = 46/58.
        assert report["kappa"] == pytest.approx(46 / 58)
        assert {d["id"] for d in report["disagreements"]} == FLIPPED_TO_INVALID | FLIPPED_TO_VALID
        assert {u["id"] for u in report["unscored_items"]} == UNPARSEABLE
        assert all("parse" in u["explanation"] for u in report["unscored_items"])
        by_id = {r["id"]: r for r in report["results"]}
        assert by_id[SPLIT]["judge"] == "valid"
        assert by_id[SPLIT]["agreement"] == pytest.approx(2 / 3)
        assert by_id["math-02"]["judge"] == "invalid" and by_id["math-02"]["agreement"] == 1.0
        assert by_id["math-02"]["line"] == 38
        assert report["judge_stats"]["judge/calls"] == 180
        assert report["judge_stats"]["judge/cache_hits"] == 0

        text = result.output
        assert "Cohen's kappa" in text and "0.793" in text and "0.897" in text
        assert "Confusion matrix" in text
        for ident in FLIPPED_TO_INVALID | FLIPPED_TO_VALID | UNPARSEABLE:
            assert ident in text
        assert "180 calls" in text

        # The same calibration again: every parsed reply comes from the store's cache;
        # the 2 items x 3 unparseable samples were not cached and are asked again. A
        # kappa gate above the measured agreement makes it exit 1.
        again = runner.invoke(
            judge_app, calibrate_args(server, store, "--min-kappa", "0.9", "--out", str(out))
        )
        assert again.exit_code == 1, again.output
        assert len(server.requests) == 186
        cached = json.loads(out.read_text())
        assert cached["kappa"] == pytest.approx(46 / 58)
        assert cached["judge_stats"]["judge/calls"] == 6
        assert cached["judge_stats"]["judge/cache_hits"] == 174
        passing = runner.invoke(judge_app, calibrate_args(server, store, "--min-kappa", "0.75"))
        assert passing.exit_code == 0, passing.output

        # --no-cache asks the judge again.
        before = len(server.requests)
        fresh = runner.invoke(judge_app, calibrate_args(server, store, "--no-cache"))
        assert fresh.exit_code == 0, fresh.output
        assert len(server.requests) == before + 180

    # The store holds the judge cache only: a calibration is not a run of `assay runs`.
    db = Store.open(store)
    try:
        assert db.list_runs() == []
    finally:
        db.close()


@pytest.mark.usefixtures("openai_key")
def test_a_judge_that_never_answers_usably_exits_1(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "two.jsonl",
        [
            {"id": "a", "prompt": "2+2?", "reference": "4", "response": "4", "label": "valid"},
            {"id": "b", "prompt": "2+3?", "reference": "5", "response": "6", "label": "invalid"},
        ],
    )
    with JudgeServer("I would rather not say.") as server:
        args = calibrate_args(server, "unused", "--no-store")
        args[1] = str(path)
        result = runner.invoke(judge_app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "0 scored, 2 not scored" in result.output
    assert "n/a" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metric", "no_such_metric"], "unknown metric 'no_such_metric'"),
        (["--metric", "response_match_score"], "not judged by an LLM"),
        (["--metric", "final_response_match_v2", "--samples", "0"], "--samples"),
        (["--metric", "final_response_match_v2", "--criterion", "[1]"], "JSON object"),
        (["--metric", "final_response_match_v2", "--judge-concurrency", "0"], "at least 1"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(
        judge_app,
        ["calibrate", str(LABELS), "--judge", "openai:x", "--no-store", *args],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == 2
    assert message in result.output


def test_unknown_judge_prefix_exits_2() -> None:
    result = runner.invoke(
        judge_app,
        [
            "calibrate",
            str(LABELS),
            "--judge",
            "mystery:m",
            "--no-store",
            "-m",
            "final_response_match_v2",
        ],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == 2
    assert "openai:NAME" in result.output


class ScriptedBackend:
    """An in-process judge backend answering `yes` when the response holds the answer."""

    backend = "scripted"

    def __init__(self, model: str) -> None:
        self.model = model
        self.calls = 0

    async def complete(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BackendReply:
        self.calls += 1
        user = messages[-1]["content"]
        response = user.split("<response>")[1].split("</response>")[0]
        expected = user.split("<expected>")[1].split("</expected>")[0]
        rating = "yes" if expected.strip().lower() in response.lower() else "no"
        return BackendReply(json.dumps({"rationale": "compared", "rating": rating}))

    async def aclose(self) -> None:
        return None


async def test_acalibrate_a_databricks_judge_on_mlflow_rows(tmp_path: Path) -> None:
    rows = [
        {"request_id": "paris", "request": "Capital of France?", "response": "It is Paris.",
         "expected_response": "Paris", "label": "yes"},
        {"request_id": "rome", "request": "Capital of Italy?", "response": "Milan.",
         "expected_response": "Rome", "label": "no"},
        # The humans accept an answer the scripted judge rejects.
        {"request_id": "nyc", "request": "Largest US city?", "response": "NYC",
         "expected_response": "New York", "label": "yes"},
    ]  # fmt: skip
    backends: list[ScriptedBackend] = []

    def factory(model: str, options: object = None, *, timeout_s: float) -> ScriptedBackend:
        backends.append(ScriptedBackend(model))
        return backends[-1]

    pool = JudgePool(default_model="openai:scripted", backend_factory=factory)
    try:
        report = await acalibrate(
            write_lines(tmp_path / "db.jsonl", rows),
            metric="correctness",
            judge="openai:scripted",
            pool=pool,
        )
    finally:
        await pool.aclose()
    assert report.outcomes == ("yes", "no")
    assert report.samples == 1  # the Databricks judges' default
    assert backends[0].calls == 3
    assert report.matrix.counts == ((1, 1), (0, 1))
    assert report.accuracy == pytest.approx(2 / 3)
    # p_o = 2/3; humans 2 yes / 1 no, judge 1 / 2: p_e = (2 + 2) / 9; kappa = (6 - 4) / (9 - 4).
    assert report.kappa == pytest.approx(2 / 5)
    assert [d.case_id for d in report.disagreements] == ["nyc"]
    assert report.disagreements[0].to_dict()["explanation"] == "compared"
    assert report.judge_stats["judge/calls"] == 3


class Lifecycle:
    """A run observer noting the hooks it is called through, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.finished: EvalResult | None = None

    def on_start(self, total: int) -> None:
        self.calls.append(f"start {total}")

    def on_case_done(self, result: CaseResult) -> None:
        self.calls.append(f"done {result.case_id}")

    def on_finish(self, result: EvalResult) -> None:
        self.calls.append("finish")
        self.finished = result


async def test_acalibrate_runs_a_session_whose_observers_see_every_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"request_id": name, "request": f"Capital of {country}?", "response": answer,
         "expected_response": capital, "label": label}
        for name, country, answer, capital, label in [
            ("paris", "France", "Paris.", "Paris", "yes"),
            ("rome", "Italy", "Milan.", "Rome", "no"),
            ("bern", "Switzerland", "Bern.", "Bern", "yes"),
        ]
    ]  # fmt: skip
    sessions: list[RunSession] = []
    session_arun = RunSession.arun

    async def spy(self: RunSession) -> EvalResult:
        sessions.append(self)
        return await session_arun(self)

    monkeypatch.setattr(RunSession, "arun", spy)
    pool = JudgePool(
        default_model="openai:scripted",
        backend_factory=lambda model, options=None, *, timeout_s: ScriptedBackend(model),
    )
    seen = Lifecycle()
    try:
        report = await acalibrate(
            write_lines(tmp_path / "db.jsonl", rows),
            metric="correctness",
            judge="openai:scripted",
            pool=pool,
            observers=[seen],
        )
    finally:
        await pool.aclose()
    # One session, recording nothing, judged by the caller's pool.
    assert len(sessions) == 1
    assert sessions[0].store is None and sessions[0].judges is pool
    assert sessions[0].run_id is None and not sessions[0].opened
    # The observer saw the run start with 3 items, each item scored, the run end.
    assert seen.calls[0] == "start 3" and seen.calls[-1] == "finish"
    assert sorted(seen.calls[1:-1]) == ["done bern", "done paris", "done rome"]
    assert seen.finished is not None and seen.finished.summary["judge/calls"] == 3
    assert [i.agrees for i in report.items] == [True, True, True]
    assert report.kappa == pytest.approx(1.0)


def test_build_judged_metric_sets_the_judge_options() -> None:
    metric = build_judged_metric(
        "final_response_match_v2",
        judge="openai:m",
        samples=7,
        base_url="http://127.0.0.1:1/v1",
        criterion={"threshold": 0.5, "judge_model_options": {"temperature": 0.2}},
    )
    options = metric.judge_options
    assert (options.judge_model, options.num_samples, options.base_url) == (
        "openai:m",
        7,
        "http://127.0.0.1:1/v1",
    )
    assert options.temperature == 0.2 and metric.threshold == 0.5
    assert outcome_names(metric) == ("valid", "invalid")
    assert outcome_names(build_judged_metric("safety", judge="openai:m")) == ("yes", "no")
    assert outcome_names(build_judged_metric("semantic_similarity", judge="openai:m")) == (
        "pass",
        "fail",
    )
