"""Yes/no judging with Databricks' output names, shared by the built-in Databricks
judges (`databricks.py`) and the custom judges (`custom_judge.py`).

A verdict is a majority vote over `num_samples` judge replies (tie = `no`, unparseable
replies left out), asked for as a JSON object `{rationale, rating}` through the
`json_schema` setting and parsed tolerantly (a bare `yes` / `no` also counts). Each
verdict reports `agreement` (share of parsed samples agreeing with the outcome),
`samples` and `unparseable`; the case result the mean agreement. A failed judge call
leaves the row without a score, the error text kept for `error_message`.

What the judges read: the request is the turn's user input; the expected answer is
`expected_facts` when a single-turn case has some, else the reference turn's response
(a CES expected agent response first), else the case's `expected_response` for
single-turn cases. Per-chunk judges need every chunk judged for a precision: when one
could not be (its judge call failed, or it has no content) the row has no precision
rather than a guessed one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay.core.cases import Chunk, EvalCase, Turn
from assay.core.results import MetricResult, Score
from assay.metrics.judged.asking import (
    ask,
    case_details,
    majority_rationale,
    no_parse_reason,
    settings_for,
    vote_details,
)
from assay.metrics.judged.base import JudgeClient, JudgedMetric
from assay.metrics.judged.context import NO_PROMPT, user_prompt_text
from assay.metrics.judged.parsing import field as get_field
from assay.metrics.judged.parsing import parse_json_object, parse_yes_no
from assay.metrics.judged.voting import binary_vote
from assay.metrics.sample_split import sample_scores_detail
from assay.metrics.stats import mean

#: what every yes/no judge is asked to reply (rationale first: reasoning before verdict)
YES_NO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rationale": {"type": "string"},
        "rating": {"type": "string", "enum": ["yes", "no"]},
    },
    "required": ["rationale", "rating"],
    "additionalProperties": False,
}

Messages = list[dict[str, str]]


def rating_of(value: float | None) -> str | None:
    """The Databricks rating for a yes/no score (None when there is no score)."""
    if value is None:
        return None
    return "yes" if value >= 1.0 else "no"


# -- one voted yes/no verdict ----------------------------------------------------------------


@dataclass(frozen=True)
class YesNo:
    """A yes/no verdict voted over judge samples; `label` None with `error` saying why."""

    label: bool | None
    rationale: str | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def rating(self) -> str | None:
        return None if self.label is None else ("yes" if self.label else "no")

    def score(self) -> Score:
        if self.label is None:
            return Score(None, self.error, dict(self.details))
        return Score(1.0 if self.label else 0.0, self.rationale, dict(self.details))


def parse_rating(reply: str) -> tuple[bool | None, str | None]:
    """(verdict, rationale) of one reply: a JSON object, or a bare `yes` / `no`."""
    obj = parse_json_object(reply)
    if obj is None:
        return parse_yes_no(reply.strip()), None
    rationale = get_field(obj, "rationale", "reasoning", "explanation")
    verdict = parse_yes_no(get_field(obj, "rating", "verdict", "answer", "result"))
    return verdict, rationale if isinstance(rationale, str) and rationale.strip() else None


async def ask_yes_no(metric: JudgedMetric, judge: JudgeClient, messages: Messages) -> YesNo:
    """Sample the judge `metric.num_samples` times and vote (tie = no)."""
    settings = settings_for(metric.judge_options, YES_NO_SCHEMA)
    replies = await ask(
        judge, messages, metric.num_samples, settings, parse=lambda text: parse_rating(text)[0]
    )
    if replies.error is not None:
        return YesNo(None, error=replies.error)
    parsed = [parse_rating(text) for text in replies.texts]
    labels = [label for label, _ in parsed]
    vote = binary_vote(labels)
    details = vote_details(vote, len(replies.texts))
    if vote.label is None:
        return YesNo(None, error=no_parse_reason(replies.texts, YES_NO_SCHEMA), details=details)
    details.update(sample_scores_detail(None if v is None else float(v) for v in labels))
    rationale = majority_rationale([r for _, r in parsed], labels, vote.label)
    return YesNo(vote.label, rationale, details=details)


def merged_details(verdicts: Sequence[YesNo]) -> dict[str, Any]:
    """Agreement details of several votes: mean agreement, samples and unparseable summed."""
    agreements = [
        v.details["agreement"] for v in verdicts if v.details.get("agreement") is not None
    ]
    return {
        "agreement": mean(agreements),
        "samples": sum(int(v.details.get("samples", 0)) for v in verdicts),
        "unparseable": sum(int(v.details.get("unparseable", 0)) for v in verdicts),
    }


# -- what the judges read --------------------------------------------------------------------


def request_of(actual: Turn, expected: Turn | None) -> str | None:
    """The user's request of the turn (the reference turn's when the actual lost it)."""
    for turn in (actual, expected):
        if turn is not None:
            text = user_prompt_text(turn.user_input)
            if text != NO_PROMPT:
                return text
    return None


def single_turn(case: EvalCase) -> bool:
    """A one-row case, where case-level expectations describe its only invocation."""
    return case.scenario is None and len(case.user_turns()) <= 1


def expected_response_of(expected: Turn | None, case: EvalCase) -> str | None:
    """The expected answer of an invocation: CES expected agent responses, the
    reference turn's response, or the case's `expected_response` (single-turn only)."""
    if expected is not None:
        wanted = [e.agent_response for e in expected.expectations if e.agent_response]
        if wanted:
            return "\n".join(w for w in wanted if w)
        if expected.final_response:
            return expected.final_response
    return case.expected_response if single_turn(case) and case.expected_response else None


def expected_of(expected: Turn | None, case: EvalCase) -> tuple[str, str] | None:
    """(kind, text) of what the answer must contain: expected facts first, else the
    expected response; None when the case gives neither."""
    facts = [f for f in (case.expected_facts or []) if f.strip()] if single_turn(case) else []
    if facts:
        return "a list of facts", "\n".join(f"- {f}" for f in facts)
    response = expected_response_of(expected, case)
    if response is not None:
        return "a reference answer", response
    return None


def render_chunk(chunk: Chunk) -> str:
    source = f"(source: {chunk.doc_uri})\n" if chunk.doc_uri else ""
    return f"{source}{chunk.content or ''}"


def render_chunks(chunks: Sequence[Chunk]) -> str:
    return "\n\n".join(f"[chunk {i}] {render_chunk(c)}" for i, c in enumerate(chunks, 1))


# -- output columns ---------------------------------------------------------------------------


def answer_columns(prefix: str, score: Score) -> dict[str, Any]:
    """`{prefix}/rating|rationale|error_message` of one row."""
    scored = score.value is not None
    return {
        f"{prefix}/rating": rating_of(score.value),
        f"{prefix}/rationale": score.explanation if scored else None,
        f"{prefix}/error_message": None if scored else score.explanation,
    }


CHUNK_KEYS = ("ratings", "rationales", "error_messages")


def chunk_columns(prefix: str, score: Score) -> dict[str, Any]:
    """`{prefix}/ratings|rationales|error_messages|precision` of one row."""
    cols = {f"{prefix}/{key}": score.details.get(key) for key in CHUNK_KEYS}
    cols[f"{prefix}/precision"] = score.value
    return cols


class VotedJudge(JudgedMetric):
    """A judged metric whose case result carries the mean agreement of its votes."""

    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    family: ClassVar[str] = "databricks"

    def result_from_invocations(self, per: list[Score]) -> MetricResult:
        result = super().result_from_invocations(per)
        result.details.update(case_details(per))
        return result


# -- per-chunk judging -----------------------------------------------------------------------


async def judge_chunks(
    metric: JudgedMetric,
    judge: JudgeClient,
    chunks: Sequence[Chunk],
    messages_for: Callable[[Chunk], Messages],
) -> Score:
    """One yes/no vote per chunk; score = precision, or none if a chunk was not judged."""

    async def one(chunk: Chunk) -> YesNo:
        if not (chunk.content or "").strip():
            return YesNo(None, error="the retrieved chunk has no content to judge")
        return await ask_yes_no(metric, judge, messages_for(chunk))

    verdicts = await asyncio.gather(*(one(c) for c in chunks))
    details: dict[str, Any] = {
        "ratings": [v.rating for v in verdicts],
        "rationales": [v.rationale for v in verdicts],
        "error_messages": [v.error for v in verdicts],
        **merged_details(verdicts),
    }
    failed = [v for v in verdicts if v.label is None]
    if failed:
        reason = (
            f"{len(failed)} of {len(verdicts)} retrieved chunks could not be judged,"
            f" so there is no precision: {failed[0].error}"
        )
        return Score(None, reason, details)
    relevant = sum(1 for v in verdicts if v.label)
    return Score(
        relevant / len(verdicts),
        f"{relevant} of {len(verdicts)} retrieved chunks rated yes",
        details,
    )
