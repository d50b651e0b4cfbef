"""Gemini judge calls through Gemini's batch mode (`--judge-batch`, issue #38).

Every scenario drives `assay eval` (in process, or as a real subprocess killed with
SIGKILL) through the real google-genai SDK against the stand-in's
``models/{model}:batchGenerateContent`` and ``batches/{id}`` on 127.0.0.1 (reached with
the SDK's own ``GOOGLE_GEMINI_BASE_URL``), with a store on disk, and checks from the
stand-in's counters how many batches were submitted and how many live calls were made.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from batch_runs import CorrectnessRuns, failing_once_on, open_batches, scores, statuses, verdict

from assay.cli import app
from assay.judges.client import JudgePool
from assay.models.backends import gemini as gemini_backend
from assay.models.backends.gemini import VERTEX_BATCH_UNAVAILABLE, GeminiBackend
from assay.models.types import GenerationSettings, ModelCallError
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest
from standin_judge import clear_google_environment, runner, standin_judge, write_rows

MODEL = "stand-in"
JUDGE = f"gemini:{MODEL}"

ROWS = [
    {"request": "Capital of France?", "response": "Paris.", "expected_response": "Paris"},
    {"request": "Legs of a spider?", "response": "Six.", "expected_response": "Eight"},
    {"request": "Boiling point of water?", "response": "100 C.", "expected_response": "100 C"},
    {"request": "Largest planet?", "response": "Jupiter.", "expected_response": "Jupiter"},
]
#: the statuses of ROWS' cases, sorted: the spider row is judged wrong
STATUSES = ["FAILED", "PASSED", "PASSED", "PASSED"]
RUNS = CorrectnessRuns(JUDGE, ROWS)


def _open_batches(path: Path) -> dict[str, list[str]]:
    """The stand-in judge's batches recorded in the store at `path`, not collected."""
    return open_batches(path, backend="gemini", endpoint="gemini-api", model=MODEL)


@pytest.fixture(autouse=True)
def _no_google_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_google_environment(monkeypatch)


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with standin_judge(monkeypatch, verdict, vendors=("gemini",)) as server:
        yield server


