"""Asking a judge for samples, and the agreement details every judged metric reports.

A judge call either returns its samples or fails; a failure (a `JudgeCallError` after
the client's retries, or anything a client raises) becomes the error text of a score
that is absent, never a crash of the case. Replies are requested as JSON objects: the
schema goes to the judge in the settings (`json_schema`), so backends with structured
output constrain the reply, and the rest are parsed tolerantly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.core.results import Score
from assay.judges.types import JudgeModelOptions
from assay.metrics.judged.base import JudgeClient
from assay.metrics.judged.parsing import (
    field,
    labelled_value,
    parse_choice,
    parse_json_object,
    parse_yes_no,
)
from assay.metrics.judged.prompts import RenderedPrompt
from assay.metrics.judged.voting import Vote, binary_vote
from assay.metrics.sample_split import sample_scores_detail
from assay.metrics.stats import mean
from assay.models.cost import BudgetReached

#: how the error text of a judge call that failed begins
JUDGE_CALL_FAILED = "judge call failed"


@dataclass(frozen=True, slots=True)
class Replies:
    """The samples of one judge call, or why there are none."""

    texts: list[str]
    error: str | None = None


def settings_for(
    options: JudgeModelOptions, schema: Mapping[str, object], *, temperature: float | None = None
) -> dict[str, Any]:
    """Generation settings asking for a JSON object of `schema`.

    `temperature` overrides the configured one (None keeps it; the backend's default
    applies when neither is set).
    """
    settings: dict[str, Any] = {"json_schema": dict(schema)}
    chosen = temperature if temperature is not None else options.temperature
    if chosen is not None:
        settings["temperature"] = chosen
    return settings


async def ask(
    judge: JudgeClient,
    messages: Sequence[Mapping[str, object]],
    n: int,
    settings: Mapping[str, object],
    *,
    parse: Callable[[str], object] | None = None,
    prompt_version: str | None = None,
    every_sample: bool = False,
) -> Replies:
    """`n` samples of the judge's reply to `messages`; a failed call gives the error.

    `parse` is the metric's reply parser (None meaning unparseable): the judge caches
    only replies it parses. `prompt_version` is the prompt template's id, taken from
    `messages` when they were rendered from a template (`RenderedPrompt`).
    `every_sample`: a sample that failed (the judge returned fewer than `n`) fails the
    whole call, as ADK's LLM-as-judge evaluators leave an invocation unscored when any
    of its samples raised; otherwise the samples that came back are used.
    """
    if prompt_version is None and isinstance(messages, RenderedPrompt):
        prompt_version = messages.prompt_version

    def accept(text: str) -> bool:
        return parse is None or parse(text) is not None

    try:
        texts = await judge.generate(
            messages, n, settings, accept=accept, prompt_version=prompt_version
        )
    except BudgetReached as exc:  # the cap, not the judge: its reason as it stands
        return Replies([], str(exc))
    except Exception as exc:  # any judge failure leaves the score absent, with its text
        text = str(exc) or type(exc).__name__
        return Replies([], f"{JUDGE_CALL_FAILED}: {text}")
    if not texts:
        return Replies([], f"{JUDGE_CALL_FAILED}: the judge returned no sample")
    if every_sample and len(texts) < n:
        failed = n - len(texts)
        return Replies(
            [],
            f"{JUDGE_CALL_FAILED}: {failed} of {n} samples failed, and as in ADK an invocation"
            " with a failed sample is not scored from the others",
        )
    return Replies(list(texts))


def vote_details(vote: Vote[Any], samples: int) -> dict[str, Any]:
    """Agreement details of one vote: agreement, samples received, unparseable ones."""
    return {"agreement": vote.agreement, "samples": samples, "unparseable": vote.discarded}


#: how much of a judge's raw reply an unparseable-reply message quotes
RAW_REPLY_CHARS = 200


def schema_shape(schema: Mapping[str, object] | None) -> str:
    """A short picture of the JSON a schema asks for: `{"verdict": "valid"|"invalid"}`."""
    if schema is None:
        return "a JSON object"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "|".join(json.dumps(v) for v in enum)
    kind = schema.get("type")
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        inner = ", ".join(
            f"{json.dumps(name)}: {schema_shape(sub) if isinstance(sub, Mapping) else '?'}"
            for name, sub in properties.items()
        )
        return "{" + inner + "}"
    if kind == "array":
        items = schema.get("items")
        return "[" + (schema_shape(items) if isinstance(items, Mapping) else "...") + ", ...]"
    return str(kind or "any")


def no_parse_reason(replies: Sequence[str], schema: Mapping[str, object] | None = None) -> str:
    """Why no sample counted: how many were unparseable, what the metric expected and
    what the judge said (its first reply, truncated), so a wrong judge is seen at once."""
    count = len(replies)
    reason = f"no judge reply could be parsed ({count} of {count} samples unparseable)"
    reason += f"; expected {schema_shape(schema)}"
    if replies:
        raw = replies[0]
        shown = raw if len(raw) <= RAW_REPLY_CHARS else raw[:RAW_REPLY_CHARS] + "…"
        reason += f"; the judge replied {json.dumps(shown, ensure_ascii=False)}"
        if len(raw) > RAW_REPLY_CHARS:
            reason += f" ({len(raw):,} characters)"
    return reason


def case_details(per: Sequence[Score]) -> dict[str, Any]:
    """Case-level agreement: mean of the invocations' agreement, unparseable samples summed."""
    agreements = [s.details["agreement"] for s in per if s.details.get("agreement") is not None]
    unparseable = sum(int(s.details.get("unparseable", 0)) for s in per)
    return {"agreement": mean(agreements), "unparseable_samples": unparseable}


