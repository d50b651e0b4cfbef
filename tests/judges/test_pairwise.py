"""Pairwise judging in both orders (`assay.judges.pairwise`), against the stand-ins."""

from __future__ import annotations

import asyncio
import json

import pytest

from assay.judges.client import JudgePool
from assay.judges.pairwise import PairVerdict, both_orders, parse_choice, vote_positions
from assay.judges.types import JudgeModelOptions
from assay.testing import JudgeServer
from assay.testing.standin_judges import fair, first_shown

REQUEST = "What is the capital of Australia?"
RIGHT = "Canberra is the capital of Australia."
WRONG = "Sydney."


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


async def _verdict(server: JudgeServer, first: str, second: str) -> PairVerdict:
    pool = JudgePool(default_model="openai:standin", use_cache=False)
    try:
        judge = pool.judge("openai:standin", JudgeModelOptions(base_url=server.openai_base_url))
        return await both_orders(
            judge, REQUEST, first, second, reference="The capital is Canberra."
        )
    finally:
        await pool.aclose()


def test_a_fair_judge_picks_the_same_answer_in_both_orders() -> None:
    with JudgeServer(fair) as server:
        verdict = asyncio.run(_verdict(server, RIGHT, WRONG))
        swapped = asyncio.run(_verdict(server, WRONG, RIGHT))
        prompts = [r.user for r in server.requests]
    assert (verdict.forward, verdict.backward) == ("A", "B")
    assert verdict.winner == "first" and not verdict.follows_position
    assert swapped.winner == "second" and not swapped.follows_position
    # Both orders were really asked: the first-shown answer is A in one, B in the other.
    shown_first = [p.index(RIGHT) < p.index(WRONG) for p in prompts[:2]]
    assert sorted(shown_first) == [False, True]
    assert all("<answer_a>" in p and "<reference>" in p for p in prompts)


def test_a_first_shown_judge_follows_the_position_and_the_pair_is_a_tie() -> None:
    with JudgeServer(first_shown) as server:
        verdict = asyncio.run(_verdict(server, RIGHT, WRONG))
    assert (verdict.forward, verdict.backward) == ("A", "A")
    assert verdict.follows_position and verdict.winner == "tie"
    assert verdict.first_shown_wins == 2
    assert verdict.to_dict() == {
        "forward": "A",
        "backward": "A",
        "winner": "tie",
        "follows_position": True,
    }


def test_an_unparseable_order_leaves_the_pair_undecided() -> None:
    with JudgeServer("I cannot decide") as server:
        verdict = asyncio.run(_verdict(server, RIGHT, WRONG))
    assert verdict.forward is None and not verdict.decided
    assert verdict.winner is None and not verdict.follows_position


@pytest.mark.parametrize(
    ("reply", "choice"),
    [
        (json.dumps({"reasoning": "x", "winner": "A"}), "A"),
        ('```json\n{"winner": "b"}\n```', "B"),
        (json.dumps({"choice": "Tie"}), "tie"),
        ("A", "A"),
        (" answer b. ", "B"),
        (json.dumps({"winner": "C"}), None),
        ("{not json", None),
        ("both are fine", None),
    ],
)
def test_parse_choice(reply: str, choice: str | None) -> None:
    assert parse_choice(reply) == choice


def test_vote_positions() -> None:
    assert vote_positions(["A", "A", "B"]) == "A"
    assert vote_positions(["A", "B"]) == "tie"
    assert vote_positions([None, "B"]) == "B"
    assert vote_positions([None]) is None
