"""Budgets: max_latency, max_tokens, max_cost (with the shipped and user price tables)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.core.cases import EvalCase, Turn, Usage
from assay.core.results import MetricResult, Status
from assay.errors import ConfigError
from assay.metrics.budgets import find_price, shipped_prices
from assay.metrics.registry import build_metric


def _run(name: str, criterion: object, *turns: Turn, **case: object) -> MetricResult:
    metric = build_metric(name, criterion)  # type: ignore[arg-type]
    return metric.score_case(EvalCase(id="c", **case), list(turns), [None] * len(turns))  # type: ignore[arg-type]


def test_max_latency_per_invocation_and_per_case() -> None:
    fast, slow = Turn(latency_s=0.4), Turn(latency_s=2.5)
    result = _run("max_latency", {"seconds": 1}, fast, slow)
    assert [s.value for s in result.per_invocation] == [1.0, 0.0]
    assert result.score == 0.5 and result.status == Status.FAILED
    assert result.per_invocation[1].explanation == "used 2.5 s, over the budget of 1 s"
    whole = _run("max_latency", {"seconds": 3, "per": "case"}, fast, slow)
    assert whole.score == 1.0
    assert whole.explanation == "the case's 2 turn(s) used 2.9 s, within the budget of 3 s"
    unknown = _run("max_latency", {"seconds": 1}, Turn())
    assert unknown.status == Status.NOT_EVALUATED
    assert unknown.explanation == "no latency recorded for this invocation"
    case_unknown = _run("max_latency", {"seconds": 1, "per": "case"}, fast, Turn())
    assert case_unknown.score is None
    assert case_unknown.explanation == "turn 2: no latency recorded for this invocation"


def test_max_tokens_counts_total_input_or_output() -> None:
    turn = Turn(usage=Usage(input_tokens=900, output_tokens=200))
    assert _run("max_tokens", {"tokens": 1000}, turn).score == 0.0
    assert _run("max_tokens", {"tokens": 1000, "count": "input"}, turn).score == 1.0
    assert _run("max_tokens", {"tokens": 100, "count": "output"}, turn).score == 0.0
    assert _run("max_tokens", {"tokens": 10}, Turn()).status == Status.NOT_EVALUATED


def test_max_cost_uses_the_shipped_table() -> None:
    price = shipped_prices()["gpt-4o-mini"]
    turn = Turn(usage=Usage(input_tokens=1_000_000, output_tokens=100_000))
    expected = price.input_per_million + price.output_per_million / 10
    result = _run("max_cost", {"usd": 1.0, "model": "openai:gpt-4o-mini"}, turn)
    assert result.per_invocation[0].details == {"used": pytest.approx(expected)}
    assert result.score == 1.0
    assert _run("max_cost", {"usd": expected / 2, "model": "gpt-4o-mini"}, turn).score == 0.0
    # The case's recorded model is used when the criterion names none.
    assert _run("max_cost", {"usd": 1.0}, turn, metadata={"model": "gpt-4o-mini"}).score == 1.0


def test_unknown_or_missing_model_is_not_evaluated_never_free() -> None:
    turn = Turn(usage=Usage(input_tokens=10, output_tokens=10))
    unknown = _run("max_cost", {"usd": 1.0, "model": "my-private-llm"}, turn)
    assert unknown.score is None and unknown.status == Status.NOT_EVALUATED
    assert unknown.explanation is not None
    assert "no price known for model 'my-private-llm'" in unknown.explanation
    nameless = _run("max_cost", {"usd": 1.0}, turn)
    assert nameless.explanation == 'no model to price: give max_cost a "model" option'


def test_inline_prices_and_prices_file_override_the_table(tmp_path: Path) -> None:
    turn = Turn(usage=Usage(input_tokens=1_000_000, output_tokens=0))
    inline = {"usd": 5, "model": "mine", "prices": {"mine": {"input_per_million": 4,
                                                             "output_per_million": 8}}}  # fmt: skip
    assert _run("max_cost", inline, turn).per_invocation[0].details == {"used": 4.0}
    path = tmp_path / "prices.json"
    table = {"models": {"gpt-4o": {"input_per_million": 100, "output_per_million": 1}}}
    path.write_text(json.dumps(table), "utf-8")
    from_file = _run("max_cost", {"usd": 50, "model": "gpt-4o", "prices_file": str(path)}, turn)
    assert from_file.score == 0.0 and from_file.per_invocation[0].details == {"used": 100.0}


def test_dated_and_prefixed_model_names_find_their_price() -> None:
    table = shipped_prices()
    assert find_price("gpt-4o-2024-08-06", table) is table["gpt-4o"]
    assert find_price("gpt-4o-mini-2024-07-18", table) is table["gpt-4o-mini"]
    assert find_price("models/gemini-2.5-flash", table) is table["gemini-2.5-flash"]
    assert find_price("gpt-4", table) is None


@pytest.mark.parametrize(
    ("criterion", "fragment"),
    [
        ({}, "seconds: Field required"),
        ({"seconds": 0}, "seconds: Input should be greater than 0"),
        ({"seconds": 1, "per": "run"}, "per: Input should be 'invocation' or 'case'"),
    ],
)
def test_bad_latency_options(criterion: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match="max_latency") as err:
        build_metric("max_latency", criterion)
    assert fragment in str(err.value)


def test_bad_price_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"max_cost.*cannot read prices file"):
        build_metric("max_cost", {"usd": 1, "prices_file": str(tmp_path / "missing.json")})
    bad = tmp_path / "bad.json"
    bad.write_text('{"models": {"x": {"input_per_million": -1, "output_per_million": 1}}}', "utf-8")
    with pytest.raises(ConfigError, match=r"models\.x\.input_per_million"):
        build_metric("max_cost", {"usd": 1, "prices_file": str(bad)})
