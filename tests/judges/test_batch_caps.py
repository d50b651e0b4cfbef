"""Judge caps with `--judge-batch`, and batch prices (issue #38, items 2 and 3).

Every scenario drives the real SDKs (openai, anthropic) against the stand-in's batch
endpoints on 127.0.0.1 (``/files`` + ``/batches``, Message Batches), mostly through
`assay eval` with a SQLite store on disk, and checks from the stand-in's own counters
how many requests went into batches and how many were made live: a capped batch run
sends exactly the admitted calls, priced at the batch price; a resume with a higher cap
sends only the missing ones; a failed batch item is made live within the cap; the dry
run's batch-priced estimate is what the run then costs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_runs import failing_once_on, kill_once, open_batches
from click.testing import Result

from assay.judges.client import JudgePool
from assay.judges.types import JudgeCallError
from assay.models.cost import BUDGET_REACHED, CallMeter, reply_for_schema
from assay.models.pricing import ModelPrice
from assay.store import Store
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest
from standin_judge import (
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    arithmetic_rows,
    eval_args,
    eval_report,
    schema_reply,
    standin_judge,
    write_rows,
)

JUDGE = "openai:gpt-4o-mini"
METRICS = ("correctness", "guideline_adherence", "safety")  # 3 rows: 9 judge calls


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with standin_judge(monkeypatch, schema_reply, vendors=("openai", "anthropic")) as server:
        yield server


def _rows(tmp_path: Path) -> Path:
    return write_rows(tmp_path, arithmetic_rows(3))


def _eval(
    tmp_path: Path, *extra: str, metrics: tuple[str, ...] = METRICS
) -> tuple[Result, dict[str, Any]]:
    return eval_report(tmp_path, _rows(tmp_path), JUDGE, metrics, *extra)


def _prices(tmp_path: Path, model: str = "gpt-4o-mini", **entry: float) -> str:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {model: entry}}), encoding="utf-8")
    return str(path)


def _not_evaluated(report: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(case, metric) -> the explanation of every judged metric left without a score."""
    return {
        (case["eval_id"], m["metric_name"]): case["explanations"][m["metric_name"]]
        for case in report["cases"]
        for m in case["overall_eval_metric_results"]
        if m["score"] is None
    }


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_max_judge_calls_puts_exactly_n_calls_in_batches_and_a_higher_cap_sends_the_rest(
    tmp_path: Path, judge: JudgeServer, vendor: str
) -> None:
    model = "openai:gpt-4o-mini" if vendor == "openai" else "anthropic:claude-3-5-haiku"
    capped, report = _eval(tmp_path, "--judge", model, "--judge-batch", "--max-judge-calls", "4")
    assert capped.exit_code == 1, capped.output
    assert judge.batch_requests == 4 and judge.batch_submissions >= 1
    assert judge.requests == []  # nothing live
    summary = report["summary"]
    assert summary["judge/calls"] == 4 and summary["judge/batched_calls"] == 4
    assert summary["judge/refused"] == 9 - 4
    refused = _not_evaluated(report)
    assert len(refused) == 9 - 4
    assert all(reason.startswith(BUDGET_REACHED) for reason in refused.values()), refused
    resumed, report = _eval(tmp_path, "--judge", model, "--judge-batch", "--max-judge-calls", "100")
    assert resumed.exit_code == 0, resumed.output
    assert judge.batch_requests == 9  # only the 5 missing calls were sent
    assert judge.requests == []
    assert report["summary"]["judge/cache_hits"] == 4
    assert report["summary"]["judge/batched_calls"] == 5
    assert _not_evaluated(report) == {}