def test_a_batch_run_gives_the_verdicts_of_a_live_run_in_one_batch(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    server = judge_env
    # Answers come back in reverse order: each is matched to its call by its key.
    server.batch_endpoints.gemini_reversed = True
    live = RUNS.eval(tmp_path, "live.db")
    live_requests = server.requests
    assert len(live_requests) == len(ROWS)
    batched = RUNS.eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1
    assert server.batch_requests == len(ROWS)
    assert len(server.requests) == len(ROWS)  # no live call in the batch run
    assert scores(batched) == scores(live)
    assert statuses(batched) == STATUSES
    assert batched["summary"]["judge/calls"] == len(ROWS)
    # The batch sent exactly what the live calls sent: the same body, schema included.
    live_bodies = sorted(json.dumps(r.body, sort_keys=True) for r in live_requests)
    batch_bodies = sorted(json.dumps(r.body, sort_keys=True) for r in server.batch_log)
    assert batch_bodies == live_bodies
    assert all(r.json_schema is not None for r in server.batch_log)
    assert {r.model for r in server.batch_log} == {MODEL}
    # The batch's replies are in the reply cache under a live call's keys: a rerun,
    # batched or live, calls nothing.
    again = RUNS.eval(tmp_path, "batch.db", "--judge-batch", "--fresh")
    RUNS.eval(tmp_path, "batch.db", "--fresh")
    assert server.batch_submissions == 1
    assert len(server.requests) == len(ROWS)
    assert scores(again) == scores(live)
    assert _open_batches(tmp_path / "batch.db") == {}  # collected: never again


def test_items_the_batch_fails_are_made_live(tmp_path: Path, judge_env: JudgeServer) -> None:
    server = judge_env
    # The first answer to the water row fails (in the batch); the live retry works.
    server.set_script(failing_once_on("100 C.", verdict))
    result = RUNS.eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1
    assert server.batch_requests == len(ROWS)
    assert len(server.requests) == 1  # the failed item, made live
    assert "100 C." in server.requests[0].prompt
    assert statuses(result) == STATUSES


def test_responses_without_their_key_are_made_live_never_matched_by_position(
    tmp_path: Path, judge_env: JudgeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Some API versions answer without the requests' metadata, and the order of the
    # answers is not promised: such answers are not guessed at, their calls go live.
    server = judge_env
    server.batch_endpoints.gemini_echo_metadata = False
    server.batch_endpoints.gemini_reversed = True
    live = RUNS.eval(tmp_path, "live.db")
    with caplog.at_level(logging.WARNING):
        batched = RUNS.eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1
    assert len(server.requests) == 2 * len(ROWS)  # the live run's, then each made live
    assert scores(batched) == scores(live)
    assert f"{len(ROWS)} responses of batch batches/" in caplog.text
    assert "carry no key; their calls are made live" in caplog.text


def test_a_run_killed_after_submitting_collects_its_batch_on_resume(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    server = judge_env
    RUNS.kill_after_submitting(tmp_path, server, lambda: _open_batches(tmp_path / "batch.db"))
    (keys,) = _open_batches(tmp_path / "batch.db").values()
    assert len(keys) == len(ROWS)
    assert server.batch_requests == 0  # held: nothing answered yet
    resumed = RUNS.resume_collecting(tmp_path, server)
    assert statuses(resumed) == STATUSES
    assert _open_batches(tmp_path / "batch.db") == {}


def test_a_dry_run_with_judge_batch_calls_nothing(tmp_path: Path, judge_env: JudgeServer) -> None:
    out = tmp_path / "estimate.json"
    result = runner.invoke(app, RUNS.args(tmp_path, "dry.db", out, "--judge-batch", "--dry-run"))
    assert result.exit_code == 0, result.output
    assert "dry run: nothing was called" in result.output
    estimate = json.loads(out.read_text(encoding="utf-8"))
    assert estimate["judge"]["calls"] == len(ROWS)
    assert judge_env.batch_submissions == 0
    assert judge_env.batch_requests == 0
    assert judge_env.requests == []
    assert _open_batches(tmp_path / "dry.db") == {}


def test_a_vertex_ai_judge_stays_live_and_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "a-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    backend = GeminiBackend(MODEL, base_url="http://127.0.0.1:9/", api_key="k", timeout_s=5)
    assert backend.batch_unavailable == VERTEX_BATCH_UNAVAILABLE
    pool = JudgePool(batch=True)
    with caplog.at_level(logging.WARNING, logger="assay.judges.client"):
        assert pool._batcher_for(backend) is None
    (record,) = [r for r in caplog.records if r.name == "assay.judges.client"]
    assert record.getMessage() == (
        f"judge gemini:{MODEL} is served by Vertex AI, whose batch prediction reads and"
        " writes Cloud Storage or BigQuery, which assay does not use; its calls are made live"
    )


async def test_a_batch_the_api_ends_failed_makes_every_call_live(
    judge_env: JudgeServer, caplog: pytest.LogCaptureFixture
) -> None:
    backend = GeminiBackend(MODEL, base_url=judge_env.base_url, timeout_s=5)
    try:
        body = backend.batch_request([{"role": "user", "content": "Six."}], GenerationSettings())
        batch_id = await backend.submit_batch({"k1": body})
        judge_env.batch_endpoints.gemini_fail_batches = "quota exhausted"
        with caplog.at_level(logging.WARNING):
            outcomes = await backend.collect_batch(batch_id)
    finally:
        await backend.aclose()
    assert outcomes == {}  # nothing answered: the queue makes the call live
    assert f"batch {batch_id} ended JOB_STATE_FAILED" in caplog.text


async def test_a_batch_still_running_is_none_and_an_unknown_one_an_error(
    judge_env: JudgeServer,
) -> None:
    backend = GeminiBackend(MODEL, base_url=judge_env.base_url, timeout_s=5)
    judge_env.hold_batches()
    try:
        body = backend.batch_request([{"role": "user", "content": "Six."}], GenerationSettings())
        batch_id = await backend.submit_batch({"k1": body})
        assert await backend.collect_batch(batch_id) is None
        with pytest.raises(ModelCallError) as info:
            await backend.collect_batch("batches/no-such-batch")
        # a ledger row that is no Gemini batch name (the SDK would raise ValueError)
        with pytest.raises(ModelCallError) as not_a_batch:
            await backend.collect_batch("operations/7")
    finally:
        await backend.aclose()
    assert info.value.status == 404
    assert not info.value.retryable
    assert "'operations/7' is not a Gemini API batch" in str(not_a_batch.value)
    assert not not_a_batch.value.retryable


def test_a_batch_too_large_to_inline_goes_as_a_file_with_the_same_verdicts(
    tmp_path: Path, judge_env: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = judge_env
    live = RUNS.eval(tmp_path, "live.db")
    live_requests = server.requests
    monkeypatch.setattr(gemini_backend, "INLINE_BATCH_BYTES", 0)  # every batch is "large"
    batched = RUNS.eval(tmp_path, "batch.db", "--judge-batch")
    assert server.batch_submissions == 1
    assert server.batch_endpoints.gemini_file_batches == 1
    assert server.batch_requests == len(ROWS)
    assert len(server.requests) == len(ROWS)  # no live call in the batch run
    assert scores(batched) == scores(live)
    # Each line of the uploaded file holds the body a live call sends.
    live_bodies = sorted(json.dumps(r.body, sort_keys=True) for r in live_requests)
    batch_bodies = sorted(json.dumps(r.body, sort_keys=True) for r in server.batch_log)
    assert batch_bodies == live_bodies


def test_a_responses_file_is_read_by_key_and_its_bad_lines_are_left_to_live_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reply = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "yes"}]}}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1},
        "aFieldOfALaterApiVersion": True,
    }
    lines = [
        {"key": "b", "response": reply},
        "not json",
        {"response": reply},  # no key: never matched by position
        {"key": "c", "error": {"code": 13, "message": "internal"}},
        {"key": "d", "response": {"candidates": "not a list"}},
        {"key": "a", "response": reply},
        {"key": "a", "response": reply},  # a key answered twice: neither is trusted
    ]
    data = b"\n".join(
        (line if isinstance(line, str) else json.dumps(line)).encode() for line in lines
    )
    backend = GeminiBackend(MODEL, base_url="http://127.0.0.1:9/", timeout_s=5)
    outcomes = backend._outcomes("batches/x", gemini_backend._file_items(data))
    assert set(outcomes) == {"a", "b", "c", "d"}
    b = outcomes["b"]
    assert not isinstance(b, ModelCallError)
    assert (b.text, b.input_tokens, b.output_tokens) == ("yes", 3, 1)
    assert str(outcomes["c"]).endswith("batch batches/x failed this request (code 13): internal")
    assert "an unreadable response" in str(outcomes["d"])
    assert "answered this request twice" in str(outcomes["a"])
    assert "2 responses of batch batches/x carry no key" in caplog.text  # "not json" too


