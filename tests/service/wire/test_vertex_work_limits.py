"""Bounded work per request on Vertex `evaluateInstances` (issue #31), on a real `assay serve`.

Two 12,000-token texts under ROUGE-L took 29-34 s and 1.3 GiB with the full LCS table
(1.5 MB texts killed the server); now the LCS is linear in memory, a request is held to
tokens per instance and per request and to a CPU budget (400 naming the limit beyond),
and scoring runs in a bounded thread pool while the event loop serves other clients.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cli_serve import CliServe
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics.rouge import rouge
from assay.service.errors import InvalidArgument
from assay.service.settings import WORK_LIMITS, WorkLimits
from assay.service.wire.vertex import evaluate_instances

PATH = "/v1beta1/projects/p/locations/us-central1:evaluateInstances"
_VOCABULARY = [f"w{i}" for i in range(2_000)]


def _text(rng: random.Random, tokens: int, sep: str = " ") -> str:
    return sep.join(rng.choice(_VOCABULARY) for _ in range(tokens))


def _rouge_body(pairs: list[tuple[str, str]], kind: str = "rougeL") -> dict[str, Any]:
    instances = [{"prediction": p, "reference": r} for p, r in pairs]
    return {"rougeInput": {"metricSpec": {"rougeType": kind}, "instances": instances}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServe]:
    folder = tmp_path_factory.mktemp("work")
    serve = CliServe(f"sqlite:///{folder}/s.db", folder / "serve.log", "--no-auth", cwd=folder)
    yield serve
    serve.stop()


def test_12000_token_rouge_l_while_another_client_is_served(server: CliServe) -> None:
    rng = random.Random(31)
    pairs = [(_text(rng, 12_000), _text(rng, 12_000)) for _ in range(20)]
    before = server.peak_rss_bytes()
    big: dict[str, Any] = {}

    def send_big() -> None:
        started = time.monotonic()
        answer = httpx.post(server.base_url + PATH, json=_rouge_body(pairs), timeout=600)
        big.update(answer=answer, seconds=time.monotonic() - started, done=time.monotonic())

    small = _rouge_body([("the cat sat on the mat", "the cat sat")])
    latencies: list[tuple[float, float]] = []  # (finished at, seconds)
    sender = threading.Thread(target=send_big)
    sender.start()
    with httpx.Client(base_url=server.base_url, timeout=600) as other:
        while sender.is_alive() or not latencies:
            started = time.monotonic()
            answer = other.post(PATH, json=small)
            assert answer.status_code == 200, answer.text
            latencies.append((time.monotonic(), time.monotonic() - started))
    sender.join()
    answer = big["answer"]
    assert answer.status_code == 200, answer.text[:500]
    scores = [v["score"] for v in answer.json()["rougeResults"]["rougeMetricValues"]]
    assert scores == [rouge(r, p, "rougeL").fmeasure for p, r in pairs]
    # The other client got answers while the big request was being scored.
    during = [seconds for finished, seconds in latencies if finished < big["done"]]
    assert during, latencies
    grown = server.peak_rss_bytes() - before
    assert grown < 200 * 2**20, f"the server's peak RSS grew by {grown / 2**20:.0f} MiB"
    print(
        f"\nbig request: 20 instances of 2 x 12,000 tokens in {big['seconds']:.2f} s, "
        f"server peak RSS +{grown / 2**20:.1f} MiB; other client during it: "
        f"{len(during)} requests, median {sorted(during)[len(during) // 2] * 1000:.0f} ms, "
        f"max {max(during) * 1000:.0f} ms"
    )


def test_over_the_token_limits_is_400_naming_the_limit(server: CliServe) -> None:
    over = "a " * (WORK_LIMITS.max_tokens_per_instance + 1)
    answer = httpx.post(server.base_url + PATH, json=_rouge_body([("a b", over)]), timeout=60)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert "50,000 tokens" in error["message"], error
    assert "rouge_input.instances[0].reference" in answer.text
    # Punctuation counts: 1.5 MB without a space is still over the limit.
    dots = "a." * 750_000
    answer = httpx.post(server.base_url + PATH, json=_rouge_body([(dots, "a")]), timeout=60)
    assert answer.status_code == 400 and "rouge_input.instances[0].prediction" in answer.text

    half = "a " * (WORK_LIMITS.max_tokens_per_instance // 2 - 10)
    pairs = [(half, half)] * (WORK_LIMITS.max_tokens_per_request // (2 * len(half) // 2) + 1)
    answer = httpx.post(server.base_url + PATH, json=_rouge_body(pairs), timeout=600)
    assert answer.status_code == 400, answer.text[:300]
    assert "500,000 tokens, the limit per request" in answer.text


def test_instances_per_request_are_limited(server: CliServe) -> None:
    pairs = [("a", "a")] * (WORK_LIMITS.max_instances_per_request + 1)
    answer = httpx.post(server.base_url + PATH, json=_rouge_body(pairs), timeout=60)
    assert answer.status_code == 400
    assert "rouge_input.instances" in answer.text and "1,000 per request" in answer.text


def test_cpu_budget_stops_rouge_lsum_inside_its_sentence_pairs() -> None:
    """12,000 one-word lines on each side: 144 million sentence pairs, under the token
    limits; the budget stops it inside the metric, answered 400 naming the limit."""
    rng = random.Random(5)
    lines = [(_text(rng, 12_000, "\n"), _text(rng, 12_000, "\n"))]
    with pytest.raises(InvalidArgument) as caught:
        evaluate_instances(_rouge_body(lines, "rougeLsum"), WorkLimits(cpu_seconds_per_request=0.5))
    assert "over 0.5 CPU seconds, the limit per request" in str(caught.value)
    assert "cannot score" not in str(caught.value)


def test_count_is_at_least_every_metric_s_tokens() -> None:
    from assay.metrics.bleu import tokenize_13a
    from assay.metrics.rouge import rouge_tokens
    from assay.service.settings import count_tokens

    rng = random.Random(9)
    alphabet = "ab1 .,-_'\"\n\téK日本"
    for _ in range(2_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        counted = count_tokens(text)
        assert counted >= len(rouge_tokens(text, use_stemmer=False)), text
        assert counted >= len(tokenize_13a(text)), text


def test_a_judge_prompt_repeating_a_long_variable_is_refused_before_it_is_built() -> None:
    """`{response}` 100,000 times over a 1,000-word response would be a 500 MB prompt."""
    from assay.service.context import ServiceContext
    from assay.service.wire import vertex_judged
    from assay.store import Store

    instance = json.dumps({"response": "word " * 1_000})
    body = {
        "metricSpec": {"metricPromptTemplate": "Rate {response}" * 100_000},
        "instance": {"jsonInstance": instance},
    }
    with Store.open("sqlite://") as store:
        ctx = ServiceContext(store=store, judge_model="openai:judge-1")
        with pytest.raises(InvalidArgument) as caught:
            asyncio.run(vertex_judged.evaluate(ctx, vertex_judged.POINTWISE, body))
        assert "pointwise_metric_input.metric_spec.metric_prompt_template" in str(
            caught.value.payload()
        )
        assert "over 50,000 tokens, the limit per instance" in str(caught.value)
        many = {
            "metrics": [{"llmBasedMetricSpec": {"metricPromptTemplate": "{response}"}}] * 1_001,
            "instance": {"response": {"text": "ok"}},
        }
        with pytest.raises(InvalidArgument, match="1,001 metrics, over the limit"):
            asyncio.run(vertex_judged.evaluate_metrics(ctx, many))


_words = st.lists(st.sampled_from(["a", "b.", "cat", "x1", "-", "é", "\n", "日本", "a.a"]))


@settings(max_examples=150, deadline=None)
@given(
    pairs=st.lists(st.tuples(_words, _words), min_size=1, max_size=4),
    kind=st.sampled_from(["rouge1", "rougeL", "rougeLsum"]),
    per_instance=st.integers(1, 40),
    per_request=st.integers(1, 80),
)
def test_every_request_is_scored_exactly_or_refused_naming_a_limit(
    pairs: list[tuple[list[str], list[str]]], kind: str, per_instance: int, per_request: int
) -> None:
    texts = [(" ".join(p), " ".join(r)) for p, r in pairs]
    limits = WorkLimits(max_tokens_per_instance=per_instance, max_tokens_per_request=per_request)
    try:
        answer = evaluate_instances(_rouge_body(texts, kind), limits)
    except InvalidArgument as exc:
        assert "the limit per" in str(exc), exc
        return
    scores = [v["score"] for v in answer["rougeResults"]["rougeMetricValues"]]
    assert scores == [rouge(r, p, kind).fmeasure for p, r in texts]  # type: ignore[arg-type]