def test_max_judge_usd_with_batches_stops_within_one_calls_batch_price_of_the_cap(
    tmp_path: Path, judge: JudgeServer
) -> None:
    # The price file gives the batch price itself (else it is half the live price).
    prices = _prices(
        tmp_path,
        input_per_million=100.0,
        output_per_million=100.0,
        batch_input_per_million=30.0,
        batch_output_per_million=30.0,
    )
    one_call = (INPUT_TOKENS + OUTPUT_TOKENS) * 30.0 / 1e6
    cap = 3.5 * one_call
    args = ("--prices", prices, "--judge-batch")
    capped, report = _eval(tmp_path, *args, "--max-judge-usd", str(cap))
    assert capped.exit_code == 1, capped.output
    made = judge.batch_requests
    assert 0 < made < 9 and judge.requests == []
    summary = report["summary"]
    assert summary["judge/usd"] <= cap + one_call
    assert summary["judge/usd"] == pytest.approx(made * one_call)  # at the batch price
    assert summary["judge/batched_calls"] == made
    assert "judge budget reached" in capped.output
    assert f"{made:,} calls batched, at batch prices" in capped.output
    with Store.open(f"sqlite:///{tmp_path / 'assay.db'}") as db:
        stored = db.list_runs(limit=1)[0].summary
    assert stored["judge/usd"] == summary["judge/usd"] and stored["judge/max_usd"] == cap
    higher, report = _eval(tmp_path, *args, "--max-judge-usd", "1")
    assert higher.exit_code == 0, higher.output
    assert judge.batch_requests == 9 and judge.requests == []
    assert report["summary"]["judge/cache_hits"] == made
    assert report["summary"]["judge/usd"] == pytest.approx((9 - made) * one_call)


def test_a_failed_batch_item_is_made_live_at_the_live_price_within_the_cap(
    tmp_path: Path, judge: JudgeServer
) -> None:
    judge.set_script(failing_once_on("What is 1 plus 1?", schema_reply))
    prices = _prices(tmp_path, input_per_million=100.0, output_per_million=100.0)
    live_call = (INPUT_TOKENS + OUTPUT_TOKENS) * 100.0 / 1e6
    args = ("--prices", prices, "--judge-batch", "--max-judge-calls", "4")
    result, report = _eval(tmp_path, *args, metrics=("correctness",))
    assert result.exit_code == 0, result.output
    assert judge.batch_requests == 3
    assert len(judge.requests) == 1 and "What is 1 plus 1?" in judge.requests[0].prompt
    summary = report["summary"]
    # 3 batched (the failed one billed nothing), its live retry admitted as a 4th call
    assert summary["judge/calls"] == 4 and summary["judge/batched_calls"] == 3
    assert summary["judge/usd"] == pytest.approx(2 * live_call / 2 + live_call)
    assert _not_evaluated(report) == {}


def test_a_failed_batch_item_whose_live_retry_passes_the_cap_is_not_evaluated(
    tmp_path: Path, judge: JudgeServer
) -> None:
    judge.set_script(failing_once_on("What is 1 plus 1?", schema_reply))
    args = ("--judge-batch", "--max-judge-calls", "3")
    result, report = _eval(tmp_path, *args, metrics=("correctness",))
    assert result.exit_code == 1, result.output
    assert judge.batch_requests == 3 and judge.requests == []  # the retry was not made
    assert report["summary"]["judge/refused"] == 1
    (reason,) = _not_evaluated(report).values()
    assert reason.startswith(BUDGET_REACHED) and "--max-judge-calls" in reason