def test_the_cases_of_a_recorded_run_share_one_gemini_batch(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    judge_env.set_script(verdict)
    judge_env.batch_endpoints.gemini_reversed = True
    document = RUNS.hundred_cases_batched(tmp_path)  # all in one batch
    assert judge_env.batch_submissions == 1
    assert judge_env.batch_requests == 100
    assert judge_env.requests == []
    assert document["summary"]["judge/calls"] == 100


async def test_a_reply_the_sdk_cannot_read_is_a_retryable_error_not_a_crash(
    judge_env: JudgeServer,
) -> None:
    # The SDK's enums call .upper() on what the server sent: a list raised AttributeError
    # out of the live call (and out of a batch's collection, whose waiters then hung).
    body = {"candidates": [{"content": {"parts": [{"text": "yes"}]}, "finishReason": ["STOP"]}]}
    judge_env.set_script(StandinReply(raw_body=json.dumps(body)))
    backend = GeminiBackend(MODEL, base_url=judge_env.base_url, timeout_s=5)
    try:
        with pytest.raises(ModelCallError) as info:
            await backend.complete([{"role": "user", "content": "Six."}], GenerationSettings())
    finally:
        await backend.aclose()
    assert info.value.retryable
    assert "not a valid response (AttributeError" in str(info.value)
    line = {"key": "k", "response": body}
    outcomes = backend._outcomes("batches/x", gemini_backend._file_items(json.dumps(line).encode()))
    assert "line 1: an unreadable response" in str(outcomes["k"])


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"batch": {}}',
        b'{"batch": {"inputConfig": {"requests": {"requests": []}}}}',
        b'{"batch": {"inputConfig": {"requests": {"requests": [["a list"]]}}}}',
        b'{"batch": {"inputConfig": {"fileName": "files/never-uploaded"}}}',
    ],
)
def test_the_stand_in_answers_a_malformed_batch_400_in_gemini_s_error_shape(
    judge_env: JudgeServer, body: bytes
) -> None:
    url = f"{judge_env.base_url}/v1beta/models/{MODEL}:batchGenerateContent"
    answer = httpx.post(url, content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400
    assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert judge_env.batch_submissions == 0


def test_evaluate_batches_a_gemini_judge(tmp_path: Path, judge_env: JudgeServer) -> None:
    import assay

    result = assay.evaluate(
        str(write_rows(tmp_path, ROWS)),
        metrics=["correctness"],
        format="mlflow",
        judge=JUDGE,
        judge_batch=True,
    )
    assert judge_env.batch_submissions == 1
    assert judge_env.batch_requests == len(ROWS)
    assert judge_env.requests == []
    assert result.summary["judge/calls"] == len(ROWS)


async def test_a_judge_whose_batch_comes_back_without_keys_stops_batching(
    judge_env: JudgeServer,
) -> None:
    # Each later batch would be paid twice (batched, then live): it is not submitted.
    judge_env.batch_endpoints.gemini_echo_metadata = False
    backend = GeminiBackend(MODEL, base_url=judge_env.base_url, timeout_s=5)
    try:
        body = backend.batch_request([{"role": "user", "content": "Six."}], GenerationSettings())
        first = await backend.submit_batch({"k1": body, "k2": body})
        assert await backend.collect_batch(first) == {}
        with pytest.raises(ModelCallError) as info:
            await backend.submit_batch({"k3": body})
    finally:
        await backend.aclose()
    assert judge_env.batch_submissions == 1
    assert not info.value.retryable
    assert "answered a batch without its requests' keys" in str(info.value)
    assert backend.batch_unavailable == gemini_backend.UNKEYED_BATCHES


async def test_no_answer_is_ever_given_to_another_call(judge_env: JudgeServer) -> None:
    # Rounds of batches with random failures, orders, metadata echo and inline or file
    # transport: every outcome is its own request's answer, or an error (made live).
    rng = random.Random(38)

    def echo(request: StandinRequest) -> StandinReply:
        if "fail" in request.user:
            return StandinReply.server_error(message="lost")
        return StandinReply(json.dumps({"echo": request.user}))

    judge_env.set_script(echo)
    for _ in range(12):
        endpoints = judge_env.batch_endpoints
        endpoints.gemini_reversed = rng.random() < 0.5
        endpoints.gemini_echo_metadata = rng.random() < 0.8
        backend = GeminiBackend(MODEL, base_url=judge_env.base_url, timeout_s=5)
        backend.inline_batch_bytes = rng.choice([0, gemini_backend.INLINE_BATCH_BYTES])
        prompts = {
            f"key-{i}": f"question {i}" + (" fail" if rng.random() < 0.2 else "")
            for i in range(rng.randint(1, 25))
        }
        requests = {
            key: backend.batch_request([{"role": "user", "content": text}], GenerationSettings())
            for key, text in prompts.items()
        }
        try:
            outcomes = await backend.collect_batch(await backend.submit_batch(requests))
        finally:
            await backend.aclose()
        assert outcomes is not None
        for key, outcome in outcomes.items():
            if isinstance(outcome, ModelCallError):
                assert "fail" in prompts[key] or not endpoints.gemini_echo_metadata
            else:
                assert json.loads(outcome.text) == {"echo": prompts[key]}
        answered = {k for k, o in outcomes.items() if not isinstance(o, ModelCallError)}
        keyed = endpoints.gemini_echo_metadata or backend.inline_batch_bytes == 0
        expected = {k for k, text in prompts.items() if "fail" not in text} if keyed else set()
        assert answered == expected