def majority_rationale(
    rationales: Sequence[str | None], labels: Sequence[object], winner: object
) -> str | None:
    """The rationale of the first sample that agrees with the outcome of the vote."""
    for rationale, label in zip(rationales, labels, strict=True):
        if label == winner and rationale:
            return rationale
    return None


def verdict_schema(labels: tuple[str, str], **extra: object) -> dict[str, Any]:
    """A `{reasoning, ...extra, verdict}` reply schema; the verdict is one of `labels`."""
    properties: dict[str, Any] = {"reasoning": {"type": "string"}, **extra}
    properties["verdict"] = {"type": "string", "enum": list(labels)}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _positive(value: object, labels: tuple[str, str]) -> bool | None:
    """True for labels[0], False for labels[1]; yes/no spellings accepted too."""
    choice = parse_choice(value, labels)
    if choice is not None:
        return choice == labels[0]
    return parse_yes_no(value)


def _text(value: object) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


async def binary_verdict(
    judge: JudgeClient,
    messages: Sequence[Mapping[str, object]],
    schema: Mapping[str, object],
    labels: tuple[str, str],
    *,
    options: JudgeModelOptions,
    num_samples: int,
    extra: Callable[[list[dict[str, Any] | None]], dict[str, Any]] | None = None,
    keys: Sequence[str] = ("verdict", "label", "rating"),
    every_sample: bool = False,
    reader: Callable[[str], tuple[bool, bool | None]] | None = None,
) -> Score:
    """Sample a `{reasoning, verdict}` judge and vote: 1.0 for labels[0] (the positive
    label), 0.0 for labels[1]; a tie is negative.

    The explanation is the reasoning of the first sample agreeing with the outcome;
    details hold `verdict`, `agreement`, `samples`, `unparseable` and whatever `extra`
    draws from the replies that agree with the outcome. `keys` are the reply fields
    that may hold the verdict, in order. `reader` reads a reply in another layout
    first (ADK's, see `adk_labels`): when it says the reply is in that layout, its
    verdict stands. `every_sample` is `ask`'s.
    """

    def parse(text: str) -> bool | None:
        if reader is not None:
            recognised, verdict = reader(text)
            if recognised:
                return verdict
        return _positive(labelled_value(text, *keys), labels)

    replies = await ask(
        judge,
        messages,
        num_samples,
        settings_for(options, schema),
        parse=parse,
        every_sample=every_sample,
    )
    if replies.error is not None:
        return Score(None, replies.error)
    objs = [parse_json_object(text) for text in replies.texts]
    votes = [parse(text) for text in replies.texts]
    vote = binary_vote(votes)
    details = vote_details(vote, len(votes))
    if vote.label is None:
        return Score(None, no_parse_reason(replies.texts, schema), details)
    details.update(sample_scores_detail(None if v is None else float(v) for v in votes))
    details["verdict"] = labels[0] if vote.label else labels[1]
    if extra is not None:
        details.update(extra([o for o, v in zip(objs, votes, strict=True) if v == vote.label]))
    reasons = [_text(field(obj, "reasoning", "rationale", "reason")) for obj in objs]
    explanation = majority_rationale(reasons, votes, vote.label)
    return Score(1.0 if vote.label else 0.0, explanation, details)