def test_the_dry_run_with_judge_batch_is_priced_at_batch_prices_as_the_run_then_is(
    tmp_path: Path, judge: JudgeServer
) -> None:
    # Output tokens alone are priced, and the stand-in reports the output tokens the
    # estimate assumes (the call's max_tokens, else 256): the numbers are exact.
    def as_estimated(request: StandinRequest) -> StandinReply:
        reply = reply_for_schema(request.json_schema)
        return StandinReply(reply, input_tokens=123, output_tokens=request.max_tokens or 256)

    judge.set_script(as_estimated)
    prices = _prices(tmp_path, input_per_million=0.0, output_per_million=1000.0)
    metrics = ("correctness", "final_response_match_v2", "safety_v1", "hallucinations_v1")
    args = ("--prices", prices, "--judge-batch")
    dry, estimate = _eval(tmp_path, *args, "--dry-run", metrics=metrics)
    assert dry.exit_code == 0, dry.output
    assert judge.requests == [] and judge.batch_submissions == 0  # nothing was called
    calls = estimate["judge"]["calls"]
    assert calls > 0 and estimate["judge"]["batched_calls"] == calls
    assert "judge calls priced at batch prices" in dry.output
    live_dry, live_estimate = _eval(tmp_path, "--prices", prices, "--dry-run", metrics=metrics)
    assert live_dry.exit_code == 0, live_dry.output
    assert "priced at batch prices" not in live_dry.output
    assert live_estimate["judge"]["batched_calls"] == 0
    assert estimate["judge"]["usd"] == pytest.approx(live_estimate["judge"]["usd"] / 2)
    real, report = _eval(tmp_path, *args, metrics=metrics)
    assert real.exit_code in (0, 1), real.output
    assert judge.batch_requests == calls and judge.requests == []
    summary = report["summary"]
    assert summary["judge/batched_calls"] == calls
    assert summary["judge/usd"] == pytest.approx(estimate["judge"]["usd"])
    assert summary["judge/usd_estimated"] == pytest.approx(estimate["judge"]["usd"])


def test_a_waiting_admission_does_not_keep_the_batch_window_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 2nd and 3rd calls wait for the 1st to be paid for, and the 1st is in a batch
    that waits for its window to close: the window closes, each call gets its batch."""
    # $1 an output token: a call of max_tokens 10 is estimated at $5 batched; the
    # stand-in reports 1 output token ($0.50), so each call fits once the last is paid.
    prices = {"stand-in": ModelPrice(input_per_million=0.0, output_per_million=1e6)}
    with standin_judge(monkeypatch, StandinReply("yes", input_tokens=0, output_tokens=1)) as server:

        async def go() -> list[list[str]]:
            meter = CallMeter(prices, max_usd=7.5)
            pool = JudgePool(batch=True, meter=meter, default_model="openai:stand-in")
            judge = pool.judge("openai:stand-in")
            try:
                asks = [
                    judge.generate([{"role": "user", "content": f"q{i}"}], 1, {"max_tokens": 10})
                    for i in range(3)
                ]
                # a guard against a hang, not a timing assertion
                return await asyncio.wait_for(asyncio.gather(*asks), timeout=120)
            finally:
                await pool.aclose()

        replies = asyncio.run(go())
        assert replies == [["yes"]] * 3
        assert server.batch_submissions == 3 and server.batch_requests == 3  # one at a time
        assert server.requests == []


def test_a_batched_call_that_cannot_fit_once_the_batch_is_paid_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prices = {"stand-in": ModelPrice(input_per_million=0.0, output_per_million=1e6)}
    ten_tokens = StandinReply("yes", input_tokens=0, output_tokens=10)
    with standin_judge(monkeypatch, ten_tokens) as server:

        async def go() -> list[list[str] | BaseException]:
            pool = JudgePool(
                batch=True, meter=CallMeter(prices, max_usd=7.5), default_model="openai:stand-in"
            )
            judge = pool.judge("openai:stand-in")
            try:
                asks = [
                    judge.generate([{"role": "user", "content": f"q{i}"}], 1, {"max_tokens": 10})
                    for i in range(2)
                ]
                return await asyncio.wait_for(
                    asyncio.gather(*asks, return_exceptions=True), timeout=120
                )
            finally:
                await pool.aclose()

        first, second = asyncio.run(go())
        assert first == ["yes"]  # $5 at the batch price: the second ($5 more) cannot fit
        assert isinstance(second, JudgeCallError) and BUDGET_REACHED in str(second)
        assert server.batch_requests == 1 and server.requests == []


def _open_batches(path: Path, server: JudgeServer) -> dict[str, list[str]]:
    """The batches of the run's judge recorded in the store at `path`, not collected."""
    endpoint = server.openai_base_url + "/"
    return open_batches(path, backend="openai", endpoint=endpoint, model="gpt-4o-mini")


