"""Pairwise judging in both orders: which of two answers is better, asked twice.

A pairwise judge sees answer A and answer B; many judges favour one position whatever
the answers say. `both_orders` asks with the two answers in one order, then the other,
and reconciles: when both orders pick the same answer (by content), that answer wins;
when they pick the same *position* (A both times, or B both times), the verdict
followed the position, not the content, and the pair counts as a tie
(`PairVerdict.follows_position`). A tie in one order and a pick in the other is a tie.

`PAIRWISE_METRIC` names the criterion (`assay judge probe --metric pairwise_preference`);
the prompt's tags (`<request>`, `<reference>`, `<answer_a>`, `<answer_b>`) are what the
stand-in judges of `assay.testing.standin_judges` read.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

#: the pairwise criterion's name
PAIRWISE_METRIC = "pairwise_preference"
#: the prompt's template id (part of the judge cache key)
PROMPT_VERSION = "pairwise_preference.v1"

Position = Literal["A", "B", "tie"]
Winner = Literal["first", "second", "tie"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "winner": {"type": "string", "enum": ["A", "B", "tie"]},
    },
    "required": ["reasoning", "winner"],
    "additionalProperties": False,
}

SYSTEM = (
    "You compare two answers an AI agent could give to the same request and say which one"
    " answers it better: more correct, more complete and more helpful. Judge the content"
    " only: the order in which the answers are shown and their length do not matter."
    " When a reference answer is given, prefer the answer that agrees with it."
    ' Reply with one JSON object and nothing else: {"reasoning": "<one or two sentences>",'
    ' "winner": "A" or "B" or "tie"}'
)


class PairJudge(Protocol):
    """What `both_orders` needs of a judge (`assay.judges.Judge` is one)."""

    async def generate(
        self,
        messages: Sequence[Mapping[str, object]],
        n: int,
        settings: Mapping[str, object],
        *,
        accept: Any = None,
        prompt_version: str | None = None,
    ) -> list[str]: ...


def pairwise_messages(
    request: str,
    answer_a: str,
    answer_b: str,
    reference: str | None = None,
    criteria: str | None = None,
) -> list[dict[str, str]]:
    """The chat messages asking which of `answer_a` / `answer_b` is better (by
    `criteria`, when given, instead of the default correctness and helpfulness)."""
    parts = [f"<request>\n{request}\n</request>"]
    if criteria:
        parts.append(f"<criteria>\n{criteria}\n</criteria>")
    if reference:
        parts.append(f"<reference>\n{reference}\n</reference>")
    parts.append(f"<answer_a>\n{answer_a}\n</answer_a>")
    parts.append(f"<answer_b>\n{answer_b}\n</answer_b>")
    ask = "by the criteria" if criteria else ""
    parts.append(f"Which answer is better{' ' + ask if ask else ''}? Reply with the JSON object.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


_CHOICES: dict[str, Position] = {
    "a": "A",
    "answer a": "A",
    "answer_a": "A",
    "b": "B",
    "answer b": "B",
    "answer_b": "B",
    "tie": "tie",
    "same": "tie",
    "equal": "tie",
    "both": "tie",
}


def parse_choice(reply: str) -> Position | None:
    """A/B/tie from a judge's reply: a JSON object's `winner` (or `choice`,
    `preference`, `verdict`), or a bare `A` / `B` / `tie`; None when there is none."""
    text = reply.strip()
    fenced = re.search(r"\{.*\}", text, re.DOTALL)
    if fenced is not None:
        try:
            obj = json.loads(fenced.group(0))
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            for key in ("winner", "choice", "preference", "verdict", "better"):
                value = obj.get(key)
                if isinstance(value, str):
                    return _CHOICES.get(" ".join(value.lower().split()))
            return None
    return _CHOICES.get(" ".join(text.lower().strip(" .\"'*`").split()))


def vote_positions(choices: Sequence[Position | None]) -> Position | None:
    """The most frequent choice among parsed samples; a tie between choices is "tie"."""
    counts = Counter(c for c in choices if c is not None)
    if not counts:
        return None
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return "tie"
    return ranked[0][0]


@dataclass(frozen=True, slots=True)
class PairVerdict:
    """Both orders of one pair: (first, second) shown as A/B, then as B/A."""

    #: the judge's choice with `first` shown as A (None: no parseable reply)
    forward: Position | None
    #: the judge's choice with `second` shown as A
    backward: Position | None

    @property
    def decided(self) -> bool:
        return self.forward is not None and self.backward is not None

    @property
    def follows_position(self) -> bool:
        """Both orders picked the same position (A twice or B twice): the verdict went
        with where an answer was shown, not with what it said."""
        return self.decided and self.forward == self.backward and self.forward != "tie"

    @property
    def winner(self) -> Winner | None:
        """The reconciled verdict on content: first, second, or tie (None: undecided)."""
        if not self.decided:
            return None
        forward = {"A": "first", "B": "second"}.get(self.forward or "", "tie")
        backward = {"A": "second", "B": "first"}.get(self.backward or "", "tie")
        if forward == backward and forward != "tie":
            return "first" if forward == "first" else "second"
        return "tie"

    @property
    def first_shown_wins(self) -> int:
        """How many of the two orders picked the answer shown first (0, 1 or 2)."""
        return int(self.forward == "A") + int(self.backward == "A")

    def to_dict(self) -> dict[str, Any]:
        return {
            "forward": self.forward,
            "backward": self.backward,
            "winner": self.winner,
            "follows_position": self.follows_position,
        }


async def ask_order(
    judge: PairJudge,
    request: str,
    answer_a: str,
    answer_b: str,
    *,
    reference: str | None = None,
    samples: int = 1,
    settings: Mapping[str, object] | None = None,
) -> Position | None:
    """One order: the judge's majority choice over `samples` replies (None: none parsed)."""
    chosen: dict[str, object] = {"json_schema": SCHEMA, **(settings or {})}
    replies = await judge.generate(
        pairwise_messages(request, answer_a, answer_b, reference),
        samples,
        chosen,
        accept=lambda text: parse_choice(text) is not None,
        prompt_version=PROMPT_VERSION,
    )
    return vote_positions([parse_choice(r) for r in replies])


