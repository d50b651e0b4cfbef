"""`CallMeter`: counting, pricing and capping model calls (issue #38)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.models.cache import MemoryReplyCache
from assay.models.cost import (
    BUDGET_REACHED,
    Admission,
    CallMeter,
    ReadOnlyCache,
    charged_to,
    reply_for_schema,
)
from assay.models.pricing import (
    ModelPrice,
    estimate_tokens,
    find_price,
    price_table,
    prompt_tokens,
    read_price_file,
    token_counter,
)
from assay.models.types import BackendReply, GenerationSettings

PRICES = {"m": ModelPrice(input_per_million=1_000_000.0, output_per_million=0.0)}
PROMPT = [{"role": "user", "content": "x" * 40}]  # 10 tokens + 4 for the message
SETTINGS = GenerationSettings(max_tokens=1)


def test_the_estimate_counts_characters_and_messages() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1 and estimate_tokens("abcde") == 2
    if token_counter()[0].startswith("estimate"):
        assert prompt_tokens(PROMPT) == 40 // 4 + 4
    else:  # tiktoken with its encoding at hand
        assert 4 < prompt_tokens(PROMPT) <= 40 + 4


def test_the_shipped_table_prices_dated_and_prefixed_names() -> None:
    table = price_table()
    assert find_price("openai:gpt-4o-2024-08-06", table) == table["gpt-4o"]
    assert find_price("openai:no-such-model", table) is None
    assert table["gpt-4o-mini"].usd(1_000_000, 1_000_000) == pytest.approx(0.15 + 0.6)


def _admit(meter: CallMeter) -> Admission | str:
    return asyncio.run(meter.admit("m", PROMPT, SETTINGS))


def test_calls_are_charged_to_the_metric_in_context() -> None:
    meter = CallMeter(PRICES)

    async def go() -> None:
        with charged_to("correctness"):
            admitted = await meter.admit("m", PROMPT, SETTINGS)
            assert isinstance(admitted, Admission)
            meter.settle(admitted, BackendReply("ok", 3, 1))
            meter.record_cache_hits("m", 2)

    asyncio.run(go())
    line = meter.lines[("correctness", "m")]
    assert (line.calls, line.cache_hits, line.input_tokens, line.output_tokens) == (1, 2, 3, 1)
    assert line.usd == pytest.approx(3.0)
    summary = meter.summary()
    assert summary["judge/usd"] == pytest.approx(3.0)
    assert summary["judge/cost/correctness/m/calls"] == 1


def test_max_calls_refuses_the_call_past_the_cap() -> None:
    meter = CallMeter(PRICES, max_calls=2)
    first, second = _admit(meter), _admit(meter)
    assert isinstance(first, Admission) and isinstance(second, Admission)
    third = _admit(meter)
    assert isinstance(third, str) and third.startswith(BUDGET_REACHED)
    assert meter.summary()["judge/refused"] == 1


def test_calls_in_flight_count_against_the_usd_cap_and_a_call_waits_for_them() -> None:
    async def go(actual_tokens: int) -> tuple[Admission | str, float]:
        meter = CallMeter(PRICES, max_usd=20.0)
        first = await meter.admit("m", PROMPT, SETTINGS)  # estimated at its prompt's tokens
        assert isinstance(first, Admission)
        estimate = first.usd
        assert 10.0 < estimate <= 20.0  # a second one at the estimate would pass the cap
        second = asyncio.ensure_future(meter.admit("m", PROMPT, SETTINGS))
        await asyncio.sleep(0)
        assert not second.done()  # waits: the first may cost less than its estimate
        meter.settle(first, BackendReply("ok", actual_tokens, 0))
        return await second, meter.spent_usd

    cheap, spent = asyncio.run(go(actual_tokens=2))
    assert isinstance(cheap, Admission) and spent == pytest.approx(2.0)
    dear, spent = asyncio.run(go(actual_tokens=15))
    assert isinstance(dear, str) and dear.startswith(BUDGET_REACHED)
    assert spent == pytest.approx(15.0)


def test_a_usd_cap_refuses_a_model_without_a_price() -> None:
    meter = CallMeter({}, max_usd=1.0)
    refused = asyncio.run(meter.admit("unknown", PROMPT, SETTINGS))
    assert isinstance(refused, str) and "has no price in the price table" in refused
    uncapped = CallMeter({})
    assert isinstance(asyncio.run(uncapped.admit("unknown", PROMPT, SETTINGS)), Admission)
    assert uncapped.summary()["judge/unpriced_models"] == ["unknown"]


def test_a_failed_call_is_counted_and_charged_nothing() -> None:
    meter = CallMeter(PRICES, max_usd=100.0)
    admitted = _admit(meter)
    assert isinstance(admitted, Admission)
    meter.settle(admitted, None)
    assert meter.spent_usd == 0 and meter.totals().calls == 1


@pytest.mark.parametrize(
    ("schema", "reply"),
    [
        (None, {"verdict": "yes", "reasoning": "dry run"}),
        ({"type": "string", "enum": ["valid", "invalid"]}, "valid"),
        (
            {
                "type": "object",
                "properties": {
                    "score": {"type": "integer", "minimum": 1},
                    "items": {"type": "array", "items": {"type": "boolean"}},
                    "why": {"type": ["string", "null"]},
                },
            },
            {"score": 1, "items": [True], "why": "dry run"},
        ),
    ],
)
def test_a_dry_run_reply_fits_the_schema(schema: dict | None, reply: object) -> None:
    assert json.loads(reply_for_schema(schema)) == reply


def test_the_read_only_cache_reads_through_and_keeps_writes_to_itself() -> None:
    inner = MemoryReplyCache()
    inner.put("a", backend="b", model="m", reply="old")
    cache = ReadOnlyCache(inner)
    cache.put("b", backend="b", model="m", reply="new")
    assert cache.get_many(["a", "b"]) == {"a": "old", "b": "new"}
    assert inner.get_many(["b"]) == {}


def test_a_shared_meter_reports_each_runs_own_cost() -> None:
    meter = CallMeter(PRICES)

    def one_call() -> None:
        admitted = _admit(meter)
        assert isinstance(admitted, Admission)
        meter.settle(admitted, BackendReply("ok", 2, 0))

    one_call()
    started = meter.snapshot()
    one_call()
    one_call()
    run = meter.summary(since=started)
    assert run["judge/usd"] == pytest.approx(4.0)
    assert run["judge/cost/(other)/m/calls"] == 2
    assert meter.summary()["judge/cost/(other)/m/calls"] == 3


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-1", '"free"'])
def test_a_price_that_is_not_a_finite_non_negative_number_names_its_field(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        f'{{"models": {{"m": {{"input_per_million": {value}, "output_per_million": 1}}}}}}',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"models\.m\.input_per_million"):
        read_price_file(str(path))


def test_tokens_are_never_counted_by_downloading_an_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    from assay.models import pricing

    def no_download(name: str) -> object:
        raise AssertionError(f"tiktoken was asked to fetch {name}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache
    monkeypatch.setattr(tiktoken, "get_encoding", no_download)
    pricing._tiktoken_encoder.cache_clear()
    try:
        assert pricing.token_counter()[0].startswith("estimate")
    finally:
        pricing._tiktoken_encoder.cache_clear()


def test_a_batched_call_costs_half_the_live_price_unless_the_table_gives_its_own() -> None:
    halved = ModelPrice(input_per_million=2.0, output_per_million=8.0)
    assert halved.usd(1_000_000, 1_000_000, batch=True) == pytest.approx((2.0 + 8.0) / 2)
    own = ModelPrice(
        input_per_million=2.0,
        output_per_million=8.0,
        batch_input_per_million=1.5,
        batch_output_per_million=3.0,
    )
    assert own.usd(1_000_000, 1_000_000, batch=True) == pytest.approx(1.5 + 3.0)
    assert own.usd(1_000_000, 1_000_000) == pytest.approx(2.0 + 8.0)  # live: the list price
    for model, price in price_table().items():  # the shipped table follows the rule
        assert price.usd(1000, 1000, batch=True) == pytest.approx(price.usd(1000, 1000) / 2), model


def test_cached_input_tokens_cost_the_cached_price_and_never_less_than_asked() -> None:
    price = ModelPrice(input_per_million=3.0, output_per_million=15.0, cached_input_per_million=0.3)
    # 1M input of which 400k read from the cache, no output
    assert price.usd(1_000_000, 0, cached_tokens=400_000) == pytest.approx(0.6 * 3.0 + 0.4 * 0.3)
    # batched: the cached tokens cost the lower of the cached and the batch input price
    assert price.usd(1_000_000, 0, cached_tokens=400_000, batch=True) == pytest.approx(
        0.6 * 1.5 + 0.4 * 0.3
    )
    no_cached_price = ModelPrice(input_per_million=3.0, output_per_million=15.0)
    assert no_cached_price.usd(1_000_000, 0, cached_tokens=400_000) == pytest.approx(3.0)
    # a reply claiming more cached tokens than input tokens is priced as all cached, no less
    assert price.usd(10, 0, cached_tokens=50) == pytest.approx(10 * 0.3 / 1e6)
    shipped = price_table()
    assert shipped["claude-sonnet-4"].cached_input_per_million == pytest.approx(
        shipped["claude-sonnet-4"].input_per_million / 10  # Anthropic: cache reads at 10%
    )


def test_a_prices_file_sets_batch_and_cached_prices_and_names_a_bad_one(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    entry = {
        "input_per_million": 2.0,
        "output_per_million": 8.0,
        "batch_input_per_million": 0.9,
        "batch_output_per_million": 3.9,
        "cached_input_per_million": 0.5,
    }
    path.write_text(json.dumps({"models": {"m": entry}}), encoding="utf-8")
    read = read_price_file(str(path))["m"]
    assert read.rates(batch=True) == (0.9, 3.9, 0.5)
    assert read.rates() == (2.0, 8.0, 0.5)
    for field in ("batch_input_per_million", "batch_output_per_million"):
        path.write_text(json.dumps({"models": {"m": {**entry, field: -1}}}), encoding="utf-8")
        with pytest.raises(ValueError, match=rf"models\.m\.{field}"):
            read_price_file(str(path))
    path.write_text(json.dumps({"models": {"m": {**entry, "batch_price": 1}}}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"models\.m\.batch_price"):
        read_price_file(str(path))


def test_a_batched_call_is_admitted_and_settled_at_the_batch_price() -> None:
    prices = {"m": ModelPrice(input_per_million=0.0, output_per_million=1_000_000.0)}
    settings = GenerationSettings(max_tokens=10)  # estimated at $10 live, $5 batched

    async def go() -> CallMeter:
        meter = CallMeter(prices, max_usd=12.0)
        with charged_to("correctness"):
            one = await meter.admit("m", PROMPT, settings, batched=True)
            two = await meter.admit("m", PROMPT, settings, batched=True)
            assert isinstance(one, Admission) and isinstance(two, Admission)
            assert one.batched and one.usd == pytest.approx(5.0)
            live = asyncio.ensure_future(meter.admit("m", PROMPT, settings))
            await asyncio.sleep(0)
            assert not live.done()  # 5 + 5 reserved: a live $10 call waits for them
            meter.settle(one, BackendReply("ok", 0, 2, cached_tokens=0))  # $1 at batch price
            meter.settle(two, None)  # failed in the batch: billed nothing
            admitted = await live
            assert isinstance(admitted, Admission) and not admitted.batched
            meter.settle(admitted, BackendReply("ok", 0, 1))  # $1 live
        return meter

    meter = asyncio.run(go())
    line = meter.lines[("correctness", "m")]
    assert (line.calls, line.batched_calls) == (3, 2)
    assert line.usd == pytest.approx(2.0) and line.estimated_usd == pytest.approx(20.0)
    summary = meter.summary()
    assert summary["judge/batched_calls"] == 2
    assert summary["judge/cost/correctness/m/batched_calls"] == 2


def test_a_call_already_in_a_batch_is_admitted_outside_the_cap() -> None:
    prices = {"m": ModelPrice(input_per_million=0.0, output_per_million=1_000_000.0)}
    settings = GenerationSettings(max_tokens=10)

    async def go() -> tuple[list[Admission | str], CallMeter]:
        meter = CallMeter(prices, max_usd=6.0, max_calls=1)
        got: list[Admission | str] = [await meter.admit("m", PROMPT, settings, batched=True)]
        for _ in range(2):  # two requests submitted before a crash: paid whatever happens
            got.append(await meter.admit("m", PROMPT, settings, batched=True, committed=True))
        for admission in got:
            assert isinstance(admission, Admission)
            meter.settle(admission, BackendReply("ok", 0, 4))  # $2 each at batch price
        got.append(await meter.admit("m", PROMPT, settings, batched=True))
        return got, meter

    got, meter = asyncio.run(go())
    assert all(isinstance(a, Admission) for a in got[:3])
    assert isinstance(got[3], str) and got[3].startswith(BUDGET_REACHED)  # the 1 call cap
    assert meter.spent_usd == pytest.approx(2.0)  # what this run's cap counts
    total = meter.totals()
    assert (total.calls, total.batched_calls) == (3, 3)
    assert total.usd == pytest.approx(6.0)  # what was paid, reported once


@settings(max_examples=60, deadline=None)
@given(
    calls=st.lists(
        st.tuples(st.booleans(), st.integers(0, 10), st.integers(1, 5)), min_size=1, max_size=25
    ),
    cap=st.floats(1.0, 60.0),
    max_calls=st.one_of(st.none(), st.integers(1, 20)),
    order=st.randoms(use_true_random=False),
)
def test_batched_and_live_calls_in_flight_never_take_the_spending_past_the_cap(
    calls: list[tuple[bool, int, int]],
    cap: float,
    max_calls: int | None,
    order: random.Random,
) -> None:
    """Calls (batched or live, each reporting at most its estimate) are admitted at once
    and settled in a random order, as batches and live calls return: the money spent
    never passes the cap, and no more calls than `max_calls` are let through."""
    prices = {"m": ModelPrice(input_per_million=0.0, output_per_million=1_000_000.0)}

    async def go() -> CallMeter:
        meter = CallMeter(prices, max_usd=cap, max_calls=max_calls)
        admitted: list[tuple[Admission, int]] = []

        async def one(batched: bool, used: int, most: int) -> None:
            chosen = GenerationSettings(max_tokens=most)
            got = await meter.admit("m", PROMPT, chosen, batched=batched)
            if isinstance(got, Admission):
                admitted.append((got, min(used, most)))

        tasks = [asyncio.ensure_future(one(*call)) for call in calls]
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0)
            if admitted:  # one call in flight returns, whichever
                admission, used = admitted.pop(order.randrange(len(admitted)))
                meter.settle(admission, BackendReply("ok", 0, used) if used else None)
                assert meter.spent_usd <= cap + 1e-9
        for admission, used in admitted:
            meter.settle(admission, BackendReply("ok", 0, used) if used else None)
        return meter

    meter = asyncio.run(go())
    assert meter.spent_usd <= cap + 1e-9
    total = meter.totals()
    assert total.calls + total.refused == len(calls)
    if max_calls is not None:
        assert total.calls <= max_calls