def test_a_capped_run_killed_after_submitting_collects_its_batch_outside_the_new_cap(
    tmp_path: Path, judge: JudgeServer
) -> None:
    judge.hold_batches()
    first_out = tmp_path / "killed.json"
    store = tmp_path / "assay.db"
    args = eval_args(_rows(tmp_path), JUDGE, store, first_out, ["correctness"],
                     "--judge-batch", "--max-judge-calls", "3")  # fmt: skip
    # every call of the run in a recorded batch (one or more, as the window closed)
    kill_once(args, tmp_path, lambda: sum(map(len, _open_batches(store, judge).values())) >= 3)
    submitted = judge.batch_submissions
    assert submitted >= 1
    judge.release_batches()
    # The 3 calls of the batch were admitted by the killed run's cap: collected (paid
    # once, never sent again), counted in this run's cost, outside this run's cap of 1.
    resumed, report = _eval(
        tmp_path, "--judge-batch", "--max-judge-calls", "1", metrics=("correctness",)
    )
    assert resumed.exit_code == 0, resumed.output
    assert judge.batch_submissions == submitted and judge.batch_requests == 3
    assert judge.requests == []
    summary = report["summary"]
    assert summary["judge/batched_calls"] == 3 and summary["judge/refused"] == 0
    assert _not_evaluated(report) == {}
    assert _open_batches(tmp_path / "assay.db", judge) == {}


def test_evaluate_takes_judge_batch_with_a_usd_cap_and_a_dry_run(
    tmp_path: Path, judge: JudgeServer
) -> None:
    import assay

    prices = _prices(tmp_path, input_per_million=100.0, output_per_million=100.0)
    one_call = (INPUT_TOKENS + OUTPUT_TOKENS) * 100.0 / 1e6 / 2  # at the batch price
    kwargs: dict[str, Any] = {
        "format": "mlflow",
        "judge": JUDGE,
        "judge_batch": True,
        "prices": prices,
        "store": f"sqlite:///{tmp_path / 'assay.db'}",
    }
    rows = str(_rows(tmp_path))
    estimate = assay.evaluate(rows, list(METRICS), dry_run=True, **kwargs)
    assert estimate.summary["judge/batched_calls"] == estimate.summary["judge/calls"] == 9
    cap = 2.5 * one_call
    result = assay.evaluate(rows, list(METRICS), max_judge_usd=cap, **kwargs)
    summary = result.summary
    assert 0 < judge.batch_requests < 9 and judge.requests == []
    assert summary["judge/usd"] <= cap + one_call
    assert summary["judge/usd"] == pytest.approx(judge.batch_requests * one_call)
    assert summary["judge/batched_calls"] == judge.batch_requests


@pytest.mark.parametrize("batched", [False, True])
def test_cached_input_tokens_are_priced_at_the_cached_price(
    tmp_path: Path, judge: JudgeServer, batched: bool
) -> None:
    def cached(request: StandinRequest) -> StandinReply:  # 200 of the 300 input tokens
        reply = reply_for_schema(request.json_schema)
        return StandinReply(reply, input_tokens=300, output_tokens=40, cached_tokens=200)

    judge.set_script(cached)
    prices = _prices(
        tmp_path, input_per_million=100.0, output_per_million=1000.0, cached_input_per_million=10.0
    )
    extra = ("--judge-batch",) if batched else ()
    result, report = _eval(tmp_path, "--prices", prices, *extra, metrics=("correctness",))
    assert result.exit_code == 0, result.output
    # batched: input and output at half, the cached tokens at min(cached, batch input)
    inp, out = (50.0, 500.0) if batched else (100.0, 1000.0)
    one_call = (100 * inp + 200 * 10.0 + 40 * out) / 1e6
    summary = report["summary"]
    line = "judge/cost/correctness/openai:gpt-4o-mini"
    assert summary[f"{line}/cached_tokens"] == 3 * 200
    assert summary[f"{line}/input_tokens"] == 3 * 300
    assert summary["judge/usd"] == pytest.approx(3 * one_call)
    assert summary["judge/batched_calls"] == (3 if batched else 0)
