"""The stand-in judges with known flaws (`assay.testing.standin_judges`): their replies
parse as assay's metrics read them, and each flaw is the one it claims."""

from __future__ import annotations

import json
from typing import Any

from assay.core.cases import Rubric
from assay.judges.pairwise import SCHEMA as PAIR_SCHEMA
from assay.judges.pairwise import pairwise_messages, parse_choice
from assay.metrics.judged.asking import verdict_schema
from assay.metrics.judged.rubrics import parse_rubric_reply, rubric_schema
from assay.testing.judge_dialects import StandinRequest
from assay.testing.standin_judges import (
    LONG_RESPONSE,
    fair,
    first_shown,
    length_loving,
    seeded_coin,
    verdict_instance,
)


def request(user: str, schema: dict[str, Any] | None = None) -> StandinRequest:
    return StandinRequest(
        dialect="openai",
        path="/v1/chat/completions",
        model="standin",
        body={},
        headers={},
        messages=({"role": "user", "content": user},),
        json_schema=schema,
    )


def pointwise(response: str, reference: str = "Canberra") -> str:
    return (
        f"<reference_response>\n{reference}\n</reference_response>\n"
        f"<agent_response>\n{response}\n</agent_response>"
    )


VALIDITY = verdict_schema(("valid", "invalid"))


def verdict(reply_text: str) -> str:
    return str(json.loads(reply_text)["verdict"])


def test_verdict_instances_follow_the_schema_with_the_chosen_verdict() -> None:
    assert verdict_instance(VALIDITY, True)["verdict"] == "valid"
    assert verdict_instance(VALIDITY, False)["verdict"] == "invalid"
    rubrics = [Rubric(id="r1", text="one"), Rubric(id="r2", text="two")]
    for positive, word in ((True, True), (False, False)):
        reply = json.dumps(verdict_instance(rubric_schema(rubrics), positive))
        parsed = parse_rubric_reply(reply, rubrics)
        assert parsed is not None and set(parsed) == {"r1", "r2"}  # one entry per rubric id
        assert all(entries[0][0] is word for entries in parsed.values())
    assert verdict_instance({"type": "integer", "minimum": 1, "maximum": 5}, True) == 5
    assert verdict_instance({"type": "integer", "minimum": 1, "maximum": 5}, False) == 1


def test_fair_judges_containment_and_ignores_padding_and_order() -> None:
    assert verdict(fair(request(pointwise("It is Canberra."), VALIDITY)).text or "") == "valid"
    assert verdict(fair(request(pointwise("Sydney."), VALIDITY)).text or "") == "invalid"
    padded = "Sydney." + " I hope this helps." * 20
    assert verdict(fair(request(pointwise(padded), VALIDITY)).text or "") == "invalid"
    ab = pairwise_messages("q", "Canberra it is", "Sydney", reference="Canberra")[1]["content"]
    ba = pairwise_messages("q", "Sydney", "Canberra it is", reference="Canberra")[1]["content"]
    assert parse_choice(fair(request(ab, PAIR_SCHEMA)).text or "") == "A"
    assert parse_choice(fair(request(ba, PAIR_SCHEMA)).text or "") == "B"


def test_first_shown_always_prefers_answer_a() -> None:
    ba = pairwise_messages("q", "Sydney", "Canberra", reference="Canberra")[1]["content"]
    assert parse_choice(first_shown(request(ba, PAIR_SCHEMA)).text or "") == "A"
    # A pointwise prompt gets the fair verdict.
    assert verdict(first_shown(request(pointwise("Sydney."), VALIDITY)).text or "") == "invalid"


def test_length_loving_passes_any_long_answer() -> None:
    long = "Sydney. " + "x" * LONG_RESPONSE
    assert verdict(length_loving(request(pointwise(long), VALIDITY)).text or "") == "valid"
    assert verdict(length_loving(request(pointwise("Sydney."), VALIDITY)).text or "") == "invalid"


def test_a_seeded_coin_is_reproducible_and_answers_both_ways() -> None:
    first, second = seeded_coin(4), seeded_coin(4)
    a = [verdict(first(request(pointwise("x"), VALIDITY)).text or "") for _ in range(40)]
    b = [verdict(second(request(pointwise("x"), VALIDITY)).text or "") for _ in range(40)]
    assert a == b and set(a) == {"valid", "invalid"}
    # Without a schema it answers a bare yes / no.
    assert first(request("anything")).text in ("yes", "no")