async def both_orders(
    judge: PairJudge,
    request: str,
    first: str,
    second: str,
    *,
    reference: str | None = None,
    samples: int = 1,
    settings: Mapping[str, object] | None = None,
) -> PairVerdict:
    """Ask which of `first` / `second` is better in both orders, concurrently, and
    return both choices (`PairVerdict.winner` reconciles them). A judge call that
    fails raises the judge's error (`JudgeCallError`)."""
    forward, backward = await asyncio.gather(
        ask_order(
            judge, request, first, second, reference=reference, samples=samples, settings=settings
        ),
        ask_order(
            judge, request, second, first, reference=reference, samples=samples, settings=settings
        ),
    )
    return PairVerdict(forward, backward)


# -------------------------------------------------- with the judge's explanations (#37)


def parse_explanation(reply: str) -> str:
    """The judge's reasoning from its reply (`reasoning` or `explanation` of its JSON
    object; the reply itself, trimmed, when it has none)."""
    found = re.search(r"\{.*\}", reply, re.DOTALL)
    if found is not None:
        try:
            obj = json.loads(found.group(0))
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            for key in ("reasoning", "explanation", "rationale"):
                value = obj.get(key)
                if isinstance(value, str):
                    return value.strip()
    return reply.strip()[:500]


@dataclass(frozen=True, slots=True)
class OrderAnswer:
    """One order's replies: each sample's parsed choice and explanation."""

    choices: tuple[Position | None, ...]
    explanations: tuple[str, ...]

    @property
    def choice(self) -> Position | None:
        return vote_positions(self.choices)


@dataclass(frozen=True, slots=True)
class PairJudgement:
    """Both orders of one pair with what the judge said (`verdict` reconciles them)."""

    forward: OrderAnswer
    backward: OrderAnswer

    @property
    def verdict(self) -> PairVerdict:
        return PairVerdict(self.forward.choice, self.backward.choice)

    @property
    def confidence(self) -> float | None:
        """The share of every parsed reply (both orders, every sample) that agrees, on
        content, with the reconciled verdict: 1.0 when all do, 0.0 for a pair whose
        two orders contradict each other (None: undecided)."""
        winner = self.verdict.winner
        if winner is None:
            return None
        said = [{"A": "first", "B": "second"}.get(c or "", "tie")
                for c in self.forward.choices if c is not None]  # fmt: skip
        said += [{"A": "second", "B": "first"}.get(c or "", "tie")
                 for c in self.backward.choices if c is not None]  # fmt: skip
        return sum(1 for s in said if s == winner) / len(said) if said else None


async def ask_order_explained(
    judge: PairJudge,
    request: str,
    answer_a: str,
    answer_b: str,
    *,
    reference: str | None = None,
    criteria: str | None = None,
    samples: int = 1,
    prompt_version: str = PROMPT_VERSION,
) -> OrderAnswer:
    """One order, keeping each sample's choice and explanation."""
    replies = await judge.generate(
        pairwise_messages(request, answer_a, answer_b, reference, criteria),
        samples,
        {"json_schema": SCHEMA},
        accept=lambda text: parse_choice(text) is not None,
        prompt_version=prompt_version,
    )
    return OrderAnswer(
        tuple(parse_choice(r) for r in replies), tuple(parse_explanation(r) for r in replies)
    )


async def judge_pair(
    judge: PairJudge,
    request: str,
    first: str,
    second: str,
    *,
    reference: str | None = None,
    criteria: str | None = None,
    samples: int = 1,
    prompt_version: str = PROMPT_VERSION,
) -> PairJudgement:
    """`both_orders` with the judge's explanations and the criteria it judges by.
    Without `criteria` the prompts (and so the cached replies) are `both_orders`'."""
    forward, backward = await asyncio.gather(
        ask_order_explained(judge, request, first, second, reference=reference,
                            criteria=criteria, samples=samples, prompt_version=prompt_version),
        ask_order_explained(judge, request, second, first, reference=reference,
                            criteria=criteria, samples=samples, prompt_version=prompt_version),
    )  # fmt: skip
    return PairJudgement(forward, backward)
